"""Reading an Iceberg table as of a snapshot, the same way on every supported Spark line.

* Iceberg's Spark 4.1 runtime (1.12) refuses the read option ``snapshot-id``: "Time travel option
  `snapshot-id` is no longer supported, use Spark built-in `versionAsOf` instead".
* Spark 3.5's ``DataFrameReader.option("versionAsOf", …).table(…)`` silently ignores the option and reads
  the current snapshot.
* SQL ``VERSION AS OF <snapshot id>`` pins the snapshot on both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.runtime.spark.quoting import qualified

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def table_at(session: SparkSession, table: str, snapshot_id: int) -> DataFrame:
    """``table`` (``catalog.namespace.name``) as of ``snapshot_id``."""
    return session.sql(f"SELECT * FROM {qualified(table)} VERSION AS OF {int(snapshot_id)}")

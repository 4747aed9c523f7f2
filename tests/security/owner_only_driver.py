"""A notebook's work in a fresh ``MT_MAGIC_HOME``, as a user with the usual umask (022) does it, for
``test_owner_only``: the embedded catalog, a source written by Spark, a materialized table created (its first
refresh on Spark) and refreshed after an append (in process: pyiceberg writes the data files and manifests).
Prints one JSON line: the two refreshes' strategies.

    python tests/security/owner_only_driver.py
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from mt_magic.catalog.embedded import stop_embedded_server
from mt_magic.runtime.connection import ConnectionSettings, connect
from mt_magic.runtime.spark.session import SparkSettings
from mt_magic.runtime.status import RefreshRequest
from mt_magic.sql import parse_cell
from mt_magic.vocabulary import RefreshTrigger

CREATE = "CREATE MATERIALIZED TABLE proj FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, g, v FROM src WHERE k < 4"


def main() -> dict[str, str]:
    spark_settings = SparkSettings(master="local[1]", driver_memory="1g")
    conn = connect(ConnectionSettings(spark=spark_settings, start_manager=False))
    spark = conn.spark
    try:
        spark.sql("CREATE TABLE src (k INT, g STRING, v BIGINT) USING iceberg")
        spark.sql("INSERT INTO src SELECT CAST(id % 7 AS INT), concat('g', id % 3), id FROM range(40)")
        [statement] = parse_cell(CREATE)
        created = conn.service.execute(statement)
        first = created.refresh.result(timeout=600) if created.refresh is not None else None
        spark.sql("INSERT INTO src SELECT CAST(id % 7 AS INT), concat('g', id % 3), id FROM range(40, 60)")
        table = created.tables[0]
        second = conn.service.engine.refresh(
            RefreshRequest(table, RefreshTrigger.SCHEDULED, datetime.now(timezone.utc))
        )
        return {"first": getattr(first, "strategy", str(first)), "second": second.strategy}
    finally:
        conn.close()
        spark.stop()
        stop_embedded_server(Path(os.environ["MT_MAGIC_HOME"]))


if __name__ == "__main__":
    print(json.dumps(main()))

"""Known failures on one PySpark line, as precise xfail markers (imported by name, like shared_catalog).

Each marker names the failing statement and the fix; ``strict`` makes the marker itself fail once the fix
lands, so it cannot outlive the problem."""

from __future__ import annotations

import pyspark
import pytest
from pyspark.errors.exceptions.captured import IllegalArgumentException

SPARK_LINE = tuple(int(part) for part in pyspark.__version__.split(".")[:2])

snapshot_id_option_refused = pytest.mark.xfail(
    SPARK_LINE >= (4, 1),
    raises=IllegalArgumentException,
    strict=True,
    reason="Iceberg 1.12's Spark 4.1 runtime refuses spark.read.option('snapshot-id', …): 'Time travel option "
    "`snapshot-id` is no longer supported, use Spark built-in `versionAsOf` instead' (refresh/incremental/"
    "delta.py _append_delta, strategies.py current); fix: mt_magic.runtime.spark.time_travel.table_at",
)

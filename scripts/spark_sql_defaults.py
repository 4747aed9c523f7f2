"""Print the answer-changing Spark SQL settings' defaults of the installed PySpark, as
``mt_magic/runtime/spark/baselines.py`` records them (one baseline per measured Spark version).

    PYTHONPATH=$PWD .venv/bin/python scripts/spark_sql_defaults.py                 # PySpark 3.5.9
    PYTHONPATH=$PWD .venv-pyspark-4.1.4/bin/python scripts/spark_sql_defaults.py   # PySpark 4.1.4

A plain local session with no configuration, so each value is Spark's own default; the session time zone is left
out (its default is the JVM's zone, a machine's and not a Spark version's).
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from mt_magic.runtime.spark.baselines import UNFOLDED
from mt_magic.runtime.spark.semantics import captured_settings


def main() -> None:
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        defaults = {k: v for k, v in captured_settings(spark).items() if k not in UNFOLDED}
        print(f'"spark-{spark.version}": ' + json.dumps(dict(sorted(defaults.items())), indent=4) + ",")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

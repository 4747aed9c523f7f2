"""A driver for the standalone-cluster test and script: mt_magic's own ``connect()`` with nothing changed but
the master URL; prints one JSON line with the table's rows and which executors ran the refresh's jobs.

    python tests/cluster/cluster_driver.py spark://127.0.0.1:7077
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
from security_probes import assert_owner_only  # noqa: E402 - the security suite's probes, imported by name

from mt_magic.catalog.embedded import stop_embedded_server  # noqa: E402
from mt_magic.runtime.connection import ConnectionSettings, connect
from mt_magic.runtime.spark.jobs import job_group_prefix
from mt_magic.runtime.spark.session import SparkSettings
from mt_magic.runtime.spark.ui_auth import TOKEN_CONF
from mt_magic.sql import parse_cell

TABLE = "revenue"
CREATE = f"""CREATE MATERIALIZED TABLE {TABLE} FRESHNESS = INTERVAL '1' HOUR
AS SELECT customer, count(*) AS orders, sum(amount) AS total FROM orders GROUP BY customer"""


TOKEN: dict[str, str] = {}
"""The driver's web UI token (its pages admit the owner only: mt_magic.runtime.spark.ui_auth)."""


def _get(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN['ui']}"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as resp:
        return json.load(resp)


def refresh_tasks_by_executor(ui: str, app_id: str, group_prefix: str) -> dict[str, int]:
    """Executor id -> number of tasks, over the Spark jobs whose job group starts with ``group_prefix``
    (from the application's status REST API, the data behind the Spark UI's jobs page)."""
    api = f"{ui}/api/v1/applications/{app_id}"
    counts: dict[str, int] = {}
    for job in _get(f"{api}/jobs"):
        if not (job.get("jobGroup") or "").startswith(group_prefix):
            continue
        for stage_id in job["stageIds"]:
            for attempt in _get(f"{api}/stages/{stage_id}"):
                for task in _get(f"{api}/stages/{stage_id}/{attempt['attemptId']}/taskList?length=10000"):
                    counts[task["executorId"]] = counts.get(task["executorId"], 0) + 1
    return counts


def main(master: str) -> dict[str, Any]:
    extra = {"spark.executor.memory": "1g", "spark.pyspark.python": sys.executable}
    conn = connect(ConnectionSettings(spark=SparkSettings(master=master, ui=True, driver_memory="1g", extra=extra)))
    spark = conn.spark
    try:
        spark.sql("CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) USING iceberg")
        spark.sql("INSERT INTO orders VALUES (1, 'ann', 10.0), (2, 'bob', 5.5), (3, 'ann', 2.5), (4, 'cy', 1.0)")
        [statement] = parse_cell(CREATE)
        result = conn.service.execute(statement)
        assert result.refresh is not None
        result.refresh.result(timeout=600)
        rows = [list(r) for r in spark.sql(f"SELECT customer, orders, total FROM {TABLE} ORDER BY customer").collect()]
        qualified = result.tables[0]
        sc = spark.sparkContext
        ui = sc.uiWebUrl
        assert ui is not None
        TOKEN["ui"] = sc.getConf().get(TOKEN_CONF)
        executors = _get(f"{ui}/api/v1/applications/{sc.applicationId}/executors")
        assert_owner_only(ui, TOKEN["ui"], "/jobs/job/kill/")  # the driver's web UI, as others and as its owner
        return {
            "master": sc.master,
            "spark_version": spark.version,
            "rows": rows,
            "refresh_tasks_by_executor": refresh_tasks_by_executor(ui, sc.applicationId, job_group_prefix(qualified)),
            "executors": {e["id"]: e["hostPort"] for e in executors},
            "ui_owner_only": True,
        }
    finally:
        conn.close()
        spark.stop()
        stop_embedded_server(Path(os.environ["MT_MAGIC_HOME"]))


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))

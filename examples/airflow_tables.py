"""Two materialized tables refreshed by Apache Airflow, in a chain, and what Airflow says of them.

Start a local Airflow 3 (its own virtualenv, made by ``scripts/setup.sh --test``), then run this script with the
settings it prints::

    python -m mt_magic.scheduling.local_airflow            # leave it running; it prints the three settings
    MT_MAGIC_AIRFLOW_URL=http://127.0.0.1:8080 MT_MAGIC_AIRFLOW_USERNAME=mt_admin \\
        MT_MAGIC_AIRFLOW_PASSWORD_FILE=~/.mt_magic/airflow/passwords.json python examples/airflow_tables.py

It creates ``orders`` (a plain Iceberg table with sample rows), ``daily_revenue`` reading it and ``revenue_by_day``
reading ``daily_revenue``, both ``WITH ('scheduler' = 'airflow')``: Airflow runs ``daily_revenue``'s DAG at once,
and ``revenue_by_day``'s DAG on ``daily_revenue``'s Asset event (data-aware scheduling), each task a refresh on
Spark under the table's lease. The script waits for both runs and prints Airflow's view of each table (the card's
lines: last run, its log link, next run) and the rows. ``tests/airflow`` runs :func:`run` so it cannot rot.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.scheduling.airflow_runs import AirflowRunView

TABLES = ("daily_revenue", "revenue_by_day")
ON_AIRFLOW = "WITH ('scheduler' = 'airflow') FRESHNESS = INTERVAL '1' HOUR"
STATEMENTS = (
    f"CREATE MATERIALIZED TABLE daily_revenue {ON_AIRFLOW} "
    "AS SELECT day, region, sum(amount) AS revenue FROM orders GROUP BY day, region",
    f"CREATE MATERIALIZED TABLE revenue_by_day {ON_AIRFLOW} "
    "AS SELECT day, sum(revenue) AS revenue FROM daily_revenue GROUP BY day",
)


def run(service: MaterializedTables, timeout: float = 900, say: Callable[[str], None] = print) -> dict:
    """Create the source and the two tables in the service's namespace, wait until Airflow ran both, print what
    Airflow says of each.

    Returns:
        Each table's qualified name → Airflow's view of it after its run (:class:`AirflowRunView`).
    """
    from mt_magic.scheduling.airflow_runs import run_facts
    from mt_magic.sql import parse_cell

    spark, catalog = service.workspace.spark, service.workspace.catalog.spark_name
    namespace = service.workspace.default_namespace
    orders = f"{catalog}.{namespace}.orders"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {orders} (day STRING, region STRING, amount INT) USING iceberg")
    spark.sql(
        f"INSERT INTO {orders} VALUES ('2026-01-01', 'eu', 120), ('2026-01-01', 'us', 80), ('2026-01-02', 'eu', 40)"
    )
    for sql in STATEMENTS:
        (statement,) = parse_cell(sql)
        say(service.execute(statement).message)
    views = {}
    for table in TABLES:
        name = f"{catalog}.{namespace}.{table}"
        views[name] = _wait_for_run(service, name, timeout)
        say(f"\n{name}, as Airflow sees it:")
        for label, text in run_facts(views[name]):
            say(f"  {label}: {text}")
        for row in spark.sql(f"SELECT * FROM {name} ORDER BY 1").collect():
            say(f"    {tuple(row)}")
    return views


def _wait_for_run(service: MaterializedTables, name: str, timeout: float) -> AirflowRunView:
    """Airflow's view of ``name`` once its DAG's newest run has finished (success or failure)."""
    service.workflows.runs.max_age = min(service.workflows.runs.max_age, timedelta(seconds=2))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = service.airflow_run(name)  # never waits on Airflow: the cache polls in the background
        if view is not None and view.last_run is not None and view.last_run.state in ("success", "failed"):
            return view
        time.sleep(2)
    raise TimeoutError(f"Airflow did not finish a run of {name} in {timeout:.0f} s (see its UI)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", default="mt")
    parser.add_argument("--namespace", default="airflow_example")
    args = parser.parse_args(argv)
    from mt_magic.runtime.connection import ConnectionSettings, connect

    connection = connect(ConnectionSettings(args.catalog, args.namespace, start_manager=False))
    try:
        run(connection.service)
    finally:
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

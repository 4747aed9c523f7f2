"""Refreshes on Airflow against the same refresh in the kernel, side by side in one run.

    .venv/bin/python benchmarks/bench_airflow.py [--rounds 3] [--rows 200000]
    PYTHONPATH=$PWD .venv-pyspark-4.1.4/bin/python benchmarks/bench_airflow.py --spark-connect


One embedded catalog, one source table, two materialized tables with the same query: one refreshed by the kernel
(an inline service on a warm Spark session), one on Airflow (a local Airflow 3 from ``.venv-airflow``, started
here). Each round appends rows to the source, then measures, one after the other:

* **kernel**: ``ALTER … REFRESH`` in this process, call to commit (the session is warm);
* **one-shot**: ``python -m mt_magic refresh`` as a subprocess, start to exit — what each Airflow task runs,
  so the difference to the kernel is what a Spark session per task costs (JVM start, the Iceberg catalog in it,
  the refresh's first-run compilation);
* **Airflow run**: ``ALTER … REFRESH`` of the Airflow table, from the DAG run's start (Airflow's ``start_date``) to
  the table's commit, and from the statement to the commit (the scheduler's queueing included).

With ``--spark-connect`` (PySpark 4, which ships the server) a Spark Connect server on loopback serves the same
catalog, and the run adds a fifth measurement — the one-shot as a Connect client of that long-lived server
(``MT_MAGIC_SPARK_REMOTE``), no JVM of its own — while Airflow's tasks run that way too: what a shared Spark takes
out of each task.

Prints medians and ratios to the kernel.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from mt_magic.loopback import free_port

CATALOG = "bench"
QUERY = "SELECT k, count(*) AS n, sum(v) AS total FROM events GROUP BY k"


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument(
        "--spark-connect", action="store_true", help="also run the one-shot, and Airflow's tasks, on a Connect server"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench_airflow_"))
    os.environ["MT_MAGIC_HOME"] = str(work / "home")
    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    server = ensure_embedded_server(work / "home")
    catalog_env = {f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI": server.uri}
    if server.token:
        catalog_env[f"PYICEBERG_CATALOG__{CATALOG.upper()}__TOKEN"] = server.token
    os.environ.update(catalog_env)
    spark_env = {"MT_MAGIC_SPARK_MASTER": "local[1]", "MT_MAGIC_DRIVER_MEMORY": "1g"}
    connect_env: dict[str, str] = {}
    connect_server = None
    if args.spark_connect:
        from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf
        from mt_magic.runtime.spark.connect_server import ConnectServer, ConnectServerSettings

        connect_server = ConnectServer(
            ConnectServerSettings(
                port=free_port(),
                master="local[1]",
                driver_memory="1g",
                catalog_conf=spark_catalog_conf(resolve_catalog(CATALOG)),
                state_dir=work / "spark-connect",
            )
        )
        connect_env = {"MT_MAGIC_SPARK_REMOTE": connect_server.start()}
        print(f"Spark Connect server at {connect_env['MT_MAGIC_SPARK_REMOTE']}", flush=True)

    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.runtime.spark.session import SparkSettings
    from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings
    from mt_magic.scheduling.dags import dag_id
    from mt_magic.scheduling.local_airflow import local_airflow
    from mt_magic.sql import parse_cell

    conn = connect(
        ConnectionSettings(CATALOG, spark=SparkSettings(master="local[1]", driver_memory="1g"), start_manager=False)
    )
    service, spark = conn.service, conn.spark

    def run(sql: str):  # type: ignore[no-untyped-def]
        (statement,) = parse_cell(sql)
        return service.execute(statement)

    def append(n: int) -> None:
        spark.range(n).selectExpr("CAST(id % 97 AS INT) AS k", "CAST(id AS INT) AS v").writeTo(
            f"{CATALOG}.default.events"
        ).append()

    spark.sql(f"CREATE TABLE {CATALOG}.default.events (k INT, v INT) USING iceberg")
    append(args.rows)
    task_env = {**catalog_env, **spark_env, **connect_env, "MT_MAGIC_PYTHON": sys.executable}
    airflow = local_airflow(work / "airflow", CATALOG, {**task_env, "MT_MAGIC_AIRFLOW_RETRIES": "0"})
    print(f"starting Airflow in {airflow.home} …", flush=True)
    started = time.monotonic()
    airflow.start()
    print(f"Airflow answered after {time.monotonic() - started:.1f} s", flush=True)
    settings = AirflowSettings(airflow.url, airflow.user, airflow.password, timeout=30)
    service.workflows.configure(service.workflows.default, settings)
    client = AirflowClient(settings)
    try:
        run(f"CREATE MATERIALIZED TABLE in_kernel FRESHNESS = INTERVAL '1' HOUR AS {QUERY}").refresh.result()
        on_airflow = "WITH ('scheduler' = 'airflow') FRESHNESS = INTERVAL '1' HOUR"
        run(f"CREATE MATERIALIZED TABLE on_airflow {on_airflow} AS {QUERY}")
        dag = dag_id(f"{CATALOG}.default.on_airflow")
        first = wait(lambda: _finished(client, dag, None), 600, "the DAG's first run")
        print(f"first Airflow run: {first.state}", flush=True)
        kernel, oneshot, oneshot_connect, run_to_commit, statement_to_commit = [], [], [], [], []
        for round_ in range(args.rounds):
            append(args.rows // 10)
            t0 = time.monotonic()
            run("ALTER MATERIALIZED TABLE in_kernel REFRESH").refresh.result()
            kernel.append(time.monotonic() - t0)

            oneshot.append(_oneshot({**os.environ, **spark_env}))
            if connect_env:
                append(args.rows // 10)
                oneshot_connect.append(_oneshot({**os.environ, **spark_env, **connect_env}))

            asked = datetime.now(timezone.utc)
            result = run("ALTER MATERIALIZED TABLE on_airflow REFRESH")
            run_id = result.message.split("Airflow run ", 1)[1].split(" ", 1)[0]
            finished = wait(lambda rid=run_id: _finished(client, dag, rid), 600, f"run {run_id}")
            assert finished.state == "success", airflow.task_log(dag, run_id, 1)[-3000:]
            snapshot = service.workspace.catalog.load(f"{CATALOG}.default.on_airflow").last_refresh()
            assert snapshot is not None
            committed = snapshot[0].committed_at
            run_to_commit.append((committed - parse_time(finished.start_date)).total_seconds())
            statement_to_commit.append((committed - asked).total_seconds())
            over_connect = f", one-shot over Connect {oneshot_connect[-1]:.2f} s" if connect_env else ""
            print(
                f"round {round_ + 1}: kernel {kernel[-1]:.2f} s, one-shot {oneshot[-1]:.2f} s{over_connect}, "
                f"Airflow run start → commit {run_to_commit[-1]:.2f} s, statement → commit "
                f"{statement_to_commit[-1]:.2f} s",
                flush=True,
            )
        base = statistics.median(kernel)
        print(f"\nmedians over {args.rounds} rounds ({args.rows // 10} new rows each, {args.rows} to start):")
        tasks = " (tasks over Spark Connect)" if connect_env else ""
        lines = [
            ("refresh in the kernel (warm Spark session)", kernel),
            ("python -m mt_magic refresh (a Spark session per task)", oneshot),
            ("python -m mt_magic refresh over Spark Connect", oneshot_connect),
            (f"Airflow{tasks}: DAG run start → the table's commit", run_to_commit),
            (f"Airflow{tasks}: REFRESH statement → the table's commit", statement_to_commit),
        ]
        for label, values in lines:
            if values:
                median = statistics.median(values)
                print(f"  {label:<76} {median:7.2f} s   {median / base:6.1f}× the kernel")
        print(f"  a Spark session per task costs about {statistics.median(oneshot) - base:.1f} s of each run")
        if oneshot_connect:
            print(f"  over Spark Connect it costs about {statistics.median(oneshot_connect) - base:.1f} s")
    finally:
        client.close()
        airflow.stop()
        conn.close()
        if connect_server is not None:
            connect_server.stop()
        stop_embedded_server(work / "home")
    return 0


def _oneshot(env: dict[str, str]) -> float:
    """``python -m mt_magic refresh`` of the kernel's table, as an Airflow task runs it: start to exit, in seconds."""
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mt_magic", "refresh", "default.in_kernel", "--catalog", CATALOG],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return time.monotonic() - t0


def wait(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    raise TimeoutError(f"no {what} after {timeout:.0f} s")


def _finished(client, dag: str, run_id: str | None):  # type: ignore[no-untyped-def]
    from mt_magic.scheduling.airflow_api import DagNotFoundError

    try:
        runs = client.dag_runs(dag)
    except DagNotFoundError:
        return None
    for r in runs:
        if (run_id is None or r.run_id == run_id) and r.state in ("success", "failed"):
            return r
    return None


if __name__ == "__main__":
    sys.exit(main())

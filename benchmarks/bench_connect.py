"""Classic vs Spark Connect, side by side in one run: the kernel's memory and start-up, and refresh latency.

    PYTHONPATH=$PWD .venv-pyspark-4.1.4/bin/python benchmarks/bench_connect.py [--refreshes 8] [--rows 200000]

One embedded catalog and one Spark Connect server (``connect_server``: the installed PySpark 4, Iceberg and the
catalog on the server) are started; then two fresh "kernel" processes run the same work, one per line:

* start-up: from the process' start (before PySpark is imported) to ``connect()`` returning and a first query;
* memory: the resident set of the kernel process *and its children* (the classic kernel's JVM is its child; the
  Connect kernel has none — the server's memory is reported on its own line, it is shared by every kernel);
* refresh latency of the same tables on both lines (each line its own copy, pinned to Spark so the in-process
  engine does not take them): the *floor* (a filter, 10 new rows, incremental append) and a *join* (facts joined
  to a dimension, 10 new facts, incremental delta terms), ``--refreshes`` runs each, median and p90.

Prints one table with the Connect/classic ratio of every figure. The issue's goals: a Connect kernel under 300 MB
with no JVM, Connect refreshes within 1.5x of classic ones.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mt_magic.loopback import free_port

START = time.monotonic()  # the worker's start-up is measured from here, before PySpark is imported

ROOT = Path(__file__).resolve().parents[1]
NS = "bench_connect"


def tree_rss_mb(pid: int) -> tuple[float, float]:
    """(RSS of the process, RSS of the process and all its descendants), in MB."""
    import psutil

    proc = psutil.Process(pid)
    own = proc.memory_info().rss
    children = sum(child.memory_info().rss for child in proc.children(recursive=True))
    return own / 2**20, (own + children) / 2**20


def _run(service: Any, cell: str) -> None:
    from mt_magic.sql import parse_cell

    for statement in parse_cell(cell):
        result = service.execute(statement)
        if result.refresh is not None:
            result.refresh.result(timeout=600)


def _timed_refreshes(service: Any, spark: Any, table: str, append: str, count: int) -> list[float]:
    times = []
    for i in range(count):
        spark.sql(append.format(i=i)).collect()
        started = time.perf_counter()
        _run(service, f"ALTER MATERIALIZED TABLE {table} REFRESH")
        times.append(time.perf_counter() - started)
    return times


def worker(line: str, rows: int, refreshes: int) -> dict[str, Any]:
    """One kernel's figures (runs in its own process: the two lines cannot share one)."""
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.runtime.spark.session import SparkSettings

    settings = SparkSettings(master="local[2]", driver_memory="3g") if line == "classic" else SparkSettings()
    conn = connect(ConnectionSettings(catalog_name="mt", namespace=f"{NS}_{line}", spark=settings, start_manager=False))
    spark = conn.spark
    spark.sql("SELECT 1").collect()
    startup = time.monotonic() - START
    ns = f"{NS}_{line}"
    spark.sql(f"CREATE TABLE mt.{ns}.facts (id BIGINT, k INT, v BIGINT) USING iceberg").collect()
    spark.sql(f"CREATE TABLE mt.{ns}.dims (k INT, name STRING) USING iceberg").collect()
    spark.sql(f"INSERT INTO mt.{ns}.facts SELECT id, CAST(id % 100 AS INT), id * 7 FROM range({rows})").collect()
    spark.sql(f"INSERT INTO mt.{ns}.dims SELECT CAST(id AS INT), concat('d', id) FROM range(100)").collect()
    pin = "WITH ('incremental.engine' = 'spark') FRESHNESS = INTERVAL '1' HOUR"
    _run(
        conn.service,
        f"CREATE MATERIALIZED TABLE {ns}.floor {pin} AS SELECT id, k, v FROM {ns}.facts WHERE v % 3 = 0;\n"
        f"CREATE MATERIALIZED TABLE {ns}.joined {pin} AS "
        f"SELECT f.id, f.v, d.name FROM {ns}.facts f JOIN {ns}.dims d ON f.k = d.k",
    )
    insert = f"INSERT INTO mt.{ns}.facts SELECT id, CAST(id % 100 AS INT), id * 3 FROM range"
    floor_rows = insert + f"({rows} + {{i}} * 10, {rows} + {{i}} * 10 + 10)"
    join_rows = insert + f"({2 * rows} + {{i}} * 10, {2 * rows} + {{i}} * 10 + 10)"
    floor = _timed_refreshes(conn.service, spark, f"{ns}.floor", floor_rows, refreshes)
    join = _timed_refreshes(conn.service, spark, f"{ns}.joined", join_rows, refreshes)
    own, tree = tree_rss_mb(os.getpid())
    conn.close()
    return {"startup_s": startup, "kernel_rss_mb": own, "kernel_tree_rss_mb": tree, "floor_s": floor, "join_s": join}


def _spawn(line: str, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", line, "--rows", str(args.rows), "--refreshes", str(args.refreshes)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", choices=["classic", "connect"])
    parser.add_argument("--refreshes", type=int, default=8)
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows, args.refreshes)))
        return 0

    from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf
    from mt_magic.catalog.embedded import stop_embedded_server
    from mt_magic.runtime.spark.connect_server import ConnectServer, ConnectServerSettings

    home = Path(tempfile.mkdtemp(prefix="bench_connect_"))
    os.environ["MT_MAGIC_HOME"] = str(home)
    catalog_conf = spark_catalog_conf(resolve_catalog("mt", home))
    server = ConnectServer(
        ConnectServerSettings(port=free_port(), catalog_conf=catalog_conf, state_dir=home / "spark-connect")
    )
    started = time.monotonic()
    url = server.start()
    server_start = time.monotonic() - started
    try:
        base = {k: v for k, v in os.environ.items() if k not in ("MT_MAGIC_SPARK_REMOTE", "SPARK_REMOTE")}
        base["PYTHONPATH"] = str(ROOT)
        results = {
            "classic": _spawn("classic", base, args),
            "connect": _spawn("connect", {**base, "MT_MAGIC_SPARK_REMOTE": url}, args),
        }
        pid = server.pid()
        server_rss = tree_rss_mb(pid)[1] if pid else float("nan")
    finally:
        server.stop()
        stop_embedded_server(home)
    classic, connect = results["classic"], results["connect"]
    rows = [
        ("kernel start-up to first query (s)", classic["startup_s"], connect["startup_s"]),
        ("kernel process RSS (MB)", classic["kernel_rss_mb"], connect["kernel_rss_mb"]),
        ("kernel + children RSS (MB; classic: its JVM)", classic["kernel_tree_rss_mb"], connect["kernel_tree_rss_mb"]),
    ]
    for name in ("floor", "join"):
        for label, q in (("median", 0.5), ("p90", 0.9)):
            rows.append((f"{name} refresh {label} (s)", _p(classic[f"{name}_s"], q), _p(connect[f"{name}_s"], q)))
    print(f"{'':48} {'classic':>10} {'connect':>10} {'ratio':>7}")
    for label, a, b in rows:
        print(f"{label:48} {a:10.3f} {b:10.3f} {b / a:7.2f}x")
    print(f"Connect server (shared by every kernel): started in {server_start:.1f} s, RSS {server_rss:.0f} MB")
    print(f"({args.refreshes} refreshes each, {args.rows} source rows, +10 rows per refresh; local[2] on both lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does a trivial cell still return at once while the RefreshManager runs refreshes in the same kernel?

Starts a real Jupyter kernel (this interpreter, ``jupyter_client``) on a throw-away embedded catalog, loads the
extension, and creates several FULL tables that refresh every few seconds with a self-join heavy enough to keep
Spark busy; this process appends to their source every second so no refresh is skipped as a no-op. Then it
times the round trip of ``1+1`` (execute_request → execute_reply) with every table suspended (the manager idle)
and with every table refreshing, and prints median / p95 / max and the ratio.

Run: ``.venv/bin/python benchmarks/bench_cell_latency.py [--cells 50] [--tables 3] [--rows 200000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

NS = "bench"
WORKERS = 2
"""The manager's default cap on concurrent refreshes (``max_concurrent_refreshes``)."""
KERNEL_NAME = "mt-bench-python"


class Kernel:
    """A kernel running this interpreter, with cell helpers."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager

        spec = workdir / "kernels" / KERNEL_NAME
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "bench", "language": "python"}))
        specs = KernelSpecManager(kernel_dirs=[str(spec.parent)])
        self.manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
        self.manager.start_kernel(env=env, cwd=str(workdir))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    def run(self, code: str, timeout: float = 300) -> str:
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])

        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=hook)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"cell failed: {reply['content'].get('evalue')}\n{code}")
        return "".join(out)

    def round_trip_ms(self, code: str = "1+1") -> float:
        start = time.perf_counter()
        reply = self.client.execute_interactive(code, timeout=60, output_hook=lambda msg: None)
        elapsed = (time.perf_counter() - start) * 1000
        assert reply["content"]["status"] == "ok"
        return elapsed

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


class Appender:
    """Appends a few rows to the source every second (pyiceberg, no Spark), so FULL refreshes never no-op."""

    def __init__(self, catalog: Any) -> None:
        self.table = catalog.load_table((NS, "src"))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bench-appender", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import pyarrow as pa

        batch = 0
        while not self.stop.wait(1.0):
            batch += 1
            rows = pa.table({"k": pa.array([batch % 1000] * 10, pa.int32()), "v": pa.array(range(10), pa.int32())})
            self.table.append(rows)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def stats(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))], ordered[-1]


def measure(kernel: Kernel, cells: int, spacing: float) -> list[float]:
    for _ in range(3):  # warm-up
        kernel.round_trip_ms()
    samples = []
    for _ in range(cells):
        samples.append(kernel.round_trip_ms())
        time.sleep(spacing)
    return samples


def refresh_activity(catalog: Any, names: list[str], since: datetime, until: datetime) -> tuple[int, float]:
    """Refresh commits between ``since`` and ``until``, and the seconds they spent (from the catalog)."""
    from mt_magic.catalog.definitions import RefreshState

    count, busy = 0, 0.0
    for name in names:
        for snapshot in catalog.load_table((NS, name)).snapshots():
            committed = datetime.fromtimestamp(snapshot.timestamp_ms / 1000, tz=timezone.utc)
            state = RefreshState.from_summary(snapshot.summary.additional_properties if snapshot.summary else {})
            if state is not None and since <= state.refresh_start and committed <= until:
                count += 1
                busy += (committed - state.refresh_start).total_seconds()
    return count, busy


def setup_cells(tables: int, rows: int, freshness: int) -> tuple[str, str, list[str]]:
    source = (
        f"spark = get_ipython()._mt_magic_magics.connection.spark\n"
        f"spark.sql('CREATE NAMESPACE IF NOT EXISTS mt.{NS}')\n"
        f"spark.range({rows}).selectExpr('cast(id % 1000 as int) AS k', 'cast(id as int) AS v')"
        f".writeTo('mt.{NS}.src').create()"
    )
    names = [f"heavy_{i}" for i in range(tables)]
    create = "%%materialized --wait\n" + "\n".join(
        f"CREATE MATERIALIZED TABLE {NS}.{name} FRESHNESS = INTERVAL '{freshness}' SECOND REFRESH_MODE = FULL "
        f"AS {heavy_query(i)};"
        for i, name in enumerate(names)
    )
    return source, create, names


def heavy_query(i: int) -> str:
    """A self-join with an aggregate: a few seconds of Spark work per refresh on two cores."""
    return (
        f"SELECT a.k, count(*) AS pairs, sum(b.v) AS total FROM mt.{NS}.src a JOIN mt.{NS}.src b ON a.k = b.k "
        f"WHERE a.v % {i + 2} = 0 GROUP BY a.k"
    )


def alter_all(names: list[str], action: str) -> str:
    return "%%materialized\n" + "\n".join(f"ALTER MATERIALIZED TABLE {NS}.{n} {action};" for n in names)


def states_cell(names: list[str]) -> str:
    qualified = [f"mt.{NS}.{n}" for n in names]
    return (
        "_m = get_ipython()._mt_magic_magics.connection.manager\n"
        f"print(','.join(_m.status(n).state.value for n in {qualified!r}))"
    )


THREAD_CPU_CELL = """
import os, threading
_ticks = os.sysconf("SC_CLK_TCK")
def _cpu(thread):
    try:
        fields = open(f"/proc/self/task/{thread.native_id}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _ticks
print(json.dumps({t.name: _cpu(t) for t in threading.enumerate() if t.name.startswith("mt-refresh")}))
"""
"""CPU seconds used so far by the manager's Python threads (Linux ``/proc``), to tell GIL use from Spark's."""

SPARK_LOOP_CELL = """
import threading
_stop_spark_loop = threading.Event()
def _spark_loop(query):
    while not _stop_spark_loop.is_set():
        spark.sql(query).collect()
_spark_loop_threads = [threading.Thread(target=_spark_loop, args=(q,), daemon=True) for q in {queries!r}]
for _t in _spark_loop_threads:
    _t.start()
"""
"""Spark work without the manager: plain threads, as many as the manager's workers, looping tables' queries."""


def manager_cpu(kernel: Kernel) -> float:
    text = kernel.run("import json\n" + THREAD_CPU_CELL).strip().splitlines()[-1]
    return sum(json.loads(text).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=50, help="timed executions of 1+1 per phase")
    parser.add_argument("--tables", type=int, default=3, help="materialized tables refreshing at once")
    parser.add_argument("--rows", type=int, default=200_000, help="rows in their source")
    parser.add_argument("--freshness", type=int, default=5, help="seconds (FULL mode: a cron every N seconds)")
    parser.add_argument("--spacing", type=float, default=0.4, help="seconds between timed cells")
    args = parser.parse_args()

    from pyiceberg.catalog import load_catalog

    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    workdir = Path(tempfile.mkdtemp(prefix="mt_bench_"))
    home = workdir / "home"
    server = ensure_embedded_server(home)
    env = {
        **os.environ,
        "MT_MAGIC_HOME": str(home),
        "MT_MAGIC_SPARK_MASTER": "local[2]",
        "MT_MAGIC_DRIVER_MEMORY": "2g",
    }
    env = {k: v for k, v in env.items() if not k.startswith("PYICEBERG_CATALOG__MT__")}
    catalog = load_catalog("bench", type="rest", uri=server.uri, **({"token": server.token} if server.token else {}))
    kernel = appender = None
    try:
        kernel = Kernel(env, workdir)
        kernel.run("%load_ext mt_magic")
        source, create, names = setup_cells(args.tables, args.rows, args.freshness)
        kernel.run(source)
        started = time.perf_counter()
        kernel.run(create)
        print(f"created {len(names)} tables in {time.perf_counter() - started:.1f}s (first refreshes included)")
        appender = Appender(catalog)

        kernel.run(alter_all(names, "SUSPEND"))
        time.sleep(2)
        print("manager idle:", kernel.run(states_cell(names)).strip())
        idle = measure(kernel, args.cells, args.spacing)

        kernel.run(SPARK_LOOP_CELL.format(queries=[heavy_query(i) for i in range(WORKERS)]))
        time.sleep(2)
        spark_only = measure(kernel, args.cells, args.spacing)
        kernel.run("_stop_spark_loop.set()\nfor _t in _spark_loop_threads: _t.join()")

        cpu_before = manager_cpu(kernel)
        kernel.run(alter_all(names, "RESUME"))
        deadline = time.monotonic() + 60
        while "running" not in kernel.run(states_cell(names)) and time.monotonic() < deadline:
            time.sleep(0.2)
        since = datetime.now(timezone.utc)
        busy = measure(kernel, args.cells, args.spacing)
        until = datetime.now(timezone.utc)
        window = (until - since).total_seconds()
        cpu = manager_cpu(kernel) - cpu_before
        commits, spent = refresh_activity(catalog, names, since, until)

        print(f"\nround trip of a `1+1` cell, {args.cells} runs per phase, {args.spacing}s apart (ms)")
        print(f"{'phase':48} {'median':>8} {'p95':>8} {'max':>8}")
        idle_stats = stats(idle)
        rows = [
            ("manager idle (every table suspended)", idle_stats),
            (f"no manager, {WORKERS} threads looping tables' queries", stats(spark_only)),
            (f"{len(names)} FULL tables refreshing every {args.freshness}s", stats(busy)),
        ]
        for label, values in rows:
            ratios = "  ".join(f"{v / i:4.1f}x" for v, i in zip(values, idle_stats, strict=True))
            print(f"{label:48} " + " ".join(f"{v:8.1f}" for v in values) + f"   ({ratios} idle)")
        print(
            f"\nduring the {window:.0f}s busy phase: {commits} refreshes committed, {spent:.0f}s of refresh work "
            f"({spent / window:.0%} of wall time; up to 2 run at once); the manager's Python threads used "
            f"{cpu:.1f}s CPU ({cpu / window:.0%} of one core)"
        )
    finally:
        if appender is not None:
            appender.close()
        if kernel is not None:
            kernel.close()
        stop_embedded_server(home)


if __name__ == "__main__":
    main()

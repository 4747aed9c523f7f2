"""Freshness adherence: do tables stay within their FRESHNESS under a steady append load?

One process runs the RefreshManager (its own thread, as in a kernel) over three incremental tables with 10 s,
30 s and 1 min freshness on one source; another thread appends a batch every second through pyiceberg (another
writer, not this Spark). Every second each table's **staleness** is sampled from the catalog alone: how long ago
the oldest source commit that the table's last refresh has not consumed was made (0 when it consumed the
source's current snapshot). After each table's first refresh, p50 / p99 / max staleness are printed against
the target p99 ≤ 2 × freshness.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_freshness.py [--minutes 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from datetime import datetime, timezone
from typing import Any

NS = "fresh"
TABLES = {"f10": 10, "f30": 30, "f60": 60}


def staleness(tables: Any, table: str, source_snapshots: list[tuple[int, float]]) -> float | None:
    """Seconds since the oldest source commit the table's last refresh has not consumed (None: no refresh yet).

    ``tables``: the connection's catalog client; the refresh state is read the way the engine reads it.
    """
    last = tables.load(f"fresh.{NS}.{table}").last_refresh()
    if last is None or not last[1].source_states:
        return None
    consumed = last[1].source_states[0].snapshot_id
    ids = [s for s, _ in source_snapshots]
    if consumed not in ids:
        return None
    pending = source_snapshots[ids.index(consumed) + 1 :]
    return 0.0 if not pending else time.time() - pending[0][1]


class Appender:
    """Appends a batch of rows every second through pyiceberg; remembers each commit's snapshot and time."""

    def __init__(self, catalog: Any) -> None:
        self.catalog = catalog
        first = catalog.load_table((NS, "events")).current_snapshot()
        self.snapshots: list[tuple[int, float]] = [(first.snapshot_id, first.timestamp_ms / 1000)]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self._batch = 0

    def _run(self) -> None:
        import pyarrow as pa

        while not self.stop.wait(1.0):
            self._batch += 1
            table = self.catalog.load_table((NS, "events"))
            table.append(
                pa.table(
                    {"k": pa.array([i % 50 for i in range(100)], pa.int32()), "v": pa.array(range(100), pa.int64())}
                )
            )
            snapshot = table.current_snapshot()
            self.snapshots.append((snapshot.snapshot_id, snapshot.timestamp_ms / 1000))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    os.environ["MT_MAGIC_HOME"] = tempfile.mkdtemp(prefix="mt_fresh_")
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    from mt_magic.catalog.embedded import stop_embedded_server
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.runtime.spark.session import SparkSettings
    from mt_magic.sql import parse_cell

    conn = connect(ConnectionSettings(catalog_name="fresh", namespace=NS, spark=SparkSettings(master=args.master)))
    try:
        catalog = load_catalog("fresh", **dict(conn.catalog_config.properties))
        schema = pa.schema([("k", pa.int32()), ("v", pa.int64())])
        catalog.create_table((NS, "events"), schema=schema).append(pa.table({"k": [0], "v": [0]}, schema=schema))
        for table, seconds in TABLES.items():
            cell = (
                f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '{seconds}' SECOND "
                "AS SELECT k, count(*) AS n, sum(v) AS s FROM events GROUP BY k"
            )
            for statement in parse_cell(cell):
                result = conn.service.execute(statement)
                if result.refresh is not None:
                    result.refresh.result(timeout=600)
        appender = Appender(catalog)
        appender.thread.start()
        samples: dict[str, list[float]] = {t: [] for t in TABLES}
        started = time.monotonic()
        while time.monotonic() - started < args.minutes * 60:
            time.sleep(1.0)
            known = list(appender.snapshots)
            for table in TABLES:
                value = staleness(conn.service.workspace.catalog, table, known)
                if value is not None:
                    samples[table].append(value)
        appender.stop.set()
        appender.thread.join()
    finally:
        conn.close()
        stop_embedded_server()
    print(
        f"Freshness adherence — {args.minutes:g} min, a batch appended every second, "
        f"{os.cpu_count()} cores, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
    )
    print(f"  {'table':<6} {'freshness':>9} {'samples':>7} {'p50':>7} {'p99':>7} {'max':>7} {'p99/freshness':>13}")
    for table, seconds in TABLES.items():
        values = samples[table]
        p50, p99 = statistics.median(values), percentile(values, 0.99)
        print(
            f"  {table:<6} {seconds:>8}s {len(values):>7} {p50:6.1f}s {p99:6.1f}s {max(values):6.1f}s "
            f"{p99 / seconds:12.2f}×  (target ≤ 2×)"
        )


if __name__ == "__main__":
    main()

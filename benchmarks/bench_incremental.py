"""Incremental vs. full refresh, side by side in one process (issue 7's targets).

* GROUP BY (aggregate merge) over a source of ``--rows`` rows receiving 0.1% new rows per refresh:
  full-refresh time, incremental time and their ratio (target: incremental ≥ 20× faster);
* the same delta over a ``--small``-row source: incremental time at both sizes (target: within 1.5×);
* a join table (fact ⋈ dimension, delta join appended) and a partitioned table (COUNT DISTINCT per day,
  only the touched partition recomputed), full vs. incremental.

Each measurement is one ``Engine.refresh`` (metadata, planning, Spark job, commit), median of ``--repeat``.
The incremental time is flat (≈0.6 s here: Spark planning, a few small jobs, the commit), the full time grows
with the source, so the ratio depends on the size: ``--scale-rows 150000000`` adds the GROUP BY comparison at
150 M rows (about 3 minutes of setup).
Everything runs against a private embedded catalog in a temporary ``MT_MAGIC_HOME``.
Run: ``.venv/bin/python benchmarks/bench_incremental.py [--rows 10000000] [--small 1000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone

DAYS = 10
ITEMS = 10_000
USERS = 1_000_000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the large source")
    parser.add_argument("--small", type=int, default=1_000_000, help="rows of the small source (same delta)")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per figure (median reported)")
    parser.add_argument(
        "--scale-rows", type=int, default=0, help="also time the GROUP BY table over a source this large (0: skip)"
    )
    parser.add_argument("--master", default="local[*]")
    return parser.parse_args()


class Bench:
    """One connection (Spark + embedded catalog) and helpers to fill sources and time refreshes."""

    def __init__(self, master: str) -> None:
        os.environ["MT_MAGIC_HOME"] = tempfile.mkdtemp(prefix="mt_bench_")
        from mt_magic.runtime.connection import ConnectionSettings, connect
        from mt_magic.runtime.spark.session import SparkSettings

        self.conn = connect(
            ConnectionSettings(
                catalog_name="bench",
                namespace="b",
                start_manager=False,
                spark=SparkSettings(master=master, driver_memory="8g"),
            )
        )
        self.spark = self.conn.spark
        self.service = self.conn.service
        self._batch = 0

    def name(self, table: str) -> str:
        return f"bench.b.{table}"

    def events(self, table: str, rows: int) -> None:
        self.spark.sql(
            f"CREATE TABLE {table} (item_id INT, user_id BIGINT, price DECIMAL(10, 2), ts TIMESTAMP, "
            "ds STRING) USING iceberg PARTITIONED BY (ds)"
        )
        self.append(table, rows, spread_days=True)

    def append(self, table: str, rows: int, spread_days: bool = False) -> None:
        """Rows of random-looking events; the delta batches land in the newest day."""
        self._batch += 1
        seed = self._batch * 7919
        day = (
            f"CAST(date_add(DATE '2024-12-01', CAST(id % {DAYS} AS INT)) AS STRING)"
            if spread_days
            else f"CAST(date_add(DATE '2024-12-01', {DAYS - 1}) AS STRING)"
        )
        self.spark.sql(f"""INSERT INTO {table}
            SELECT CAST((id * 31 + {seed}) % {ITEMS} AS INT), (id * 17 + {seed}) % {USERS},
                   CAST(((id * 13 + {seed}) % 10000) / 100 AS DECIMAL(10, 2)),
                   TIMESTAMP '2024-12-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, (id * 7 + {seed}) % 86400),
                   {day}
            FROM range({rows})""")

    def create(self, cell: str) -> None:
        from mt_magic.sql import parse_cell

        for statement in parse_cell(cell):
            result = self.service.execute(statement)
            if result.refresh is not None:
                result.refresh.result(timeout=3600)

    def refresh(self, table: str, full: bool = False) -> tuple[float, str]:
        from mt_magic.runtime.refresh.run import run_refresh
        from mt_magic.runtime.status import RefreshRequest, RefreshTrigger

        trigger = RefreshTrigger.MANUAL if full else RefreshTrigger.SCHEDULED
        request = RefreshRequest(self.name(table), trigger, datetime.now(timezone.utc))
        started = time.perf_counter()
        outcome = run_refresh(self.service.engine.context, request, force_full=full)
        return time.perf_counter() - started, outcome.strategy

    def compare(self, table: str, source: str, delta: int, repeat: int) -> tuple[float, float, str]:
        """Median full and incremental refresh times, each after appending ``delta`` rows."""
        full, incremental, strategy = [], [], ""
        for _ in range(repeat):
            self.append(source, delta)
            seconds, strategy = self.refresh(table)
            incremental.append(seconds)
            self.append(source, delta)
            full.append(self.refresh(table, full=True)[0])
        return statistics.median(full), statistics.median(incremental), strategy

    def commit_floor(self, repeat: int) -> float:
        """An empty append from a fresh child session: the fixed cost of any Spark job + Iceberg commit here."""
        self.spark.sql("CREATE TABLE IF NOT EXISTS scratch (x INT) USING iceberg")
        times = []
        for _ in range(repeat):
            session = self.service.engine.jobs.child_session()
            started = time.perf_counter()
            session.range(0).selectExpr("CAST(id AS INT) AS x").writeTo(self.name("scratch")).append()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    def incremental_only(self, table: str, source: str, delta: int, repeat: int) -> float:
        times = []
        for _ in range(repeat):
            self.append(source, delta)
            times.append(self.refresh(table)[0])
        return statistics.median(times)


def timed(label: str, action: Callable[[], object]) -> None:
    started = time.perf_counter()
    action()
    print(f"  setup: {label} in {time.perf_counter() - started:.1f} s", flush=True)


def main() -> None:
    from mt_magic.catalog.embedded import stop_embedded_server

    args = parse_args()
    bench = Bench(args.master)
    try:
        run(bench, args)
    finally:
        bench.conn.close()
        stop_embedded_server()


def run(bench: Bench, args: argparse.Namespace) -> None:
    big, small, delta = args.rows, args.small, max(args.rows // 1000, 1)
    print(
        f"mt_magic incremental refresh benchmark — Spark {bench.spark.version}, "
        f"{bench.spark.sparkContext.master}, {os.cpu_count()} cores; median of {args.repeat}"
    )
    timed(f"events_big ({big:,} rows)", lambda: bench.events("events_big", big))
    timed(f"events_small ({small:,} rows)", lambda: bench.events("events_small", small))
    bench.spark.sql("CREATE TABLE items (item_id INT, brand STRING, category STRING) USING iceberg")
    bench.spark.sql(
        f"INSERT INTO items SELECT CAST(id AS INT), concat('b', id % 97), concat('c', id % 13) FROM range({ITEMS})"
    )
    group_by = (
        "AS SELECT item_id, count(*) AS pv, sum(price) AS gmv, min(ts) AS first_seen, max(ts) AS last_seen "
        "FROM {src} GROUP BY item_id"
    )
    timed(
        "item_stats (GROUP BY over the big source)",
        lambda: bench.create(
            "CREATE MATERIALIZED TABLE item_stats FRESHNESS = INTERVAL '1' MINUTE " + group_by.format(src="events_big")
        ),
    )
    timed(
        "item_stats_small",
        lambda: bench.create(
            "CREATE MATERIALIZED TABLE item_stats_small FRESHNESS = INTERVAL '1' MINUTE "
            + group_by.format(src="events_small")
        ),
    )
    timed(
        "enriched (join)",
        lambda: bench.create(
            "CREATE MATERIALIZED TABLE enriched PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' MINUTE "
            "AS SELECT e.ds, e.item_id, e.user_id, e.price, i.brand, i.category "
            "FROM events_big e JOIN items i ON e.item_id = i.item_id"
        ),
    )
    timed(
        "daily_uv (partitioned COUNT DISTINCT)",
        lambda: bench.create(
            "CREATE MATERIALIZED TABLE daily_uv PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' MINUTE "
            "AS SELECT ds, item_id, count(*) AS pv, count(DISTINCT user_id) AS uv FROM events_big GROUP BY ds, item_id"
        ),
    )

    print(f"\nGROUP BY table over {big:,} source rows, +{delta:,} rows (0.1%) per refresh")
    full, inc, strategy = bench.compare("item_stats", "events_big", delta, args.repeat)
    print(f"  full refresh        {full:7.2f} s\n  incremental refresh {inc:7.2f} s   ({strategy})")
    print(f"  ratio               {full / inc:7.1f}×   (target ≥ 20×)")
    small_inc = bench.incremental_only("item_stats_small", "events_small", delta, args.repeat)
    big_inc = bench.incremental_only("item_stats", "events_big", delta, args.repeat)
    print(
        f"\nSame delta (+{delta:,} rows), incremental refresh: {small:,} rows {small_inc:.2f} s, "
        f"{big:,} rows {big_inc:.2f} s → {big_inc / small_inc:.2f}× (target ≤ 1.5×)"
    )
    print(f"  (fixed cost of one Spark job + Iceberg commit here: {bench.commit_floor(args.repeat):.2f} s)")
    for table, title in (
        ("enriched", "Join table (events ⋈ items)"),
        ("daily_uv", "Partitioned table (per-day COUNT DISTINCT)"),
    ):
        full, inc, strategy = bench.compare(table, "events_big", delta, args.repeat)
        print(
            f"\n{title} over {big:,} rows, +{delta:,} rows per refresh\n  full refresh        {full:7.2f} s"
            f"\n  incremental refresh {inc:7.2f} s   ({strategy})\n  ratio               {full / inc:7.1f}×"
        )
    if args.scale_rows:
        scale(bench, args)


def scale(bench: Bench, args: argparse.Namespace) -> None:
    """The GROUP BY comparison over a larger source: the full refresh grows, the incremental one does not."""
    rows, delta = args.scale_rows, max(args.scale_rows // 1000, 1)
    timed(f"events_scale ({rows:,} rows)", lambda: bench.events("events_scale", rows))
    timed(
        "item_stats_scale",
        lambda: bench.create(
            "CREATE MATERIALIZED TABLE item_stats_scale FRESHNESS = INTERVAL '1' MINUTE AS SELECT item_id, "
            "count(*) AS pv, sum(price) AS gmv, min(ts) AS first_seen, max(ts) AS last_seen FROM events_scale "
            "GROUP BY item_id"
        ),
    )
    full, inc, strategy = bench.compare("item_stats_scale", "events_scale", delta, args.repeat)
    print(
        f"\nGROUP BY table over {rows:,} source rows, +{delta:,} rows (0.1%) per refresh\n"
        f"  full refresh        {full:7.2f} s\n  incremental refresh {inc:7.2f} s   ({strategy})\n"
        f"  ratio               {full / inc:7.1f}×"
    )


if __name__ == "__main__":
    main()

"""What expectations cost a refresh (issue 49), side by side in one process: a table with three expectations (one
FAIL UPDATE, one DROP ROW, one kept and counted) against its twin without any, same query, same source, both on
Spark ('incremental.engine' = 'spark': a table with expectations never runs in process), as a full recompute of
``--rows`` source rows and as an incremental refresh of ``--delta`` appended rows. Prints each median and the ratio
(the issue's target: ≤ 1.2× at 10 M rows).

Everything runs against a private embedded catalog in a temporary ``MT_MAGIC_HOME``.
Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_expectations.py [--rows 10000000] [--delta 100000]
[--repeat 3] [--phases] [--over-groups]`` (``--over-groups``: one expectation over groups of rows instead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(__file__))

from bench_incremental import Bench  # noqa: E402

QUERY = "SELECT id, item, amount FROM bench.b.src WHERE amount > 1"
EXPECTATIONS = (
    "CONSTRAINT positive EXPECT (amount >= 0) ON VIOLATION FAIL UPDATE, "
    "CONSTRAINT keyed EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW, "
    "CONSTRAINT small EXPECT (amount < 9990)"
)
OVER_GROUPS = "CONSTRAINT one_row_per_id EXPECT (count(*) OVER (PARTITION BY id) = 1) ON VIOLATION FAIL UPDATE"
"""``--over-groups``: one expectation over groups of rows instead (each appended row its own group: the most groups
an append can touch)."""


def ordered(round_: int) -> tuple[str, str]:
    """The tables in the order they refresh in round ``round_``: each goes first every other round."""
    return ("plain", "expected") if round_ % 2 == 0 else ("expected", "plain")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--delta", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--phases", action="store_true", help="also print each refresh's phases (medians)")
    parser.add_argument("--over-groups", action="store_true", help="measure OVER_GROUPS instead of the three")
    args = parser.parse_args()
    from mt_magic.runtime.refresh.run import run_refresh
    from mt_magic.runtime.status import RefreshRequest
    from mt_magic.vocabulary import RefreshTrigger

    bench = Bench(args.master)
    spark, service = bench.spark, bench.service
    spark.sql("CREATE TABLE bench.b.src (id BIGINT, item INT, amount INT) USING iceberg")
    batch = [0]

    def append(rows: int) -> None:
        batch[0] += 1
        seed = batch[0] * 7919
        spark.sql(
            f"INSERT INTO bench.b.src SELECT id + {seed * 10**9}, CAST(id % 1000 AS INT), "
            f"CAST((id * 13 + {seed}) % 10000 AS INT) FROM range({rows})"
        )

    append(args.rows)
    expected, label = (OVER_GROUPS, "group expectation") if args.over_groups else (EXPECTATIONS, "3 expectations")
    for table, constraints in (("plain", ""), ("expected", f"({expected}) ")):
        cell = (
            f"CREATE MATERIALIZED TABLE bench.b.{table} {constraints}WITH ('incremental.engine' = 'spark') "
            f"FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = CONTINUOUS AS {QUERY}"
        )
        bench.create(cell)

    phases: dict[tuple[str, bool], list[tuple[tuple[str, float], ...]]] = {}

    def timed(table: str, full: bool) -> float:
        trigger = RefreshTrigger.MANUAL if full else RefreshTrigger.SCHEDULED
        request = RefreshRequest(f"bench.b.{table}", trigger, datetime.now(timezone.utc))
        started = time.perf_counter()
        outcome = run_refresh(service.engine.context, request, force_full=full)
        took = time.perf_counter() - started
        unphased = ("outside phases", took - sum(t for _, t in outcome.phases))
        phases.setdefault((table, full), []).append((*outcome.phases, unphased))
        return took

    for table in ("plain", "expected"):  # warm-up
        timed(table, True)
    recomputed: dict[str, list[float]] = {"plain": [], "expected": []}
    incremental: dict[str, list[float]] = {"plain": [], "expected": []}
    for i in range(args.repeat):  # the two tables take turns going first, so neither always runs on a warmer JVM
        for table in ordered(i):
            recomputed[table].append(timed(table, True))
    for i in range(args.repeat):
        append(args.delta)
        for table in ordered(i):
            incremental[table].append(timed(table, False))
    full = {t: statistics.median(v) for t, v in recomputed.items()}
    delta = {t: statistics.median(v) for t, v in incremental.items()}
    print(f"rows {args.rows:,}, delta {args.delta:,}, repeat {args.repeat} (medians, seconds)")
    for name, figures in (("full recompute", full), ("incremental append", delta)):
        ratio = figures["expected"] / figures["plain"]
        print(f"{name:20s} plain {figures['plain']:7.2f}  {label} {figures['expected']:7.2f}  ratio {ratio:.2f}x")
    if args.phases:  # where each refresh's time went (medians per phase, seconds; the rest is "outside phases")
        for (table, full), runs in phases.items():
            names = dict.fromkeys(name for run in runs for name, _ in run)
            spent = {n: statistics.median(sum(t for m, t in run if m == n) for run in runs) for n in names}
            print(
                f"{table:9s} {'full' if full else 'incremental':12s}",
                "  ".join(f"{n} {t:.2f}" for n, t in spent.items()),
            )
    bench.close()


if __name__ == "__main__":
    main()

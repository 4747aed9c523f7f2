"""What ``%mt verify`` costs against a full refresh of the same table (issue 49), side by side in one process: a
table of ``--rows`` rows with a PRIMARY KEY, its full recompute (``run_refresh``, forced full), ``verify`` (hashed
per-bucket sums of both sides, only differing buckets compared row by row), and the row-by-row ``EXCEPT ALL`` both
ways the first ``verify`` ran, on the equal table and after one seeded corruption (a row changed by a write that
bypassed the refresh). Prints each median and its ratio to the full refresh.

Everything runs against a private embedded catalog in a temporary ``MT_MAGIC_HOME``.
Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_verify.py [--rows 2000000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(__file__))

from bench_incremental import Bench  # noqa: E402

QUERY = "SELECT id, item, amount, CAST(id AS STRING) AS label FROM bench.b.src WHERE amount > 1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    from mt_magic.runtime.refresh.run import run_refresh
    from mt_magic.runtime.status import RefreshRequest
    from mt_magic.vocabulary import RefreshTrigger

    bench = Bench(args.master)
    spark, service = bench.spark, bench.service
    spark.sql("CREATE TABLE bench.b.src (id BIGINT, item INT, amount INT) USING iceberg")
    spark.sql(
        f"INSERT INTO bench.b.src SELECT id, CAST(id % 1000 AS INT), CAST((id * 13) % 10000 AS INT) "
        f"FROM range({args.rows})"
    )
    name = "bench.b.checked"
    cell = (
        f"CREATE MATERIALIZED TABLE {name} (PRIMARY KEY (id) NOT ENFORCED) WITH ('incremental.engine' = 'spark') "
        f"FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL AS {QUERY}"
    )
    bench.create(cell)

    def full() -> None:
        request = RefreshRequest(name, RefreshTrigger.MANUAL, datetime.now(timezone.utc))
        run_refresh(service.engine.context, request, force_full=True)

    def except_all() -> None:
        expected, actual = spark.sql(QUERY), spark.table(name).select("id", "item", "amount", "label")
        expected.exceptAll(actual).count(), actual.exceptAll(expected).count(), actual.count()

    def median(step: Callable[[], object]) -> float:
        step()  # warm-up
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            step()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    refresh_s = median(full)
    rows = [("full refresh", refresh_s)]
    found = service.verify(name)
    assert found.equal, str(found)
    rows.append(("verify, equal", median(lambda: service.verify(name))))
    rows.append(("EXCEPT ALL, equal", median(except_all)))
    spark.sql(f"UPDATE {name} SET amount = -1 WHERE id = 12345")
    found = service.verify(name)
    assert (found.missing, found.extra, found.keys) == (1, 1, 1), str(found)
    rows.append(("verify, 1 row changed", median(lambda: service.verify(name))))
    print(f"rows {args.rows:,}, repeat {args.repeat}, master {args.master} (medians, seconds)")
    for label, seconds in rows:
        print(f"{label:24s} {seconds:8.2f} s   {seconds / refresh_s:5.2f}x the full refresh")
    bench.close()


if __name__ == "__main__":
    main()

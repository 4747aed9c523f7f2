"""The quickstart's upsert, timed: how long a one-row ``MERGE INTO`` of the keyed source takes to be visible in its
materialized table (issue 46's target: p50 under 1 s, p99 under 2 s), side by side in one run with the same table
pinned to Spark (``'incremental.engine' = 'spark'``) and a full recompute.

Each round upserts one order (a new one, or an existing one moved to another company), then refreshes the three
tables in turn and checks each equals its query. Printed: p50 and p99 seconds per table and the ratios.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_upsert.py [--rounds 30] [--orders 1000]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))

from bench_incremental import Bench  # noqa: E402

QUERY = "SELECT tms_company, count(*) AS order_cnt FROM {src} GROUP BY tms_company"
COMPANIES = ("ZhongTong", "YuanTong", "ShenTong", "YunDa", "JiTu")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--orders", type=int, default=1000, help="orders in the source before the upserts")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    bench = Bench(args.master)
    src = bench.name("tms_source")
    bench.spark.sql(f"CREATE TABLE {src} (order_id STRING NOT NULL, tms_company STRING NOT NULL) USING iceberg")
    bench.spark.sql(f"ALTER TABLE {src} SET IDENTIFIER FIELDS order_id")
    companies = ", ".join(f"'{c}'" for c in COMPANIES)
    bench.spark.sql(
        f"INSERT INTO {src} SELECT format_string('%06d', id), element_at(array({companies}), CAST(id % 5 AS INT) + 1) "
        f"FROM range({args.orders})"
    )
    query = QUERY.format(src=src)
    tables = {"default": "", "spark": "WITH ('incremental.engine' = 'spark') ", "full": ""}
    for name, options in tables.items():
        bench.create(f"CREATE MATERIALIZED TABLE tms_{name} {options}FRESHNESS = INTERVAL '30' SECOND AS {query}")
    rng = random.Random(46)
    seconds: dict[str, list[float]] = {name: [] for name in tables}
    strategies: dict[str, set[str]] = {name: set() for name in tables}
    for _ in range(args.rounds):
        order = f"{rng.randrange(args.orders + args.rounds):06d}"
        company = rng.choice(COMPANIES)
        bench.spark.sql(
            f"MERGE INTO {src} t USING (SELECT '{order}' AS order_id, '{company}' AS tms_company) s "
            "ON t.order_id = s.order_id WHEN MATCHED THEN UPDATE SET t.tms_company = s.tms_company "
            "WHEN NOT MATCHED THEN INSERT *"
        )
        expected = sorted(bench.spark.sql(query).collect())
        for name in tables:
            run = bench.refresh(f"tms_{name}", full=name == "full")
            seconds[name].append(run.seconds)
            where = " · in process" if "in process" in run.strategy else ""
            strategies[name].add(run.strategy.split(" · ")[0] + where)
            assert sorted(bench.spark.table(bench.name(f"tms_{name}")).collect()) == expected, name
    print(f"One-row upserts of a {args.orders:,}-order source, {args.rounds} rounds; seconds to visible")
    print(f"  {'table':<8} {'p50':>6} {'p99':>6} {'mean':>6}  strategies")
    for name in tables:
        values = seconds[name]
        print(
            f"  {name:<8} {percentile(values, 0.5):6.2f} {percentile(values, 0.99):6.2f} "
            f"{statistics.mean(values):6.2f}  {'; '.join(sorted(strategies[name]))}"
        )
    p50 = {name: percentile(values, 0.5) for name, values in seconds.items()}
    ratios = ", ".join(f"{name}/default {p50[name] / p50['default']:.1f}×" for name in ("spark", "full"))
    print(f"  p50 ratios: {ratios}")


if __name__ == "__main__":
    main()

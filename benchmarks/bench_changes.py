"""What a change that is not an append costs, side by side in one run: the matrix of issue 46.

For each source layout (copy-on-write v2, merge-on-read v2 with position deletes, merge-on-read v3 with deletion
vectors) a ``--rows`` source of ``ITEMS`` groups takes, in turn, an append of 0.1 %, a ``MERGE`` that updates 0.1 %
of its rows spread over the whole table, a ``DELETE`` of 0.1 % and an ``UPDATE`` of one row. After each change
three twins of every shape refresh: the default (ADAPTIVE), one pinned with ``'incremental' = 'always'`` and a
FULL one refreshed by hand. Printed per cell: seconds, the engine and Spark jobs of each, the ratio full/always and
ADAPTIVE against the cheaper of the two. Every table is checked against its query after every refresh
(``--no-check`` skips it).

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_changes.py [--rows 10000000]
[--layouts cow,mor,v3] [--shapes aggregate,filter,join] [--changes append,merge,delete,update]``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from bench_incremental import ITEMS, Bench, timed  # noqa: E402

LAYOUTS = {
    "cow": "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'copy-on-write', "
    "'write.update.mode' = 'copy-on-write', 'write.merge.mode' = 'copy-on-write')",
    "mor": "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
    "v3": "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
}
SHAPES = {
    "aggregate": "SELECT item_id, count(*) AS pv, sum(price) AS gmv, max(ts) AS last_seen FROM {src} GROUP BY item_id",
    "filter": "SELECT id, item_id, price FROM {src} WHERE price > 50",
    "join": "SELECT e.id, e.price, i.brand FROM {src} e JOIN {items} i ON e.item_id = i.item_id",
}
POLICIES = {"default": "", "always": "WITH ('incremental' = 'always') ", "full": ""}


def changes(rows: int) -> dict[str, str]:
    """Each change as SQL over ``{src}``; ``{step}`` varies the rows it touches from one round to the next."""
    every = 1000  # 0.1 %
    return {
        "append": (
            "INSERT INTO {src} SELECT id + {base}, CAST(pmod(hash(id + {base}), " + str(ITEMS) + ") AS INT), "
            "CAST(((id * 13) % 10000) / 100 AS DECIMAL(10, 2)), TIMESTAMP '2024-12-02 00:00:00' "
            f"FROM range({rows // every})"
        ),
        "merge": (
            "MERGE INTO {src} t USING (SELECT id, CAST(((id * 7) % 10000) / 100 AS DECIMAL(10, 2)) AS price "
            f"FROM range(0, {rows}, {every}) ) s ON t.id = s.id + {{step}} "
            "WHEN MATCHED THEN UPDATE SET price = s.price"
        ),
        "delete": f"DELETE FROM {{src}} WHERE id % {every} = {{step}} + 500",
        "update": "UPDATE {src} SET price = price + 1 WHERE id = {step} * 7 + 3",
    }


def source(bench: Bench, name: str, layout: str, rows: int) -> None:
    bench.spark.sql(
        f"CREATE TABLE {name} (id BIGINT, item_id INT, price DECIMAL(10, 2), ts TIMESTAMP) USING iceberg "
        + LAYOUTS[layout]
    )
    bench.spark.sql(
        f"INSERT INTO {name} SELECT id, CAST(pmod(hash(id), {ITEMS}) AS INT), "
        "CAST(((id * 13) % 10000) / 100 AS DECIMAL(10, 2)), "
        "TIMESTAMP '2024-12-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, (id * 7) % 86400) "
        f"FROM range({rows})"
    )


def check(bench: Bench, table: str, query: str) -> None:
    name = bench.name(table)
    query_rows = bench.spark.sql(query)
    differ = (
        query_rows.exceptAll(bench.spark.table(name)).count() + bench.spark.table(name).exceptAll(query_rows).count()
    )
    if differ:
        raise AssertionError(f"{table} differs from its query by {differ} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--layouts", default="cow,mor,v3")
    parser.add_argument("--shapes", default="aggregate,filter,join")
    parser.add_argument("--changes", default="append,merge,delete,update")
    parser.add_argument("--rounds", type=int, default=1, help="each change this many times (median)")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    bench = Bench(args.master)
    bench.items()
    items = bench.name("items")
    print(f"Changes that are not appends — {args.rows:,} source rows, {ITEMS:,} groups; seconds per refresh")
    print(
        f"  {'layout':<6} {'change':<7} {'shape':<9} {'default':>16} {'always':>16} {'full':>16} "
        f"{'full/always':>11} {'adaptive/best':>13}"
    )
    for layout in args.layouts.split(","):
        src = f"src_{layout}"
        timed(f"{src} ({args.rows:,} rows)", lambda s=src, lay=layout: source(bench, s, lay, args.rows))
        shapes = args.shapes.split(",")
        for shape in shapes:
            for policy, with_clause in POLICIES.items():
                mode = "REFRESH_MODE = FULL " if policy == "full" else "REFRESH_MODE = CONTINUOUS "
                bench.create(
                    f"CREATE MATERIALIZED TABLE {shape}_{policy}_{layout} {with_clause}"
                    f"FRESHNESS = INTERVAL '1' MINUTE {mode}AS " + SHAPES[shape].format(src=src, items=items)
                )
        base = args.rows
        for change in args.changes.split(","):
            runs: dict[tuple[str, str], list] = {}
            for step in range(args.rounds):
                sql = changes(args.rows)[change].format(src=src, step=step + 1, base=base)
                bench.spark.sql(sql)
                base += args.rows // 1000
                for shape in shapes:
                    for policy in POLICIES:
                        table = f"{shape}_{policy}_{layout}"
                        run = bench.refresh(table, full=policy == "full")
                        runs.setdefault((shape, policy), []).append(run)
                        if not args.no_check:
                            check(bench, table, SHAPES[shape].format(src=src, items=items))
            for shape in shapes:
                cells = {}
                for policy in POLICIES:
                    picked = sorted(runs[(shape, policy)], key=lambda r: r.seconds)[len(runs[(shape, policy)]) // 2]
                    engine = (
                        "dk"
                        if "DuckDB" in picked.strategy
                        else ("re" if policy == "full" or picked.strategy.startswith("full") else "sp")
                    )
                    cells[policy] = (picked.seconds, f"{picked.seconds:7.2f} {engine} {picked.jobs:>3}j")
                best = min(cells["always"][0], cells["full"][0])
                print(
                    f"  {layout:<6} {change:<7} {shape:<9} {cells['default'][1]:>16} {cells['always'][1]:>16} "
                    f"{cells['full'][1]:>16} {cells['full'][0] / cells['always'][0]:10.1f}× "
                    f"{cells['default'][0] / best:12.2f}×",
                    flush=True,
                )
                for policy in ("default", "always"):
                    print(f"      {policy}: {runs[(shape, policy)][-1].strategy[:150]}", flush=True)
    print("  engine: dk = in process (DuckDB), sp = incremental on Spark, re = recompute on Spark; j = Spark jobs")
    bench.close()


if __name__ == "__main__":
    main()

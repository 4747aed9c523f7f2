"""What a refresh costs, side by side in one process: mt_magic incremental vs mt_magic full vs a plain Spark
``INSERT OVERWRITE`` of the same query (what open-source Spark's declarative pipelines run on every update).

Four parts, each printing medians and ratios:

1. **Floor** — a GROUP BY over ``--rows`` source rows receiving 10,000 new rows: incremental (in process, and
   a twin table pinned to Spark with ``'incremental.engine' = 'spark'``; the same pairs for a filter and a daily
   GROUP BY into tables partitioned by day) and full refresh, their ratios, where
   the incremental refresh's time goes (median per phase: metadata, plan, deltas, strategy, check, write, read
   back), Spark jobs per refresh, and a refresh whose sources did not change (no Spark job).
2. **Change rates** — five tables over one ``--matrix-rows`` source (a filter, an aggregate, a join, an outer
   join and a partitioned COUNT DISTINCT) at 0.01 %, 0.1 %, 1 %, 10 % and 50 % appended: incremental (the
   strategy the engine chose, ADAPTIVE included), full and INSERT OVERWRITE, and the aggregate and the filter
   once more with ``'incremental' = 'always'`` so the crossover where a recompute becomes cheaper shows.
3. **Scaling** — the GROUP BY's incremental refresh at a fixed delta as its source grows 1×, 10×, 100×
   (target ≤ 1.5×).
4. **Dimension changes** — the outer join when its dimension is updated (0.1 %, 1 %, 10 % of its rows): the
   touched join keys recomputed (ADAPTIVE, and pinned with ``'always'``; "rows": pinned, with the table's
   ``write.merge.mode`` = merge-on-read, so the MERGE that replaces the touched keys' rows writes delete files
   instead of rewriting data files) against full and INSERT OVERWRITE.
5. **Crossover** — where a recompute becomes cheaper than the incremental refresh: a filter, an aggregate and
   the partitioned COUNT DISTINCT pinned to incremental (``'always'``) against a full refresh of the same
   table, as one append grows to 10 %, 20 %, 30 %, 50 % and 67 % of the source's rows (the fraction ADAPTIVE
   weighs); a twin table under the default policy shows what ADAPTIVE chose at each fraction.
7. **Joins** — the join and the outer join over ``--rows`` facts and the ``ITEMS``-row dimension, +1,000 and
   +10,000 facts per refresh: incremental (in process: the delta joined with the dimension in DuckDB; and a twin
   pinned to Spark) against a full refresh of the same table, and their ratio (target ≥ 20× at 10 M rows).
6. **Merge-on-read sources** — the aggregate and the filter over a ``--matrix-rows`` source written with merge-on-read
   (format v2 position deletes, format v3 deletion vectors) after a DELETE and an UPDATE: incremental against a
   full refresh of the same table, after the same change, and their ratio.

Everything runs against a private embedded catalog in a temporary ``MT_MAGIC_HOME``.
Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_incremental.py [--rows 10000000]
[--matrix-rows 2000000] [--scale-base 100000] [--repeat 3]
[--parts floor,rates,scaling,dimension,crossover,mor,joins]``.
"""

from __future__ import annotations

import argparse
import atexit
import os
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

DAYS = 10
ITEMS = 10_000
USERS = 1_000_000
FLOOR_DELTA = 10_000
RATES = (0.0001, 0.001, 0.01, 0.1, 0.5)
GROUP_BY = (
    "SELECT item_id, count(*) AS pv, sum(price) AS gmv, min(ts) AS first_seen, max(ts) AS last_seen "
    "FROM {src} GROUP BY item_id"
)
PARTITIONED_BY_DAY = {
    "filter": "SELECT ds, item_id, user_id, price FROM {src} WHERE price > 50",
    "daily GROUP BY": "SELECT ds, item_id, count(*) AS pv, sum(price) AS gmv FROM {src} GROUP BY ds, item_id",
}
"""The floor's other pairs, in tables partitioned by day: an append of the delta, and a merge that reads and
rewrites only the day the delta touches."""
TABLES = {
    "filter": "filtered",
    "aggregate": "agg",
    "join": "joined",
    "outer join": "outer_joined",
    "partitioned": "daily_uv",
    "aggregate always": "agg_always",
    "filter always": "filtered_always",
}
SHAPES = {
    "filter": ("", "SELECT item_id, user_id, price, ds FROM {src} WHERE price > 50"),
    "aggregate": ("", "SELECT item_id, count(*) AS pv, sum(price) AS gmv FROM {src} GROUP BY item_id"),
    "join": ("", "SELECT e.ds, e.item_id, e.price, i.brand FROM {src} e JOIN items i ON e.item_id = i.item_id"),
    "outer join": (
        "",
        "SELECT e.item_id, e.user_id, e.price, i.brand FROM {src} e LEFT JOIN items i ON e.item_id = i.item_id",
    ),
    "partitioned": (
        "PARTITIONED BY (ds) ",
        "SELECT ds, item_id, count(*) AS pv, count(DISTINCT user_id) AS uv FROM {src} GROUP BY ds, item_id",
    ),
}


ALWAYS = ("aggregate always", "filter always")
"""Shapes also kept with ``'incremental' = 'always'``: their incremental cost at every rate, for the crossover."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[10_000_000],
        help="source rows of the floor's GROUP BY; several sizes, comma-separated, are measured in turn",
    )
    parser.add_argument("--matrix-rows", type=int, default=2_000_000, help="source rows of the change-rate tables")
    parser.add_argument("--scale-base", type=int, default=100_000, help="smallest source of the scaling part")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per figure (median reported)")
    parser.add_argument("--parts", default="floor,rates,scaling,dimension,crossover,mor,joins")
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
        self._closed = False
        atexit.register(self.close)  # a benchmark that ends without close(), or fails, leaves no catalog server behind
        self._batch = 0
        self._runs = 0
        self.engines: Counter = Counter()
        """Incremental refreshes by the engine that ran them."""

    def name(self, table: str) -> str:
        return f"bench.b.{table}"

    def close(self) -> None:
        """Stop Spark and the private ``MT_MAGIC_HOME``'s catalog server (once; also at exit)."""
        from mt_magic.catalog.embedded import stop_embedded_server

        if self._closed:
            return
        self._closed = True
        self.conn.close()
        stop_embedded_server()

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

    def items(self, table: str = "items") -> None:
        """The dimension: ``ITEMS`` rows, copy-on-write (the dimension part updates it through the changelog;
        part 6 measures merge-on-read sources)."""
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {table} (item_id INT, brand STRING, category STRING) USING iceberg "
            "TBLPROPERTIES ('write.update.mode' = 'copy-on-write')"
        )
        self.spark.sql(
            f"INSERT INTO {table} SELECT CAST(id AS INT), concat('b', id % 97), concat('c', id % 13) "
            f"FROM range({ITEMS})"
        )

    def create(self, cell: str) -> None:
        from mt_magic.sql import parse_cell

        for statement in parse_cell(cell):
            result = self.service.execute(statement)
            if result.refresh is not None:
                result.refresh.result(timeout=3600)

    def refresh(self, table: str, full: bool = False) -> Run:
        """One refresh through the same path the manager runs (a scheduled one, or a forced recompute)."""
        from mt_magic.runtime.refresh.run import run_refresh
        from mt_magic.runtime.status import RefreshRequest, RefreshTrigger
        from mt_magic.vocabulary import RefreshKind

        self._runs += 1
        trigger = RefreshTrigger.MANUAL if full else RefreshTrigger.SCHEDULED
        group = f"bench-{self._runs}"
        request = RefreshRequest(self.name(table), trigger, datetime.now(timezone.utc), job_group=group)
        started = time.perf_counter()
        outcome = run_refresh(self.service.engine.context, request, force_full=full)
        seconds = time.perf_counter() - started
        jobs = len(self.spark.sparkContext.statusTracker().getJobIdsForGroup(group))
        if outcome.kind is RefreshKind.INCREMENTAL:
            self.engines[outcome.engine] += 1
        return Run(seconds, outcome.strategy, dict(outcome.phases), jobs)

    def engine_share(self) -> str:
        """How many incremental refreshes ran in process (DuckDB) rather than on Spark."""
        from mt_magic.vocabulary import RefreshEngine

        total = sum(self.engines.values())
        local = self.engines[RefreshEngine.IN_PROCESS]
        share = f"{local / total:.0%}" if total else "-"
        return f"in-process share: {local} of {total} incremental refreshes ({share}); the rest ran on Spark"

    def insert_overwrite(self, plain: str, query: str) -> float:
        """Plain Spark: recompute the query into an Iceberg table with INSERT OVERWRITE."""
        started = time.perf_counter()
        self.spark.sql(f"INSERT OVERWRITE {plain} {query}")
        return time.perf_counter() - started

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

    def source_rows(self, table: str) -> int:
        return int(self.spark.sql(f"SELECT count(*) FROM {table}").first()[0])


@dataclass(frozen=True)
class Run:
    """One timed refresh."""

    seconds: float
    strategy: str
    phases: dict[str, float]
    jobs: int


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def timed(label: str, action: Callable[[], object]) -> None:
    started = time.perf_counter()
    action()
    print(f"  setup: {label} in {time.perf_counter() - started:.1f} s", flush=True)


def floor(bench: Bench, args: argparse.Namespace) -> None:
    """The GROUP BY at each of ``--rows``: incremental vs full, the phases, the jobs and a no-op refresh."""
    for rows in args.rows:
        floor_at(bench, rows, args.repeat)


def floor_at(bench: Bench, rows: int, repeat: int) -> None:
    source, table, twin = f"events_floor_{rows}", f"item_stats_{rows}", f"item_stats_spark_{rows}"
    timed(f"{source} ({rows:,} rows)", lambda: bench.events(source, rows))
    for name, head in ((table, ""), (twin, "WITH ('incremental.engine' = 'spark') ")):
        timed(
            name,
            lambda n=name, h=head: bench.create(
                f"CREATE MATERIALIZED TABLE {n} {h}FRESHNESS = INTERVAL '1' MINUTE AS " + GROUP_BY.format(src=source)
            ),
        )
    pairs = [(table, twin)]
    for index, query in enumerate(PARTITIONED_BY_DAY.values()):
        pair = (f"daily_{index}_{rows}", f"daily_{index}_spark_{rows}")
        for name, head in zip(pair, ("", "WITH ('incremental.engine' = 'spark') "), strict=True):
            bench.create(
                f"CREATE MATERIALIZED TABLE {name} PARTITIONED BY (ds) {head}FRESHNESS = INTERVAL '1' MINUTE AS "
                + query.format(src=source)
            )
        pairs.append(pair)
    for _ in range(2):  # warm-up: JIT, first-use class loading
        bench.append(source, FLOOR_DELTA)
        for name in (t for pair in pairs for t in pair):
            bench.refresh(name)
    incremental: list[Run] = []
    on_spark: list[Run] = []
    full: list[Run] = []
    daily_runs: dict[str, list[Run]] = defaultdict(list)
    for _ in range(max(repeat, 5)):
        bench.append(source, FLOOR_DELTA)
        incremental.append(bench.refresh(table))
        on_spark.append(bench.refresh(twin))
        for name in (t for pair in pairs[1:] for t in pair):
            daily_runs[name].append(bench.refresh(name))
    for _ in range(repeat):
        bench.append(source, FLOOR_DELTA)
        full.append(bench.refresh(table, full=True))
    noop = [bench.refresh(table) for _ in range(max(repeat, 5))]
    inc, spark, whole = (median([r.seconds for r in runs]) for runs in (incremental, on_spark, full))
    print(f"\n1. Floor — GROUP BY over {rows:,} source rows, +{FLOOR_DELTA:,} rows per refresh")
    print(f"  full refresh          {whole:7.3f} s")
    jobs = f"{incremental[-1].strategy}; {incremental[-1].jobs} Spark job(s)"
    print(f"  incremental refresh   {inc:7.3f} s   ({jobs}; target ≤ 0.15 s)")
    jobs = f"{on_spark[-1].strategy}; {on_spark[-1].jobs} Spark job(s)"
    print(f"  incremental on Spark  {spark:7.3f} s   ({jobs}; 'incremental.engine' = 'spark')")
    print(f"  ratio                 {whole / inc:7.1f}×  (target ≥ 10× at 10 M rows, ≥ 50× at 100 M)")
    print(f"  on Spark / in process {spark / inc:7.1f}×")
    for label, (local_table, remote_table) in zip(PARTITIONED_BY_DAY, pairs[1:], strict=True):
        local, remote = (median([r.seconds for r in daily_runs[t]]) for t in (local_table, remote_table))
        print(
            f"  {label} PARTITIONED BY (ds): in process {local:.3f} s, on Spark {remote:.3f} s "
            f"({remote / local:.1f}×; {daily_runs[local_table][-1].strategy})"
        )
    for label, runs in (("in process", incremental), ("on Spark", on_spark)):
        phases: dict[str, list[float]] = defaultdict(list)
        for run in runs:
            for name, seconds in run.phases.items():
                phases[name].append(seconds)
        print(f"  phases, {label:<12}  " + "  ".join(f"{n} {median(v) * 1000:.0f} ms" for n, v in phases.items()))
    print(
        f"  no source changed     {median([r.seconds for r in noop]) * 1000:7.1f} ms, "
        f"{max(r.jobs for r in noop)} Spark job(s)  (target ≤ 20 ms, no job)"
    )
    print(f"  (one empty Spark job + Iceberg commit here: {bench.commit_floor(repeat):.3f} s)", flush=True)


def rates(bench: Bench, args: argparse.Namespace) -> None:
    """Five shapes over one source at five change rates: incremental vs full vs INSERT OVERWRITE."""
    rows = args.matrix_rows
    timed(f"events ({rows:,} rows)", lambda: bench.events("events", rows))
    bench.items()
    for shape, (head, query) in SHAPES.items():
        table = TABLES[shape]
        sql = query.format(src="events")
        timed(
            table,
            lambda t=table, h=head, s=sql: bench.create(
                f"CREATE MATERIALIZED TABLE {t} {h}FRESHNESS = INTERVAL '1' MINUTE AS {s}"
            ),
        )
        bench.spark.sql(f"CREATE TABLE plain_{table} USING iceberg {head}AS {sql}")
    always = "WITH ('incremental' = 'always') "
    for shape in ALWAYS:
        bench.create(
            f"CREATE MATERIALIZED TABLE {TABLES[shape]} {always}FRESHNESS = INTERVAL '1' MINUTE AS "
            + SHAPES[shape.removesuffix(" always")][1].format(src="events")
        )
    print(f"\n2. Change rates — over {rows:,} source rows (growing as rows are appended); medians in seconds")
    print(
        f"  {'table':<12} {'change':>7} {'incremental':>11} {'full':>7} {'INSERT OVERWRITE':>17} "
        f"{'full/inc':>8} {'INS/inc':>8}  strategy"
    )
    for rate in RATES:
        repeat = args.repeat if rate < 0.1 else 1
        times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        strategies: dict[str, str] = {}
        for _ in range(repeat):
            bench.append("events", max(1, int(rows * rate)))
            for shape in (*SHAPES, *ALWAYS):
                run = bench.refresh(TABLES[shape])
                times[shape]["inc"].append(run.seconds)
                strategies[shape] = run.strategy
            for shape, (_, query) in SHAPES.items():
                table = TABLES[shape]
                times[shape]["full"].append(bench.refresh(table, full=True).seconds)
                times[shape]["ins"].append(bench.insert_overwrite(f"plain_{table}", query.format(src="events")))
        for shape in (*SHAPES, *ALWAYS):
            base = shape.removesuffix(" always")
            inc = median(times[shape]["inc"])
            full = median(times[shape]["full"] or times[base]["full"])
            ins = median(times[shape]["ins"] or times[base]["ins"])
            print(
                f"  {shape:<12} {rate * 100:6.2f}% {inc:11.3f} {full:7.3f} {ins:17.3f} {full / inc:7.1f}× "
                f"{ins / inc:7.1f}×  {strategies[shape][:90]}",
                flush=True,
            )


def dimension(bench: Bench, args: argparse.Namespace) -> None:
    """The outer join when its dimension changes: the touched join keys recomputed, against a recompute."""
    rows = args.matrix_rows
    timed(f"facts ({rows:,} rows)", lambda: bench.events("facts", rows))
    bench.items("dim_items")
    query = SHAPES["outer join"][1].format(src="facts").replace("JOIN items", "JOIN dim_items")
    rows_only = "WITH ('incremental' = 'always', 'write.merge.mode' = 'merge-on-read') "
    for table, head in (("dim_auto", ""), ("dim_always", "WITH ('incremental' = 'always') "), ("dim_rows", rows_only)):
        timed(
            table,
            lambda t=table, h=head: bench.create(
                f"CREATE MATERIALIZED TABLE {t} {h}FRESHNESS = INTERVAL '1' MINUTE AS {query}"
            ),
        )
    bench.spark.sql(f"CREATE TABLE plain_dim USING iceberg AS {query}")
    print(
        f"\n4. Dimension changes — the outer join over {rows:,} facts, UPDATE of the {ITEMS:,}-row dimension; seconds"
    )
    print(
        f"  {'items updated':>13} {'auto':>7} {'always':>7} {'rows':>7} {'full':>7} {'INSERT OVERWRITE':>17}"
        "  strategy (auto)"
    )
    for rate in (0.001, 0.01, 0.1):
        touched = max(1, int(ITEMS * rate))
        times: dict[str, list[float]] = defaultdict(list)
        strategy = ""
        for round_ in range(args.repeat):
            stride = ITEMS // touched
            bench.spark.sql(
                f"UPDATE dim_items SET brand = concat(brand, 'x') WHERE item_id % {stride} = {round_ % stride}"
            )
            auto = bench.refresh("dim_auto")
            times["auto"].append(auto.seconds)
            strategy = auto.strategy
            times["always"].append(bench.refresh("dim_always").seconds)
            times["rows"].append(bench.refresh("dim_rows").seconds)
            times["full"].append(bench.refresh("dim_auto", full=True).seconds)
            times["ins"].append(bench.insert_overwrite("plain_dim", query))
        cells = "".join(f"{median(times[k]):8.3f}" for k in ("auto", "always", "rows", "full"))
        print(f"  {touched:>13,}{cells} {median(times['ins']):17.3f}  {strategy[:90]}", flush=True)


def scaling(bench: Bench, args: argparse.Namespace) -> None:
    """The GROUP BY's incremental refresh at a fixed delta over sources 1×, 10× and 100× as large."""
    base, delta = args.scale_base, 1_000
    medians = []
    print(f"\n3. Scaling — GROUP BY, +{delta:,} rows per refresh, source 1× / 10× / 100× {base:,} rows")
    for factor in (1, 10, 100):
        source, table = f"events_x{factor}", f"item_stats_x{factor}"
        timed(f"{source} ({base * factor:,} rows)", lambda s=source, f=factor: bench.events(s, base * f))
        bench.create(
            f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '1' MINUTE AS " + GROUP_BY.format(src=source)
        )
        bench.append(source, delta)
        bench.refresh(table)  # warm-up
        runs = []
        for _ in range(max(args.repeat, 5)):
            bench.append(source, delta)
            runs.append(bench.refresh(table).seconds)
        medians.append(median(runs))
        print(f"  {factor:>3}× ({base * factor:>11,} rows)  incremental {medians[-1]:.3f} s", flush=True)
    print(f"  100× / 1×            {medians[-1] / medians[0]:.2f}×  (target ≤ 1.5×)")


MERGE_ON_READ = (
    "TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
)


def merge_on_read(bench: Bench, args: argparse.Namespace) -> None:
    """The GROUP BY and the filter over a merge-on-read source (v2 position deletes, v3 deletion vectors) after a
    DELETE and an UPDATE of about 0.1 % of its rows: incremental (the rows of the touched data files at both
    snapshots) against a full refresh of the same table, measured in turn after the same change."""
    rows = args.matrix_rows
    print(f"\n6. Merge-on-read sources — {rows:,} rows, DELETE + UPDATE of ~0.1 % per refresh; seconds")
    print(f"  {'source':<22} {'table':<10} {'incremental':>11} {'full':>7} {'full/inc':>8}  strategy")
    for version, deletes in ((2, "position deletes"), (3, "deletion vectors")):
        source = f"events_mor_v{version}"
        timed(f"{source} ({rows:,} rows)", lambda s=source: bench.events(s, rows))
        bench.spark.sql(f"ALTER TABLE {source} SET " + MERGE_ON_READ.format(version=version))
        tables = {"aggregate": f"agg_mor_v{version}", "filter": f"filtered_mor_v{version}"}
        for shape, table in tables.items():
            head, query = SHAPES[shape]
            bench.create(
                f"CREATE MATERIALIZED TABLE {table} {head}FRESHNESS = INTERVAL '1' MINUTE AS "
                + query.format(src=source)
            )
        inc: dict[str, list[float]] = defaultdict(list)
        full: dict[str, list[float]] = defaultdict(list)
        strategies: dict[str, str] = {}
        for step in range(args.repeat):
            users = f"user_id % 1000 = {step}"
            bench.spark.sql(f"DELETE FROM {source} WHERE {users} AND item_id % 2 = 0")
            bench.spark.sql(f"UPDATE {source} SET price = price + 1 WHERE {users} AND item_id % 2 = 1")
            for shape, table in tables.items():
                run = bench.refresh(table)
                inc[shape].append(run.seconds)
                strategies[shape] = run.strategy
                full[shape].append(bench.refresh(table, full=True).seconds)
        for shape in tables:
            ratio = median(full[shape]) / median(inc[shape])
            print(
                f"  {f'v{version} {deletes}':<22} {shape:<10} {median(inc[shape]):11.3f} {median(full[shape]):7.3f} "
                f"{ratio:7.2f}×  {strategies[shape][:60]}",
                flush=True,
            )


CROSSOVER_FRACTIONS = (0.1, 0.2, 0.3, 0.5, 0.67)
CROSSOVER_SHAPES = ("filter", "aggregate", "partitioned")


def crossover(bench: Bench, args: argparse.Namespace) -> None:
    """Incremental ('always') against full as one append grows to a large fraction of the source.

    Each step appends ``f / (1 - f)`` times the source's rows, so the append is the fraction ``f`` of the rows
    the refresh pins — the number ADAPTIVE compares with its threshold. A fresh source per shape keeps the steps
    independent of the other shapes' refreshes.
    """
    rows = args.matrix_rows
    print(f"\n5. Crossover — one append of a growing fraction of a {rows:,}-row source; seconds")
    print(f"  {'table':<12} {'fraction':>8} {'appended':>11} {'always':>7} {'full':>7} {'full/inc':>8}  ADAPTIVE chose")
    for shape in CROSSOVER_SHAPES:
        head, query = SHAPES[shape]
        source = f"events_cross_{shape}"
        timed(f"{source} ({rows:,} rows)", lambda s=source: bench.events(s, rows))
        always, auto = f"cross_{shape}_always", f"cross_{shape}_auto"
        sql = query.format(src=source)
        for table, policy in ((always, "WITH ('incremental' = 'always') "), (auto, "")):
            bench.create(f"CREATE MATERIALIZED TABLE {table} {head}{policy}FRESHNESS = INTERVAL '1' MINUTE AS {sql}")
        crossed = None
        for fraction in CROSSOVER_FRACTIONS:
            current = bench.source_rows(source)
            appended = round(current * fraction / (1 - fraction))
            bench.append(source, appended)
            inc = bench.refresh(always)
            chose = bench.refresh(auto).strategy
            full = bench.refresh(always, full=True)
            if crossed is None and full.seconds < inc.seconds:
                crossed = fraction
            print(
                f"  {shape:<12} {fraction * 100:7.0f}% {appended:11,} {inc.seconds:7.3f} {full.seconds:7.3f} "
                f"{full.seconds / inc.seconds:7.2f}×  {chose[:80]}",
                flush=True,
            )
        where = f"at {crossed * 100:.0f} %" if crossed is not None else f"not up to {CROSSOVER_FRACTIONS[-1]:.0%}"
        print(f"  {shape:<12} a recompute is cheaper {where}")


JOIN_DELTAS = (1_000, 10_000)


def joins(bench: Bench, args: argparse.Namespace) -> None:
    """The join and the outer join at each of ``--rows`` facts: incremental in process and on Spark vs full."""
    bench.items("join_items")
    for rows in args.rows:
        source = f"events_join_{rows}"
        timed(f"{source} ({rows:,} rows)", lambda s=source, n=rows: bench.events(s, n))
        tables = {}
        for shape in ("join", "outer join"):
            sql = SHAPES[shape][1].format(src=source).replace("JOIN items", "JOIN join_items")
            pair = (f"{TABLES[shape]}_{rows}", f"{TABLES[shape]}_spark_{rows}")
            for name, head in zip(pair, ("", "WITH ('incremental.engine' = 'spark') "), strict=True):
                timed(name, lambda n=name, h=head, q=sql: bench.create(
                    f"CREATE MATERIALIZED TABLE {n} {h}FRESHNESS = INTERVAL '1' MINUTE AS {q}"
                ))  # fmt: skip
            tables[shape] = pair
        for _ in range(2):  # warm-up
            bench.append(source, JOIN_DELTAS[0])
            for pair in tables.values():
                for name in pair:
                    bench.refresh(name)
        print(f"\n7. Joins — over {rows:,} facts and a {ITEMS:,}-row dimension; medians in seconds")
        print(f"  {'table':<11} {'delta':>7} {'full':>7} {'in process':>10} {'on Spark':>9} {'full/inc':>8}  strategy")
        for delta in JOIN_DELTAS:
            times: dict[str, list[Run]] = defaultdict(list)
            for _ in range(max(args.repeat, 3)):
                bench.append(source, delta)
                for shape, (local, remote) in tables.items():
                    times[f"{shape} local"].append(bench.refresh(local))
                    times[f"{shape} remote"].append(bench.refresh(remote))
            for _ in range(args.repeat):
                bench.append(source, delta)
                for shape, (local, _) in tables.items():
                    times[f"{shape} full"].append(bench.refresh(local, full=True))
            for shape in tables:
                full, local, remote = (
                    median([r.seconds for r in times[f"{shape} {k}"]]) for k in ("full", "local", "remote")
                )
                print(
                    f"  {shape:<11} {delta:7,} {full:7.3f} {local:10.3f} {remote:9.3f} {full / local:7.1f}×  "
                    f"{times[f'{shape} local'][-1].strategy[:70]}",
                    flush=True,
                )


def main() -> None:
    args = parse_args()
    bench = Bench(args.master)
    parts = {p.strip() for p in args.parts.split(",")}
    try:
        print(
            f"mt_magic refresh benchmark — Spark {bench.spark.version}, {bench.spark.sparkContext.master}, "
            f"{os.cpu_count()} cores; median of {args.repeat} (at least 5 for the floor and scaling)",
            flush=True,
        )
        if "floor" in parts:
            floor(bench, args)
        if "rates" in parts:
            rates(bench, args)
        if "scaling" in parts:
            scaling(bench, args)
        if "dimension" in parts:
            dimension(bench, args)
        if "crossover" in parts:
            crossover(bench, args)
        if "mor" in parts:
            merge_on_read(bench, args)
        if "joins" in parts:
            joins(bench, args)
        print(f"\n{bench.engine_share()}", flush=True)
    finally:
        bench.close()


if __name__ == "__main__":
    main()

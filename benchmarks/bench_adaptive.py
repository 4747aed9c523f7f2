"""Does ADAPTIVE pick the cheaper strategy? A replay of changes against an oracle that runs both (issue 39).

One copy-on-write source of ``--rows`` events (id, item, user, price, day) and three query shapes over it: an
aggregate (GROUP BY item: a merge over appends, the touched groups recomputed after updates and deletes), a
filter (the delta appended, or inserts and deletes applied) and a distinct count per day in a table partitioned
by day (the touched days recomputed). Each shape is three tables: ``'incremental' = 'always'``, ``'never'`` and
the default, ADAPTIVE. For each change fraction (0.1 % … 80 %) the source receives, in turn:

- an append of that fraction of its rows, into the newest day or over every day (skewed and uniform in turn);
- an update of that fraction through ``MERGE``, spread over every day by a hash of the id (uniform);
- the same concentrated in the fewest days (skewed: fewer data files rewritten);
- a delete of that fraction (uniform and skewed in turn), so the source returns to about ``--rows``;

and after each change every table is refreshed. The oracle is the cheaper of the two pinned tables' measured
times; ADAPTIVE is charged the measured time of the strategy it chose (its twin's), so a right choice costs
exactly the oracle (its own runs are printed too). ADAPTIVE learns from its own record as it goes.

Both strategies are timed warm, as in a kernel that has refreshed before: a warm-up source with its own pinned
tables of every shape takes one change of each kind first (unmeasured; the measured tables get no record from
it), so the JVM's first run of a code path (class loading, code generation) is not charged to whichever strategy
happens to meet it first; and the three tables of a shape refresh in a rotating order, so no strategy is always
the first to read a change's new files.

Printed: every case, then one table — right choices (strict, and within 10 % of the oracle: a tie on this
machine), and the total seconds of ADAPTIVE, the oracle, always-incremental and always-full.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_adaptive.py [--rows 300000] [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_incremental import Bench, timed  # noqa: E402

FRACTIONS = (0.001, 0.01, 0.05, 0.2, 0.5, 0.8)
QUICK_FRACTIONS = (0.001, 0.05, 0.5)
DAYS = 10
ITEMS = 10_000
SHAPES = {
    "aggregate": ("", "SELECT item_id, count(*) AS n, sum(price) AS gmv FROM src GROUP BY item_id"),
    "filter": ("", "SELECT id, item_id, price, ds FROM src WHERE price > 50"),
    "daily distinct": (
        "PARTITIONED BY (ds) ",
        "SELECT ds, count(DISTINCT user_id) AS users, count(*) AS n FROM src GROUP BY ds",
    ),
}


def day(index: int) -> str:
    return f"2024-12-{1 + index:02d}"


POLICIES = {"always": "'incremental' = 'always'", "never": "'incremental' = 'never'", "auto": None}
POLICY_ORDERS = (
    ("always", "never", "auto"),
    ("never", "auto", "always"),
    ("auto", "always", "never"),
)
"""The three tables of a shape refresh in turn in each of these orders: each goes first as often."""
COPY_ON_WRITE = (
    "'write.delete.mode' = 'copy-on-write', 'write.update.mode' = 'copy-on-write', 'write.merge.mode' = 'copy-on-write'"
)
TIE = 1.10
"""Within this factor of the oracle a choice counts as a tie (the two strategies cost the same here)."""


@dataclass(frozen=True)
class Case:
    """One change and one shape: both strategies measured, ADAPTIVE's choice."""

    shape: str
    change: str
    fraction: float
    incremental_s: float
    full_s: float
    chose_incremental: bool
    auto_s: float
    reason: str
    choice: bool = True
    """False: the pinned table could not refresh incrementally either (a fallback): there was nothing to choose."""

    @property
    def oracle_s(self) -> float:
        return min(self.incremental_s, self.full_s)

    @property
    def chosen_s(self) -> float:
        return self.incremental_s if self.chose_incremental else self.full_s

    @property
    def right(self) -> bool:
        return self.chose_incremental == (self.incremental_s <= self.full_s)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300_000, help="source rows (ADAPTIVE weighs from 100,000)")
    parser.add_argument("--quick", action="store_true", help=f"fractions {QUICK_FRACTIONS} only")
    parser.add_argument("--master", default="local[2]")
    return parser.parse_args()


class Replay:
    """The source, its nine tables, and the changes."""

    def __init__(self, bench: Bench, rows: int) -> None:
        self.bench, self.rows, self.next_id = bench, rows, 0
        self.skewed_from = 0
        """Moves the days a skewed change touches after each skewed delete (which empties part of its days)."""
        self.turn = 0
        """Counts the shapes refreshed so far: which order of the three tables is next (:data:`POLICY_ORDERS`)."""

    def setup(self) -> None:
        spark = self.bench.spark
        spark.sql(
            "CREATE TABLE src (id BIGINT, item_id INT, user_id BIGINT, price DECIMAL(10, 2), ds STRING) "
            f"USING iceberg PARTITIONED BY (ds) TBLPROPERTIES ({COPY_ON_WRITE})"
        )
        self.append(self.rows)
        for shape, (head, query) in SHAPES.items():
            for policy, option in POLICIES.items():
                with_ = f"WITH ({option}) " if option else ""
                self.bench.create(
                    f"CREATE MATERIALIZED TABLE {self.table(shape, policy)} {head}{with_}"
                    f"FRESHNESS = INTERVAL '1' MINUTE AS {query}"
                )

    @staticmethod
    def table(shape: str, policy: str) -> str:
        return f"{shape.replace(' ', '_')}_{policy}"

    def count(self) -> int:
        return self.bench.source_rows("src")

    def append(self, rows: int, skewed: bool = False) -> None:
        """New rows over every day (uniform), or all in the newest day (skewed: the usual stream of events)."""
        first, self.next_id = self.next_id, self.next_id + rows
        days = (
            f"'{day(DAYS - 1)}'" if skewed else f"CAST(date_add(DATE '2024-12-01', CAST(id % {DAYS} AS INT)) AS STRING)"
        )
        self.bench.spark.sql(f"""INSERT INTO src
            SELECT id, CAST((id * 31) % {ITEMS} AS INT), (id * 17) % 100000,
                   CAST(((id * 13) % 10000) / 100 AS DECIMAL(10, 2)), {days}
            FROM range({first}, {first + rows}) AS r(id)""")

    def rows_where(self, fraction: float, skewed: bool) -> str:
        """A predicate over about ``fraction`` of the rows: spread over every day by a hash of the id (uniform), or
        concentrated in the fewest days, the newest first (skewed: fewer data files to rewrite)."""
        if not skewed:
            return f"pmod(hash(id), 100000) < {max(1, round(fraction * 100_000))}"
        days = min(DAYS, max(1, math.ceil(fraction * DAYS)))
        share = min(1.0, fraction * DAYS / days)
        first = (self.skewed_from + days) % DAYS
        chosen = ", ".join(f"'{day(d % DAYS)}'" for d in range(first, first + days))
        return f"ds IN ({chosen}) AND pmod(hash(id), 100000) < {max(1, round(share * 100_000))}"

    def update(self, fraction: float, skewed: bool) -> None:
        self.bench.spark.sql(f"""MERGE INTO src t USING (SELECT id FROM src WHERE {self.rows_where(fraction, skewed)}) s
            ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.price = t.price + 1, t.user_id = t.user_id + 1""")

    def delete(self, fraction: float, skewed: bool) -> None:
        self.bench.spark.sql(f"DELETE FROM src WHERE {self.rows_where(fraction, skewed)}")
        if skewed:
            self.skewed_from += 1

    def changes(self, fraction: float, index: int) -> list[tuple[str, object]]:
        """The changes of one fraction, in order (each a label and the action)."""
        skewed_append, skewed_delete = index % 2 == 0, index % 2 == 1
        grown = fraction / (1 - fraction)
        return [
            (
                f"append {'skewed' if skewed_append else 'uniform'}",
                lambda: self.append(round(self.count() * grown), skewed_append),
            ),
            ("update uniform", lambda: self.update(fraction, skewed=False)),
            ("update skewed", lambda: self.update(fraction, skewed=True)),
            (f"delete {'skewed' if skewed_delete else 'uniform'}", lambda: self.delete(fraction, skewed_delete)),
        ]

    def warm_up(self) -> None:
        """One change of each kind through pinned twins of every shape over a small source of their own (the
        measured tables are not refreshed: their record starts with the replay)."""
        spark, rows = self.bench.spark, max(1_000, self.rows // 100)
        spark.sql("CREATE TABLE warm USING iceberg PARTITIONED BY (ds) AS SELECT * FROM src LIMIT 0")
        spark.sql(f"ALTER TABLE warm SET TBLPROPERTIES ({COPY_ON_WRITE})")
        spark.sql(f"INSERT INTO warm SELECT * FROM src LIMIT {rows}")
        for shape, (head, query) in SHAPES.items():
            for policy in ("always", "never"):
                self.bench.create(
                    f"CREATE MATERIALIZED TABLE warm_{self.table(shape, policy)} {head}WITH ({POLICIES[policy]}) "
                    f"FRESHNESS = INTERVAL '1' MINUTE AS {query.replace('FROM src', 'FROM warm')}"
                )
        for change in (
            f"INSERT INTO warm SELECT * FROM src LIMIT {rows // 10}",
            "MERGE INTO warm t USING (SELECT DISTINCT id FROM warm WHERE pmod(hash(id), 10) = 0) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET t.price = t.price + 1",
            "DELETE FROM warm WHERE pmod(hash(id), 10) = 1",
        ):
            spark.sql(change)
            for shape in SHAPES:
                for policy in ("always", "never"):
                    self.bench.refresh(f"warm_{self.table(shape, policy)}")

    def measure(self, change: str, fraction: float) -> list[Case]:
        from mt_magic.vocabulary import RefreshKind

        cases = []
        for shape in SHAPES:
            self.turn += 1
            order = POLICY_ORDERS[self.turn % len(POLICY_ORDERS)]
            runs = {policy: self.bench.refresh(self.table(shape, policy)) for policy in order}
            inc, full, auto = runs["always"], runs["never"], runs["auto"]
            chose = auto.strategy.startswith(RefreshKind.INCREMENTAL.value)
            choice = inc.strategy.startswith(RefreshKind.INCREMENTAL.value)
            case = Case(shape, change, fraction, inc.seconds, full.seconds, chose, auto.seconds, auto.strategy, choice)
            cases.append(case)
        return cases


def report(every: list[Case]) -> None:
    cases = [c for c in every if c.choice]
    if len(cases) < len(every):
        print(f"\n{len(every) - len(cases)} case(s) left out: the pinned table fell back too (no choice to make)")
    right = sum(c.right for c in cases)
    tied = sum(c.right or c.chosen_s <= TIE * c.oracle_s for c in cases)
    adaptive, oracle = sum(c.chosen_s for c in cases), sum(c.oracle_s for c in cases)
    always, never = sum(c.incremental_s for c in cases), sum(c.full_s for c in cases)
    own = sum(c.auto_s for c in cases)
    n = len(cases)
    print(f"\nADAPTIVE against the oracle over {n} refreshes (seconds, measured on this machine)")
    print(f"  {'':<34} {'total s':>8} {'× oracle':>9}")
    print(f"  {'oracle (cheaper measured)':<34} {oracle:8.1f} {1:9.2f}")
    print(f"  {'ADAPTIVE (its choice, twin timed)':<34} {adaptive:8.1f} {adaptive / oracle:9.2f}")
    print(f"  {'ADAPTIVE (its own runs)':<34} {own:8.1f} {own / oracle:9.2f}")
    print(f"  {'always incremental':<34} {always:8.1f} {always / oracle:9.2f}")
    print(f"  {'always full':<34} {never:8.1f} {never / oracle:9.2f}")
    print(
        f"  right choices: {right}/{n} = {right / n:.1%} strict; {tied}/{n} = {tied / n:.1%} within {TIE:.0%} of oracle"
    )


def show_record(bench: Bench, table: str) -> None:
    """The newest refresh's decision record as the commit's summary holds it, and ``%mt history``'s text."""
    from mt_magic.runtime.refresh.decision_summary import DECISION_KEY
    from mt_magic.widgets.static_views import HistoryView

    name = bench.name(table)
    summary = bench.service.workspace.catalog.load(name).snapshots[-1].summary
    print(f"\n{table}: the newest commit's {DECISION_KEY} = {summary.get(DECISION_KEY)}")
    history = bench.service.history(name)
    print(repr(HistoryView(table, history.records[:3], history.freshness)))


def main() -> None:
    from mt_magic.catalog.embedded import stop_embedded_server

    args = parse_args()
    bench = Bench(args.master)
    replay = Replay(bench, args.rows)
    fractions = QUICK_FRACTIONS if args.quick else FRACTIONS
    cases: list[Case] = []
    try:
        print(
            f"ADAPTIVE replay — Spark {bench.spark.version}, {bench.spark.sparkContext.master}, {os.cpu_count()} "
            f"cores, {args.rows:,} source rows, fractions {', '.join(f'{f:.1%}' for f in fractions)}",
            flush=True,
        )
        timed("source and 9 tables", replay.setup)
        timed("warm-up (6 pinned tables over their own source, 3 changes; not measured)", replay.warm_up)
        print(f"  {'shape':<15} {'change':<16} {'frac':>6} {'inc s':>7} {'full s':>7} {'chose':>5} ok  reason")
        for index, fraction in enumerate(fractions):
            for label, action in replay.changes(fraction, index):
                action()  # type: ignore[operator]
                for case in replay.measure(label, fraction):
                    cases.append(case)
                    print(
                        f"  {case.shape:<15} {case.change:<16} {fraction:6.1%} {case.incremental_s:7.2f} "
                        f"{case.full_s:7.2f} {'inc' if case.chose_incremental else 'full':>5} "
                        f"{('✓' if case.right else '✗') if case.choice else '-'}   {case.reason[:90]}",
                        flush=True,
                    )
        report(cases)
        show_record(bench, replay.table("aggregate", "auto"))
    finally:
        bench.conn.close()
        stop_embedded_server()


if __name__ == "__main__":
    main()

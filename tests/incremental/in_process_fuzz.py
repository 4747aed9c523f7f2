"""A differential fuzzer for the in-process refresh path, the way Velox's expression fuzzer tests Velox against
Presto: generated queries over generated adversarial data, each refreshed through the real runtime (pyiceberg
reads the files Spark wrote, DuckDB computes, pyiceberg commits — or Spark, where the gate or a data guard says
so) and compared EXACTLY (``EXCEPT ALL`` both ways, in Spark) with Spark's answer to the same query at the same
snapshots, in a session with the same settings (time zone, ANSI mode).

One *batch*: a source with a random subset of typed columns, a random session (time zone, ANSI), many
materialized tables over it (the queries the gate accepts; a sample of those it rejects, which must run on
Spark), then rounds of one to three appended snapshots, every table refreshed and compared after each round.
Every third batch also has a dimension, ``dim``, that most of its queries join the source with (inner, LEFT and
other joins on keys of like types, with ON and WHERE conditions over both); in a quarter of its rounds the
dimension receives appends too (Spark's to refresh, compared all the same).
A share of the batches (``chains``: batch 0, then evenly, one in ``1 / chains``) are *chain batches*: tables on
tables. Over the batch's tables (level 1, drawn exactly as in any batch, and a few twins pinned to Spark with
``'incremental.engine' = 'spark'``) come level-2 tables over randomly chosen level-1 tables, and level-3 tables over
level-2 ones, by the same generators over the upstream table's output columns (each typed as Spark stores it, its
values borrowed from :data:`COLUMNS` by type), some of them joins of the materialized table with a plain one (the
dimension, else the source); twins at every level. Their rounds also change the base tables by ``MERGE INTO``
updates (and inserts), ``DELETE`` and compaction (``rewrite_data_files``), and some refresh through the manager's
own cascade (``ALTER MATERIALIZED TABLE <level 1> REFRESH`` with ``cascade``) instead of table by table, upstream
first. Each table is compared with its own query over its inputs at the snapshots it recorded; a difference is a
disagreement when the table or any table it reads ever committed in process. Everything a chain batch adds is
drawn from a second generator, so its level-1 tables and appends are those the batch drew before chains
(``MT_FUZZ_CHAINS=0`` replays a soak from before them exactly).

A *case* is one table compared after one refresh. ``%mt explain``'s engine line is checked against the engine
that ran on every case: "appends [to …] in process" must run in process when only the source received appends,
unless a data guard sent the refresh to Spark (logged); "Spark (…)" must never run in process.

Every batch's source may also be merge-on-read (position deletes) or format v3 (deletion vectors), and half the
rounds of a batch that is not a chain batch change it by a row-level ``MERGE``/``DELETE`` (or compact it), drawn
from a third generator (``MT_FUZZ_ROW_LEVEL=0`` leaves them out): a GROUP BY then retracts the removed rows in
process ("merge the signed delta", counted as ``retractions_in_process``) or on Spark.

Some tables carry expectations (:mod:`fuzz_expectations`: ``DROP ROW`` twins equal to their query filtered by the
condition, a ``FAIL UPDATE`` table held by injected bad rows, ``main`` unchanged while held), drawn from a fourth
generator (``MT_FUZZ_EXPECTATIONS``: their share; ``0`` leaves them out).

Seeded by ``random.Random``: a failing seed replays exactly (given the same PySpark line).
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

import fuzz_expectations
from incremental_testing import MOR, V3, qualified, refresh, run
from notebook_settings import session_settings

from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.sql.query.in_process_gate import unsupported
from mt_magic.vocabulary import HIDDEN_COLUMN_PREFIX, RefreshEngine

LONG_MAX, INT_MAX = 2**63 - 1, 2**31 - 1
ZONES = ("UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham", "Europe/Berlin", "+05:30", "Etc/UTC")
TRUNCATED = ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "hour", "day")
NOT_TRUNCATED = ("MILLISECOND", "MICROSECOND", "mm", "dd", "MON", "YY")
RUN_LOGGER = "mt_magic.runtime.refresh.incremental.in_process.run"
JOIN_EVERY = 3
ROW_LEVEL = os.environ.get("MT_FUZZ_ROW_LEVEL", "1") != "0"
"""Row-level changes (and merge-on-read and v3 sources) in batches that are not chain batches."""
ROW_LEVEL_SHARE = float(os.environ["MT_FUZZ_ROW_LEVEL_SHARE"]) if os.environ.get("MT_FUZZ_ROW_LEVEL_SHARE") else None
"""A soak's knob: the share of rounds, in every batch, chains included, that change the source by a row-level
``UPDATE``, ``MERGE`` or ``DELETE`` (or compact it), and chain batches' sources drawn merge-on-read or v3 too. Unset,
the mix is the default run's (and replays hold)."""
RETRACTION = Strategy.AGGREGATE_RETRACT.label
"""Every third batch (0, 3, …: the default run's one batch too) has a second table, ``dim``, that most of its
queries join the source with."""


def _dec(text: str, precision: int, scale: int) -> str:
    return f"CAST('{text}' AS DECIMAL({precision}, {scale}))"


@dataclass(frozen=True)
class Column:
    """A source column: its name, Spark SQL type, the Iceberg type the gate reads, and its value pool (SQL)."""

    name: str
    sql_type: str
    iceberg: str
    values: tuple[str, ...]
    extremes: tuple[str, ...] = ()
    group_key: bool = True


COLUMNS = (
    Column("i", "INT", "int", ("0", "1", "-1", "2", "3", "7"), (str(INT_MAX), str(-INT_MAX - 1))),
    Column("l", "BIGINT", "long", ("0", "1", "-5", "40", str(2**40)), (str(LONG_MAX), str(-LONG_MAX - 1))),
    Column(
        "d10",
        "DECIMAL(10,2)",
        "decimal(10, 2)",
        tuple(_dec(v, 10, 2) for v in ("0", "1.50", "-0.01", "2", "12.25")),
        tuple(_dec(v, 10, 2) for v in ("99999999.99", "-99999999.99")),
    ),
    Column(
        "d38",
        "DECIMAL(38,10)",
        "decimal(38, 10)",
        tuple(_dec(v, 38, 10) for v in ("0", "1.5", "12655110134975178", "0.0000000001", "-3.25")),
        tuple(_dec(v, 38, 10) for v in ("9999999999999999999999999999.9999999999", "-9999999999999999999999999999")),
    ),
    Column("d5", "DECIMAL(5,0)", "decimal(5, 0)", tuple(_dec(v, 5, 0) for v in ("0", "1", "-2", "99999"))),
    Column(
        "s",
        "STRING",
        "string",
        ("'a'", "'g1'", "'g2'", "''", "'é'", "'日本'", "'A'", "'it\\'s'", "'z\\\\'", "'😀'", "' a'"),
        ("CAST(unhex('FF') AS STRING)", "CAST(unhex('C328') AS STRING)"),
    ),
    Column("b", "BOOLEAN", "boolean", ("true", "false")),
    Column(
        "dt",
        "DATE",
        "date",
        ("DATE '2024-03-10'", "DATE '1970-01-01'", "DATE '2024-12-31'"),
        ("DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1582-10-10'"),
    ),
    Column(
        "ts",
        "TIMESTAMP",
        "timestamptz",
        (
            "TIMESTAMP '2024-03-10 02:30:00'",
            "TIMESTAMP '2024-11-03 01:30:00'",
            "TIMESTAMP '1970-01-01 00:00:00'",
            "TIMESTAMP '2024-03-10 10:30:00.123456'",
        ),
        ("TIMESTAMP '0001-01-01 00:00:00'", "TIMESTAMP '9999-12-31 23:59:59.999999'"),
    ),
    Column(
        "tn",
        "TIMESTAMP_NTZ",
        "timestamp",
        ("TIMESTAMP_NTZ '2024-03-10 02:30:00'", "TIMESTAMP_NTZ '1999-12-31 23:59:59'"),
        ("TIMESTAMP_NTZ '1900-01-01 00:00:00'",),
    ),
    Column(
        "f",
        "FLOAT",
        "float",
        ("CAST(1.5 AS FLOAT)", "CAST(0.1 AS FLOAT)", "CAST(-0.0 AS FLOAT)"),
        ("CAST('NaN' AS FLOAT)",),
        False,
    ),
    Column("x", "DOUBLE", "double", ("1.5D", "0.1D", "1.2655110134975178E16"), ("CAST('NaN' AS DOUBLE)",), False),
)
NUMERIC = ("INT", "BIGINT", "DECIMAL")


def literal(rng: random.Random, column: Column, strict: bool = False) -> str:
    """A literal to compare ``column`` with: usually its own kind, sometimes another kind (the gate must refuse
    what it has not proven; Spark may reject it at CREATE); ``strict``: its own kind, numbers of any precision."""
    roll = rng.random()
    if strict and column.sql_type.startswith(NUMERIC) and roll < 0.4:
        return _number(rng, exponent=False)
    if roll < 0.55 or strict:
        return rng.choice(column.values + column.extremes)
    if roll < 0.75 and column.sql_type.startswith(NUMERIC):
        return _number(rng)
    return rng.choice(
        (
            _number(rng),
            "NULL",
            "true",
            "'a'",
            "'2024-03-10'",
            "DATE '2024-03-10'",
            "TIMESTAMP '2024-03-10 02:30:00'",
            "1.2655110134975178E16",
            "1.5D",
            "2.5E0",
        )
    )


def _number(rng: random.Random, exponent: bool = True) -> str:
    """Integer and decimal literals of many precisions and scales (Spark types them by their digits)."""
    kind = rng.randrange(6 if exponent else 5)
    if kind == 0:
        return str(rng.choice((0, 1, 3, 7, 40, INT_MAX, INT_MAX + 1, LONG_MAX, 2**40)))
    if kind == 1:
        return f"-{rng.choice((1, 5, 2**40, LONG_MAX))}"
    if kind == 2:
        return rng.choice(("1.5", "0.01", "12.25", "1.50", "99999999.99", "-0.01", "2.0"))
    if kind == 3:
        return rng.choice(("0.0000000000000000000000000000001", "0.0000000001", "12655110134975178.0"))
    if kind == 4:
        scale = rng.randint(0, 12)
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        return str(Decimal(digits).scaleb(-scale))
    return rng.choice(("1E3", "1.5E0", "1.2655110134975178E16"))


def predicate(rng: random.Random, columns: list[Column], strict: bool, depth: int = 0) -> str:
    """A random condition: every comparison, IN, BETWEEN, IS form, <=>, NOT, AND/OR (``strict``: of like types,
    as the gate accepts them; else anything, which the gate must refuse unless proven)."""
    if depth < 2 and rng.random() < 0.35:
        op = rng.choice(("AND", "OR"))
        return f"({predicate(rng, columns, strict, depth + 1)} {op} {predicate(rng, columns, strict, depth + 1)})"
    if depth < 2 and rng.random() < 0.1:
        return f"NOT ({predicate(rng, columns, strict, depth + 1)})"
    column = rng.choice(columns)
    booleans = [c for c in columns if c.sql_type == "BOOLEAN"]
    kind = rng.randrange(7)
    if kind == 0:
        op = rng.choice(("=", "<>", "!=", "<", "<=", ">", ">=", "<=>"))
        alike = [c for c in columns if c.sql_type.split("(")[0] == column.sql_type.split("(")[0]]
        other = rng.choice(alike if strict else columns).name if rng.random() < 0.2 else literal(rng, column, strict)
        return f"{column.name} {op} {other}"
    if kind == 1:
        items = ", ".join(literal(rng, column, strict) for _ in range(rng.randint(1, 4)))
        return f"{column.name} {rng.choice(('IN', 'NOT IN'))} ({items})"
    if kind == 2:
        low, high = literal(rng, column, strict), literal(rng, column, strict)
        return f"{column.name} {rng.choice(('', 'NOT '))}BETWEEN {low} AND {high}"
    if kind == 3:
        return f"{column.name} IS {rng.choice(('', 'NOT '))}NULL"
    if kind == 4:
        if strict:
            column = rng.choice(booleans) if booleans else column
        return f"{column.name} IS {rng.choice(('', 'NOT '))}{rng.choice(('TRUE', 'FALSE'))}"
    if kind == 5 and booleans:
        return rng.choice(booleans).name
    return f"{column.name} {rng.choice(('=', '<', '>='))} {literal(rng, column, strict)}"


def truncation(rng: random.Random, columns: list[Column], strict: bool) -> str | None:
    """``date_trunc(unit, column)`` of a TIMESTAMP column (``strict``), or of any time column and unit (which the
    gate must refuse unless proven); ``None`` when there is no time column."""
    kinds = ("TIMESTAMP",) if strict else ("TIMESTAMP", "TIMESTAMP_NTZ", "DATE")
    stamps = [c for c in columns if c.sql_type in kinds]
    if not stamps:
        return None
    units = TRUNCATED if strict or rng.random() < 0.5 else NOT_TRUNCATED
    return f"date_trunc('{rng.choice(units)}', {rng.choice(stamps).name})"


def query(rng: random.Random, columns: list[Column]) -> str:
    """A random query of a shape the in-process path may accept: projection, SELECT *, DISTINCT, GROUP BY with
    count/sum/min/max; most typed as the gate accepts them, the rest anything (which it must refuse unless
    proven)."""
    strict = rng.random() < 0.7
    every = columns
    if strict:
        columns = [c for c in columns if c.group_key] or columns
    where = f" WHERE {predicate(rng, columns, strict)}" if rng.random() < 0.85 else ""
    shape = rng.randrange(5)
    picked = rng.sample(columns, rng.randint(1, min(3, len(columns))))
    if shape == 0:
        items = [c.name for c in picked]
        if rng.random() < 0.2:
            items.append(f"{rng.choice(('1', chr(39) + 'k' + chr(39), '1.50', 'true'))} AS lit")
        trunc = truncation(rng, every, strict) if rng.random() < 0.2 else None
        if trunc is not None:
            items.append(f"{trunc} AS tr")
        return f"SELECT {', '.join(items)} FROM src{where}"
    if shape == 1:
        return f"SELECT * FROM src{where}" if every == columns or not strict else f"SELECT {picked[0].name} FROM src"
    if shape == 2:
        return f"SELECT DISTINCT {', '.join(c.name for c in picked)} FROM src{where}"
    keys = [c for c in picked if c.group_key][: rng.randint(0, 2)] if shape == 3 else []
    aggregates = []
    for index in range(rng.randint(1, 4)):
        column = rng.choice(columns)
        functions = ("count", "sum", "sum", "min", "max", "count_star") + (() if strict else ("count_distinct",))
        function = rng.choice(functions)
        if function == "sum" and not column.sql_type.startswith(NUMERIC) and (strict or rng.random() < 0.8):
            column = rng.choice([c for c in columns if c.sql_type.startswith(NUMERIC)] or [column])
        text = {"count_star": "count(*)", "count_distinct": f"count(DISTINCT {column.name})"}.get(
            function, f"{function}({column.name})"
        )
        aggregates.append(f"{text} AS a{index}")
    shown, grouped = [k.name for k in keys], [k.name for k in keys]
    trunc = truncation(rng, every, strict) if shape == 3 and rng.random() < 0.4 else None
    if trunc is not None:  # e.g. per hour: the key is an expression, grouped by itself
        shown.append(f"{trunc} AS k_tr")
        grouped.append(trunc)
    group = f" GROUP BY {', '.join(grouped)}" if grouped else ""
    return f"SELECT {', '.join(shown + aggregates)} FROM src{where}{group}"


JOIN_KINDS = ("JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN")
OTHER_JOINS = ("FULL JOIN", "RIGHT JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN", "CROSS JOIN")


def join_query(rng: random.Random, facts: list[Column], dims: list[Column]) -> str:
    """A random query over ``src f`` joined with ``dim d`` (an inner or LEFT join on a key of like types, an ON
    and a WHERE over both sides' columns; a projection, DISTINCT, or an aggregate); the rest anything, which the
    gate must refuse unless proven. ``{src}``/``{dim}`` stand for the tables' names."""
    from dataclasses import replace

    strict = rng.random() < 0.7
    if strict:
        facts, dims = [c for c in facts if c.group_key] or facts, [c for c in dims if c.group_key] or dims
    left = [replace(c, name=f"f.{c.name}") for c in facts]
    right = [replace(c, name=f"d.{c.name}") for c in dims]
    both = left + right
    alike = [(a, b) for a in left for b in right if a.sql_type.split("(")[0] == b.sql_type.split("(")[0]]
    fact, dim = rng.choice(alike) if alike and (strict or rng.random() < 0.7) else (rng.choice(left), rng.choice(right))
    on = f"{fact.name} {rng.choice(('=', '=', '=', '<=>'))} {dim.name}"
    if rng.random() < 0.3:
        on += f" AND {predicate(rng, both, strict, depth=1)}"
    kind = rng.choice(JOIN_KINDS if strict or rng.random() < 0.5 else OTHER_JOINS)
    if kind == "CROSS JOIN":
        on = ""
    where = f" WHERE {predicate(rng, both if 'SEMI' not in kind and 'ANTI' not in kind else left, strict)}"
    where = where if rng.random() < 0.6 else ""
    shown = left if "SEMI" in kind or "ANTI" in kind else both
    picked = rng.sample(shown, rng.randint(1, min(4, len(shown))))
    items = [f"{c.name} AS {c.name.replace('.', '_')}" for c in picked]
    shape = rng.randrange(6)
    if shape == 0 and not strict:
        items = ["*"]
    head = "SELECT DISTINCT" if shape == 1 else "SELECT"
    group = ""
    if shape == 2:  # an aggregate over the join: the gate accepts it, eligibility sends it to Spark
        key = rng.choice(picked)
        items = [f"{key.name} AS {key.name.replace('.', '_')}", "count(*) AS n"]
        numeric = [c for c in shown if c.sql_type.startswith(NUMERIC)]
        if numeric:
            items.append(f"sum({rng.choice(numeric).name}) AS total")
        group = f" GROUP BY {key.name}"
    condition = f" ON {on}" if on else ""
    return f"{head} {', '.join(items)} FROM {{src}} f {kind} {{dim}} d{condition}{where}{group}"


CHAINS = 0.25
"""The share of chain batches by default (``MT_FUZZ_CHAINS``): batch 0, so the bounded run has one, then 4, 8, …"""
CHAIN_TABLES = 2
"""Level-2 tables of a chain batch (and half as many level-3 ones), twins aside."""
TWINS = 0.25
"""The share of a chain batch's tables, at every level, that get a twin pinned to Spark."""
CHAIN_REJECTED = 0.5
"""The share of the chain queries the gate refuses that are created all the same (their refreshes run on Spark,
reading the upstream's commits as any downstream table does)."""
CASCADE = 0.35
"""The share of a chain batch's rounds refreshed by the manager's cascade from each level-1 table."""
SQL_TYPES = {
    "int": "INT", "long": "BIGINT", "string": "STRING", "boolean": "BOOLEAN", "date": "DATE",
    "timestamptz": "TIMESTAMP", "timestamp": "TIMESTAMP_NTZ", "float": "FLOAT", "double": "DOUBLE",
}  # fmt: skip
DECIMAL_TEXTS = ("0", "1", "-2", "1.50", "-0.01", "12.25", "-3.25", "99999", "12655110134975178")


def chain_batch(number: int, share: float) -> bool:
    """Whether batch ``number`` builds tables on tables: batch 0, then evenly one batch in every ``1 / share``."""
    return share > 0 and math.ceil(number * share) < math.ceil((number + 1) * share)


def output_column(name: str, iceberg: str) -> Column | None:
    """A materialized table's column as a source column of the tables over it: typed as Spark stores it, its values
    borrowed from :data:`COLUMNS` by type (a decimal's: those that fit its precision, cast to it); ``None``: a type
    the generators do not use."""
    found = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", iceberg)
    if found:
        precision, scale = int(found[1]), int(found[2])
        fitting = [t for t in DECIMAL_TEXTS if abs(Decimal(t)) < Decimal(10) ** (precision - scale)]
        values = tuple(_dec(t, precision, scale) for t in fitting)
        return Column(name, f"DECIMAL({precision},{scale})", iceberg, values)
    sql_type = SQL_TYPES.get(iceberg)
    like = next((c for c in COLUMNS if c.sql_type == sql_type), None)
    if like is None:
        return None
    return Column(name, like.sql_type, iceberg, like.values, like.extremes, like.group_key)


def row(rng: random.Random, columns: list[Column], extreme: float) -> str:
    cells = []
    for column in columns:
        roll = rng.random()
        if roll < 0.12:
            cells.append(f"CAST(NULL AS {column.sql_type})")
        elif roll < 0.12 + extreme and column.extremes:
            cells.append(rng.choice(column.extremes))
        else:
            cells.append(rng.choice(column.values))
    return f"({', '.join(cells)})"


@dataclass
class Counts:
    """What a fuzz run did; ``disagreements`` lists each (seed, batch, query, detail)."""

    queries: int = 0
    joins: int = 0
    """Queries over the source joined with a dimension (join batches)."""
    rejected: int = 0
    spark_invalid: int = 0
    tables: int = 0
    refreshes: int = 0
    in_process: int = 0
    joins_in_process: int = 0
    guarded: int = 0
    compared: int = 0
    both_failed: int = 0
    disagreements: list[tuple[str, str]] = field(default_factory=list)
    engine_line_mismatches: list[tuple[str, str]] = field(default_factory=list)
    spark_side: list[tuple[str, str]] = field(default_factory=list)
    refresh_failures: list[tuple[str, str]] = field(default_factory=list)
    """Refreshes that failed on Spark where Spark's query over the same inputs answers, without Spark's own
    ``[INTERNAL_ERROR]``: a failure of mt_magic's (Spark) strategies, not of the in-process path — never a wrong
    answer, reported apart from the Spark-side cases (e.g. a join key filtered with literals of another type)."""
    order_dependent: int = 0
    """Cases where Spark's query overflowed a partial sum under ANSI and the table equals the exact sums."""
    chain_batches: int = 0
    chain_queries: int = 0
    """Queries over a materialized table (levels 2 and 3)."""
    chain_tables: int = 0
    twins: int = 0
    """Tables pinned to Spark with the same query as another (every level of a chain batch)."""
    chain_refreshes: int = 0
    chain_in_process: int = 0
    """Refreshes of level-2 and level-3 tables that ran in process."""
    cascaded: int = 0
    """Refreshes run by the manager's cascade (their engine line is not checked)."""
    cascade_failed: int = 0
    """Cascades that failed (a refresh in them failed): their tables were then refreshed one by one."""
    chain_compared: int = 0
    depth2_compared: int = 0
    depth3_compared: int = 0
    merges: int = 0
    updates: int = 0
    deletes: int = 0
    retractions_in_process: int = 0
    after_row_level: int = 0
    """Refreshes after a round whose changes were not only appends (a row-level change, a compaction, the other
    table's appends)."""
    after_row_level_in_process: int = 0
    """Refreshes after a row-level change that merged the signed delta in process."""
    compactions: int = 0
    changes_refused: int = 0
    """Base-table changes Spark refused (a MERGE's value under ANSI)."""
    expectation_tables: int = 0
    """Tables with expectations (``DROP ROW`` twins and guarded tables: :mod:`fuzz_expectations`)."""
    expectation_refreshes: int = 0
    dropped_rows: int = 0
    """Rows the ``DROP ROW`` expectations' refreshes recorded as dropped."""
    bad_batches: int = 0
    held: int = 0
    """Refreshes held by a ``FAIL UPDATE`` expectation (``main`` checked unchanged)."""
    published_after_held: int = 0
    expectation_failures: list[tuple[str, str]] = field(default_factory=list)
    """A table with expectations unlike its filtered query, a held refresh that moved ``main``, or a row on ``main``
    that fails a ``FAIL UPDATE`` expectation."""
    seconds: float = 0.0
    timing: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, what: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.timing[what] = self.timing.get(what, 0.0) + time.monotonic() - started

    def summary(self) -> dict[str, object]:
        """The counts as JSON-ready values (lists as their details), for a soak run in shards to add up."""
        return {key: list(value) if isinstance(value, list) else value for key, value in vars(self).items()}

    def line(self) -> str:
        return (
            f"queries {self.queries} (joins {self.joins}; gate refused {self.rejected}, invalid in Spark "
            f"{self.spark_invalid}), tables {self.tables}, refreshes {self.refreshes} (in process {self.in_process}, "
            f"joins in process {self.joins_in_process}, sent to Spark by a "
            f"data guard {self.guarded}), cases compared {self.compared}, both engines failed {self.both_failed}, "
            f"Spark's partial-sum overflow only {self.order_dependent}, "
            f"disagreements {len(self.disagreements)}, engine-line mismatches {len(self.engine_line_mismatches)}, "
            f"Spark-side differences {len(self.spark_side)}, refreshes failed where Spark's query answers "
            f"{len(self.refresh_failures)}; chains: batches {self.chain_batches}, tables "
            f"{self.chain_tables} (queries {self.chain_queries}, twins at every level {self.twins}), refreshes "
            f"{self.chain_refreshes} (in process {self.chain_in_process}), cascaded refreshes {self.cascaded} "
            f"(cascades failed {self.cascade_failed}), chain cases compared {self.chain_compared} (depth 2 "
            f"{self.depth2_compared}, depth 3 {self.depth3_compared}), base changes: merges {self.merges}, updates "
            f"{self.updates}, deletes {self.deletes}, compactions {self.compactions}, refused {self.changes_refused}, "
            f"retractions in process {self.retractions_in_process}, refreshes after other changes than appends "
            f"{self.after_row_level} (in process {self.after_row_level_in_process}); expectations: tables "
            f"{self.expectation_tables}, refreshes {self.expectation_refreshes}, rows dropped {self.dropped_rows}, "
            f"bad batches {self.bad_batches}, held {self.held}, published after held {self.published_after_held}, "
            f"failures {len(self.expectation_failures)}; {self.seconds:.0f} s "
            f"({', '.join(f'{k} {v:.0f} s' for k, v in self.timing.items())})"
        )


class _Guards(logging.Handler):
    """Collects the in-process path's "runs on Spark" records during a refresh."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def guard_log() -> Iterator[_Guards]:
    handler = _Guards()
    logger = logging.getLogger(RUN_LOGGER)
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@dataclass
class Table:
    name: str
    query: str
    engine_line: str
    accepted: bool
    joins: bool = False
    depth: int = 1
    """1 over base tables; 2 over a level-1 table; 3 over a level-2 one."""
    upstream: str = ""
    """The materialized table it reads (depth 2 and 3)."""
    summed: Mapping[str, str] = field(default_factory=lambda: SUMMED)
    """The Spark type of each column a ``sum`` of its query may read, by name (for the order-free check)."""
    constraints: str = ""
    """Its expectations' column list (``""``: none)."""
    kept_by: str = ""
    """Its ``DROP ROW`` condition: the oracle's ``WHERE`` (:func:`fuzz_expectations.oracle`)."""
    guard: fuzz_expectations.Guard | None = None
    """Its ``FAIL UPDATE`` expectation (the batch's guarded table)."""


def _appends_in_process(engine_line: str, source: str) -> bool:
    """Whether explain's engine line says appends to ``source`` run in process: "appends in process …" (any source)
    or "appends to a, b[, updates and deletes…] in process …" (a LEFT JOIN's preserved tables: an append to its
    NULL-supplying side recomputes the affected keys, on Spark)."""
    if not (engine_line.startswith("appends") and " in process (" in engine_line):
        return False
    head = engine_line.split(" in process (", 1)[0].split(", updates and deletes", 1)[0]
    if not head.startswith("appends to "):
        return True
    return source.rsplit(".", 1)[-1] in head[len("appends to ") :].split(", ")


class Fuzzer:
    """Runs seeded batches against one service (``mt``) and its Spark session; see the module docstring."""

    def __init__(
        self,
        mt,
        spark,
        seed: int,
        tables: int = 16,
        rounds: int = 5,
        rejected_sample: float = 0.05,
        chains: float = CHAINS,
        chain_tables: int = CHAIN_TABLES,
    ):
        self.mt, self.spark, self.seed = mt, spark, seed
        self.tables, self.rounds, self.rejected_sample = tables, rounds, rejected_sample
        self.chains, self.chain_tables = chains, chain_tables
        self.counts = Counts()
        self._by_name: dict[str, Table] = {}
        self._held: set[str] = set()
        """Tables whose last refresh was held."""
        self._spark_differences: dict[str, Difference] = {}
        """The difference a Spark refresh left in each table (the batch's), as canonical rows."""

    def run(
        self, cases: int, log: Callable[[str], None] = print, only: Sequence[int] = (), shard: tuple[int, int] = (0, 1)
    ) -> Counts:
        """Batches 0, 1, … until ``cases`` refreshes were compared, or exactly the batches ``only`` names (a
        replay: batch ``n`` is the line the log numbers ``n + 1``). Each disagreement is logged when found.
        ``shard`` = (k, n) runs batches k, k + n, k + 2n, …: n processes together run the batches one would."""
        started = time.monotonic()
        reported = 0
        for number in only or itertools.count(*shard):
            if not only and self.counts.compared >= cases:
                break
            self.batch(number)
            self.counts.seconds = time.monotonic() - started
            log(f"seed {self.seed} batch {number + 1}: {self.counts.line()}")
            for label, detail in self.counts.disagreements[reported:]:
                log(f"DISAGREEMENT in batch {number + 1} (replay: MT_FUZZ_BATCHES={number}) {label}: {detail}")
            reported = len(self.counts.disagreements)
        return self.counts

    def batch(self, number: int) -> None:
        rng = random.Random(f"{self.seed}:{number}")
        chains = random.Random(f"{self.seed}:{number}:chains") if chain_batch(number, self.chains) else None
        columns = [c for c in COLUMNS if rng.random() < (0.7 if c.group_key else 0.25)] or [COLUMNS[0]]
        settings = {
            "spark.sql.session.timeZone": rng.choice(ZONES),
            "spark.sql.ansi.enabled": rng.choice(("true", "false")),
        }
        fast = {"spark.sql.shuffle.partitions": "1"}  # the comparisons' shuffles: tiny data, one task
        prefix = f"b{number}"
        source = qualified(self.mt, f"{prefix}_src")
        dim = qualified(self.mt, f"{prefix}_dim") if number % JOIN_EVERY == 0 else None
        dim_columns = [] if dim is None else [c for c in COLUMNS if rng.random() < (0.6 if c.group_key else 0.2)]
        dim_columns = dim_columns or [COLUMNS[0]]  # (a batch without a dimension draws as before joins: replays hold)
        layout = f" {MOR}" if chains is not None and chains.random() < 0.3 else ""  # deletes as delete files
        row_level = random.Random(f"{self.seed}:{number}:row-level") if ROW_LEVEL and chains is None else None
        if row_level is not None:
            layout = row_level.choice(("", "", f" {MOR}", f" {V3}"))
        elif chains is not None and ROW_LEVEL_SHARE is not None:
            layout = random.Random(f"{self.seed}:{number}:layout").choice(("", f" {MOR}", f" {V3}"))
        with session_settings(self.spark, {**settings, **fast}):
            self.spark.sql(
                f"CREATE TABLE {source} ({', '.join(f'{c.name} {c.sql_type}' for c in columns)}) USING iceberg{layout}"
            )
            self._append(rng, source, columns, rng.randint(10, 30))
            if dim is not None:
                self.spark.sql(
                    f"CREATE TABLE {dim} ({', '.join(f'{c.name} {c.sql_type}' for c in dim_columns)}) USING iceberg"
                )
                self._append(rng, dim, dim_columns, rng.randint(3, 12))
            with self.counts.timed("create"):
                tables = self._create(rng, prefix, source, columns, settings, (dim, dim_columns))
                if chains is not None:
                    plain = (dim, dim_columns) if dim is not None else (source, columns)
                    tables += self._create_chains(chains, prefix, tables, plain)
                expect = random.Random(f"{self.seed}:{number}:expect")
                expected = self._create_expected(expect, prefix, source, columns, tables)
                tables += expected
            guarded = next((t for t in expected if t.guard is not None), None)
            bad_pending = False
            self._by_name, self._spark_differences = {table.name: table for table in tables}, {}
            for _ in range(self.rounds):
                with self.counts.timed("append"):
                    for _ in range(rng.randint(1, 3)):
                        self._append(rng, source, columns, rng.randint(1, 8))
                    dim_changed = dim is not None and rng.random() < 0.25
                    if dim_changed:  # the other table changed too: Spark's to refresh (appends to both)
                        self._append(rng, dim, dim_columns, rng.randint(1, 3))
                    share = 0.5 if ROW_LEVEL_SHARE is None else ROW_LEVEL_SHARE
                    row_level_changed = row_level is not None and row_level.random() < share
                    if row_level_changed:
                        assert row_level is not None
                        self._change(row_level, source, columns, always=ROW_LEVEL_SHARE is not None)
                    if chains is not None:
                        forced = ROW_LEVEL_SHARE is not None and chains.random() < ROW_LEVEL_SHARE
                        self._change(chains, source, columns, always=forced)
                        if dim is not None and chains.random() < 0.3:
                            self._change(chains, dim, dim_columns)
                    fixed = bad_pending
                    if guarded is not None:
                        bad_pending = self._bad_batch(expect, guarded, source, columns, bad_pending)
                with self.counts.timed("refresh"):
                    if chains is None:
                        appended = source if not dim_changed and not row_level_changed and not fixed else None
                        refreshed = [self._refresh(table, settings, appended) for table in tables]
                    else:
                        refreshed = self._refresh_chains(chains, tables, settings)
                with self.counts.timed("compare"):
                    self._compare_all(refreshed)
        with self.counts.timed("drop"):
            for table in sorted(tables, key=lambda t: -t.depth):  # downstream first
                run(self.mt, f"DROP MATERIALIZED TABLE {table.name}")
            self.spark.sql(f"DROP TABLE {source}")
            if dim is not None:
                self.spark.sql(f"DROP TABLE {dim}")

    def _append(self, rng: random.Random, source: str, columns: list[Column], rows: int) -> None:
        extreme = 0.04 if rng.random() < 0.5 else 0.0
        values = ", ".join(row(rng, columns, extreme) for _ in range(rows))
        self.spark.sql(f"INSERT INTO {source} VALUES {values}")

    def _create(self, rng, prefix: str, source: str, columns: list[Column], settings, joined) -> list[Table]:
        """Tables over the source (and, in a join batch, over the source joined with ``joined``: (the dimension's
        name, its columns); ``(None, …)`` otherwise)."""
        dim, dim_columns = joined
        known = {source: [(c.name, c.iceberg) for c in columns]}
        if dim is not None:
            known[dim] = [(c.name, c.iceberg) for c in dim_columns]
        made: list[Table] = []
        attempts = 0
        while len(made) < self.tables and attempts < self.tables * 6:
            attempts += 1
            joins = dim is not None and rng.random() < 0.6
            if joins:
                text = join_query(rng, columns, dim_columns).format(src=source, dim=dim)
            else:
                text = query(rng, columns).replace("FROM src", f"FROM {source}")
            self.counts.queries += 1
            self.counts.joins += joins
            accepted = unsupported(text, known) is None
            if not accepted:
                self.counts.rejected += 1
                if rng.random() >= self.rejected_sample:
                    continue
            table = self._make(Table(f"{prefix}_t{len(made)}", text, "", accepted, joins))
            if table is not None:
                made.append(table)
        return made

    def _make(self, table: Table, pinned: bool = False) -> Table | None:
        """CREATE ``table`` (``pinned``: to Spark, ``'incremental.engine' = 'spark'``) and note its engine line;
        ``None`` where Spark rejects the query (e.g. a comparison across types under ANSI)."""
        from dataclasses import replace

        from mt_magic.runtime.refresh.incremental.explain import explain

        engine = ", 'incremental.engine' = 'spark'" if pinned else ""
        constraints = f"({table.constraints}) " if table.constraints else ""
        try:
            run(
                self.mt,
                f"CREATE MATERIALIZED TABLE {table.name} {constraints}WITH ('incremental' = 'always'{engine}) "
                f"FRESHNESS = INTERVAL '1' MINUTE AS {table.query}",
            )
        except Exception:
            self.counts.spark_invalid += 1
            if self.spark.catalog.tableExists(qualified(self.mt, table.name)):
                run(self.mt, f"DROP MATERIALIZED TABLE {table.name}")
            return None
        self.counts.tables += 1
        self.counts.twins += pinned
        self.counts.expectation_tables += bool(table.constraints)
        self.counts.chain_tables += table.depth > 1
        return replace(table, engine_line=explain(self.mt.workspace, qualified(self.mt, table.name)).engine)

    # --- expectations (fuzz_expectations) ----------------------------------------------------------------------

    def _create_expected(self, rng: random.Random, prefix: str, source: str, columns, tables: list[Table]):
        """Expectation twins of some level-1 tables (a random ``DROP ROW`` and a random counted condition over its
        output columns) and the batch's guarded table (``SELECT *`` of the source, the three kinds of expectation)."""
        from dataclasses import replace

        level_one = [t for t in tables if t.depth == 1]
        made: list[Table] = []
        for index in fuzz_expectations.twins(rng, len(level_one)):
            original = level_one[index]
            out, _ = self._columns_of(original)
            if not out:
                continue
            dropped, counted = predicate(rng, out, strict=True), predicate(rng, out, strict=True)
            twin = replace(
                original,
                name=f"{prefix}_e{index}",
                constraints=fuzz_expectations.constraints(dropped, counted),
                kept_by=dropped,
            )
            created = self._make(twin)
            made += [created] if created is not None else []
        guard = fuzz_expectations.guard(rng, [(c.name, c.sql_type) for c in columns])
        if fuzz_expectations.EXPECTATIONS > 0 and guard is not None:
            dropped, counted = predicate(rng, columns, strict=True), predicate(rng, columns, strict=True)
            text, listed = f"SELECT * FROM {source}", guard.constraints(dropped, counted)
            held = Table(
                f"{prefix}_h", text, "", False, constraints=listed, kept_by=guard.keeping(dropped), guard=guard
            )
            created = self._make(held)
            made += [created] if created is not None else []
        return made

    def _bad_batch(self, rng: random.Random, guarded: Table, source: str, columns, pending: bool) -> bool:
        """Delete the bad row appended the round before (the source fixed), else now and then append one: whether
        one is pending now."""
        assert guarded.guard is not None
        if pending:
            self.spark.sql(f"DELETE FROM {source} WHERE {guarded.guard.bad_rows()}")
            return False
        if rng.random() >= fuzz_expectations.BAD_BATCH:
            return False
        self.spark.sql(f"INSERT INTO {source} VALUES {guarded.guard.bad_row([c.name for c in columns])}")
        self.counts.bad_batches += 1
        return True

    def _audited(self, table: Table, label: str, before: int | None, held: bool) -> None:
        """After a refresh of a table with expectations: a held one left ``main`` where it was; no row on ``main``
        fails its ``FAIL UPDATE`` expectation; the dropped rows its commit recorded are counted."""
        from mt_magic.runtime.refresh.recorded import expectation_counts

        name = qualified(self.mt, table.name)
        info = self.mt.workspace.catalog.load(name)
        self.counts.expectation_refreshes += 1
        if held:
            self.counts.held += 1
            self._held.add(table.name)
            if info.current_snapshot_id != before:
                self.counts.expectation_failures.append(
                    (label, f"held, but main moved {before} → {info.current_snapshot_id}")
                )
        elif table.name in self._held and info.current_snapshot_id != before:
            self.counts.published_after_held += 1
            self._held.discard(table.name)
        if table.guard is not None:
            bad = self.spark.sql(f"SELECT * FROM {name} WHERE NOT coalesce(({table.guard.condition}), false)")
            if found := bad.limit(3).collect():
                self.counts.expectation_failures.append((label, f"rows on main fail {table.guard.condition}: {found}"))
        last = info.snapshots[-1] if info.snapshots and not held else None
        if last is not None and last.snapshot_id == info.current_snapshot_id and last.snapshot_id != before:
            self.counts.dropped_rows += sum(e.dropped for e in expectation_counts(last.summary))

    # --- chain batches: tables on tables ----------------------------------------------------------------------

    def _create_chains(self, rng: random.Random, prefix: str, level_one: list[Table], plain) -> list[Table]:
        """Twins of some level-1 tables, then level 2 over level 1 (twins included) and level 3 over level 2;
        ``plain``: (the plain table a chain query may join, its columns)."""
        from dataclasses import replace

        self.counts.chain_batches += 1
        made = []
        for index, table in enumerate(rng.sample(level_one, min(len(level_one), rng.randint(1, 2)))):
            twin = self._make(replace(table, name=f"{prefix}_w{index}"), pinned=True)
            made += [twin] if twin is not None else []
        below = level_one + made
        for depth, count in ((2, self.chain_tables), (3, max(1, self.chain_tables // 2))):
            below = self._create_level(rng, f"{prefix}_c{depth}", depth, below, count, plain)
            made += below
        return made

    def _create_level(self, rng: random.Random, prefix: str, depth: int, below: list[Table], count: int, plain):
        """``count`` tables over tables of ``below`` (each with a twin pinned to Spark, now and then)."""
        from dataclasses import replace

        made: list[Table] = []
        attempts = 0
        while below and len(made) < count and attempts < count * 6:
            attempts += 1
            upstream = rng.choice(below)
            columns, known = self._columns_of(upstream)
            if not columns:
                continue
            name, plain_columns = plain
            roll = rng.random()
            over = qualified(self.mt, upstream.name)
            if roll < 0.6:
                text, joins = query(rng, columns).replace("FROM src", f"FROM {over}"), False
            elif roll < 0.85:
                text, joins = join_query(rng, columns, plain_columns).format(src=over, dim=name), True
            else:
                text, joins = join_query(rng, plain_columns, columns).format(src=name, dim=over), True
            if joins:
                known = {**known, name: [(c.name, c.iceberg) for c in plain_columns]}
            self.counts.queries += 1
            self.counts.chain_queries += 1
            self.counts.joins += joins
            accepted = unsupported(text, known) is None
            if not accepted:
                self.counts.rejected += 1
                if rng.random() >= CHAIN_REJECTED:
                    continue
            summed = {**SUMMED, **{c.name: c.sql_type for c in columns if c.sql_type.startswith(NUMERIC)}}
            table = Table(f"{prefix}_{len(made)}", text, "", accepted, joins, depth, upstream.name, summed)
            created = self._make(table)
            if created is None:
                continue
            made.append(created)
            if rng.random() < TWINS:
                twin = self._make(replace(table, name=f"{table.name}w"), pinned=True)
                made += [twin] if twin is not None else []
        return made

    def _columns_of(self, table: Table) -> tuple[list[Column], dict[str, list[tuple[str, str]]]]:
        """The table's output columns as source columns (hidden keys left out), and its columns as the gate
        reads them: {its name: [(column, Iceberg type)]}."""
        info = self.mt.workspace.catalog.load(qualified(self.mt, table.name))
        typed = [(name, kind) for name, kind, _ in info.columns]
        columns = [output_column(n, k) for n, k in typed if not n.lower().startswith(HIDDEN_COLUMN_PREFIX)]
        return [c for c in columns if c is not None], {info.name: typed}

    def _change(self, rng: random.Random, name: str, columns: list[Column], always: bool = False) -> None:
        """Beyond the appends, now and then: a ``MERGE INTO`` update (sometimes inserting too), a ``DELETE`` or a
        compaction of a base table. ``always`` (the soak's knob) draws one every time, an ``UPDATE`` among them."""
        roll = rng.random()
        key, target = rng.choice(columns), rng.choice(columns)
        if always:  # an UPDATE a quarter of the time, else the default mix without its "nothing"
            roll = -1.0 if roll < 0.25 else (roll - 0.25) / 0.75 * 0.5
        if roll < 0:
            new = "NULL" if rng.random() < 0.15 else rng.choice(target.values + target.extremes)
            statement = f"UPDATE {name} SET {target.name} = {new} WHERE {predicate(rng, columns, strict=True)}"
            self.counts.updates += 1
        elif roll < 0.2:
            new = "NULL" if rng.random() < 0.15 else rng.choice(target.values + target.extremes)
            using, insert = f"SELECT {rng.choice(key.values)} AS key", ""
            if rng.random() < 0.3:  # a whole row: matched rows take its value, else it is inserted
                names = ", ".join(c.name for c in columns)
                using, new, insert = (
                    f"SELECT * FROM VALUES {row(rng, columns, 0.0)} AS s({names})",
                    f"s.{target.name}",
                    " WHEN NOT MATCHED THEN INSERT *",
                )
            statement = (
                f"MERGE INTO {name} t USING ({using}) s ON t.{key.name} = s.{'key' if not insert else key.name} "
                f"WHEN MATCHED THEN UPDATE SET t.{target.name} = {new}{insert}"
            )
            self.counts.merges += 1
        elif roll < 0.35:
            statement = f"DELETE FROM {name} WHERE {predicate(rng, columns, strict=True)}"
            self.counts.deletes += 1
        elif roll < 0.5:
            catalog, table = name.split(".", 1)
            options = "map('min-input-files', '2', 'delete-file-threshold', '1')"
            statement = f"CALL {catalog}.system.rewrite_data_files(table => '{table}', options => {options})"
            self.counts.compactions += 1
        else:
            return
        try:
            self.spark.sql(statement)
        except Exception:  # e.g. a value of another type under ANSI
            self.counts.changes_refused += 1

    def _refresh_chains(self, rng: random.Random, tables: list[Table], settings) -> list:
        """Every table refreshed upstream first: one by one, or (now and then) each level-1 table with downstream
        tables through the manager's cascade."""
        ordered = sorted(tables, key=lambda t: t.depth)
        if rng.random() >= CASCADE:
            return [self._refresh(table, settings, self._appends_only(table)) for table in ordered]
        below = {t.name: [d for d in ordered if d.upstream == t.name] for t in ordered}
        refreshed = []
        for root in (t for t in ordered if t.depth == 1):
            tree, index = [root], 0
            while index < len(tree):
                tree += below[tree[index].name]
                index += 1
            if len(tree) == 1:
                refreshed.append(self._refresh(root, settings, self._appends_only(root)))
            else:
                refreshed += self._cascade(tree, settings)
        return refreshed

    def _cascade(self, tree: list[Table], settings) -> list:
        """``ALTER MATERIALIZED TABLE <tree[0]> REFRESH`` with the manager's cascade (the future completes with the
        whole cascade); which engine committed each table's refresh, from its new snapshots. Where the cascade
        fails, the tree is refreshed one by one (to find which refresh fails)."""
        from mt_magic.sql import parse_cell

        catalog = self.mt.workspace.catalog
        before = {t.name: {s.snapshot_id for s in catalog.load(qualified(self.mt, t.name)).snapshots} for t in tree}
        try:
            (statement,) = parse_cell(f"ALTER MATERIALIZED TABLE {tree[0].name} REFRESH")
            self.mt.execute(statement, cascade=True).refresh.result(timeout=600)
        except Exception:
            self.counts.cascade_failed += 1
            return [self._refresh(table, settings, None) for table in tree]
        refreshed = []
        for table in tree:
            label = f"seed {self.seed} {settings} {self._describe(table)} (cascaded)"
            new = [
                s
                for s in catalog.load(qualified(self.mt, table.name)).snapshots
                if s.snapshot_id not in before[table.name]
            ]
            ran = any(s.refresh_state.engine is RefreshEngine.IN_PROCESS for s in new if s.refresh_state)
            self._count_refresh(table, ran)
            self.counts.cascaded += 1
            says_in_process = table.engine_line.startswith("appends") and " in process (" in table.engine_line
            if ran and not says_in_process:
                self.counts.engine_line_mismatches.append((label, f"ran in process; explain said {table.engine_line}"))
            refreshed.append((table, label, ran, None))
        return refreshed

    def _appends_only(self, table: Table) -> str | None:
        """The one of the table's sources that changed since its last refresh, by appends alone (a compaction, or an
        upstream refresh's append of no rows that records its state, is no change); ``None`` for any other change:
        where explain's engine line says that source's appends run in process, it must run in process."""
        catalog = self.mt.workspace.catalog
        last = catalog.load(qualified(self.mt, table.name)).last_refresh()
        if last is None:
            return None
        appended = []
        for state in last[1].source_states:
            if state.snapshot_id is None:
                return None
            after = catalog.load(state.qualified_name).snapshots_after(state.snapshot_id)
            logical = [s for s in after or () if s.changes_data]
            if after is None or any(s.operation != "append" for s in logical):
                return None
            if any(s.summary.get("added-records", "0") != "0" for s in logical):
                appended.append(state.qualified_name)
        return appended[0] if len(appended) == 1 else None

    def _describe(self, table: Table) -> str:
        """A table for a log line: its name and query, and for a chain table its depth and what it reads."""
        text = f"{table.name}: {table.query}"
        upstream = self._by_name.get(table.upstream)
        while upstream is not None:
            text += f" [depth {table.depth}, over {upstream.name}: {upstream.query}]"
            table, upstream = upstream, self._by_name.get(upstream.upstream)
        return text

    def _count_refresh(self, table: Table, ran_in_process: bool) -> None:
        self.counts.refreshes += 1
        self.counts.in_process += ran_in_process
        self.counts.joins_in_process += ran_in_process and table.joins
        if table.depth > 1:
            self.counts.chain_refreshes += 1
            self.counts.chain_in_process += ran_in_process

    def _reads_in_process_commits(self, table: Table) -> bool:
        """Whether any table ``table`` reads (directly or further up) ever committed in process."""
        upstream = self._by_name.get(table.upstream)
        while upstream is not None:
            if self._last_ran_in_process(upstream):
                return True
            upstream = self._by_name.get(upstream.upstream)
        return False

    def _refresh(
        self, table: Table, settings: dict[str, str], appended: str | None
    ) -> tuple[Table, str, bool, Exception | None]:
        """One real refresh; checks the engine that ran against explain's engine line (``appended``: the one source
        that changed, by appends alone, so a table whose line says that source's appends run in process must run in
        process; ``None``: any other change)."""
        expected = appended is not None
        from mt_magic.runtime.refresh.audit import ExpectationsHeldError

        label = f"seed {self.seed} {settings} {self._describe(table)}"
        catalog = self.mt.workspace.catalog
        before = catalog.load(qualified(self.mt, table.name)).current_snapshot_id if table.constraints else None
        held = False
        with guard_log() as guards, self.counts.timed(f"refresh depth {table.depth}"):
            try:
                outcome = refresh(self.mt, table.name)
                failed = None
            except ExpectationsHeldError:  # main stays on its last good state, compared as any table's
                outcome, failed, held = None, None, True
            except Exception as exc:
                outcome, failed = None, exc
        if table.constraints:
            self._audited(table, label, before, held)
        ran_in_process = outcome is not None and outcome.engine is RefreshEngine.IN_PROCESS
        self._count_refresh(table, ran_in_process)
        self.counts.retractions_in_process += ran_in_process and RETRACTION in (outcome.strategy if outcome else "")
        self.counts.after_row_level += not expected
        self.counts.after_row_level_in_process += ran_in_process and not expected
        self.counts.guarded += bool(guards.messages)
        says_in_process = table.engine_line.startswith("appends") and " in process (" in table.engine_line
        incremental = outcome is not None and outcome.strategy.startswith("incremental")
        if ran_in_process and not says_in_process:
            self.counts.engine_line_mismatches.append((label, f"ran in process; explain said {table.engine_line}"))
        elif (
            appended is not None
            and incremental
            and _appends_in_process(table.engine_line, appended)
            and not ran_in_process
            and not guards.messages
        ):
            assert outcome is not None
            self.counts.engine_line_mismatches.append((label, f"ran on Spark unexplained: {outcome.strategy}"))
        return table, label, ran_in_process, failed

    def _compare_all(self, refreshed: list[tuple[Table, str, bool, Exception | None]]) -> None:
        """Every refreshed table against Spark's answer in ONE Spark job (scans only, no shuffle): each row as
        an exact canonical text (strings as hex bytes, instants as epoch microseconds), compared as multisets;
        a table whose query fails in Spark (found by halving the job), or that differs, is compared again on its
        own for the detail."""
        from collections import Counter

        ok = [r for r in refreshed if r[3] is None]
        rows, differing = self._canonical_rows([(index, item[0]) for index, item in enumerate(ok)])
        differences: dict[int, Difference] = {}
        for index in range(len(ok)):
            expected = Counter({r: n for (t, side, r), n in rows.items() if t == index and side == 0})
            actual = Counter({r: n for (t, side, r), n in rows.items() if t == index and side == 1})
            if expected != actual:
                differing.add(index)
                differences[index] = frozenset((expected - actual).items()), frozenset((actual - expected).items())
        for index, item in enumerate(ok):
            found = self._spark_answer_differs(item[0]) if index in differing else None
            self._judge(item, found, differences.get(index))
        for item in refreshed:  # a failed refresh read its inputs as they are now: Spark's query is asked there
            if item[3] is not None:
                self._judge(item, self._spark_answer_differs(item[0], current=True))

    def _canonical_rows(self, tables: list[tuple[int, Table]]):
        """(Counter of (index, side, canonical row) over ``tables`` and Spark's answers, the indexes whose
        query fails in Spark): one job, halved until each failing query stands alone."""
        from collections import Counter

        from pyspark.sql import functions as F

        try:
            frames = []
            for index, table in tables:
                for side, frame in enumerate(self._both(table)):
                    row = F.to_json(F.struct(*[_canonical(frame, c) for c in frame.columns]))
                    frames.append(frame.select(F.lit(index).alias("t"), F.lit(side).alias("side"), row.alias("r")))
            if not frames:
                return Counter(), set()
            union = frames[0]
            for frame in frames[1:]:
                union = union.union(frame)
            return Counter((row.t, row.side, row.r) for row in union.collect()), set()
        except Exception:  # some query fails in Spark (an overflow under ANSI)
            if len(tables) == 1:
                return Counter(), {tables[0][0]}
            half = len(tables) // 2
            first, second = self._canonical_rows(tables[:half]), self._canonical_rows(tables[half:])
            return first[0] + second[0], first[1] | second[1]

    def _judge(
        self,
        item: tuple[Table, str, bool, Exception | None],
        expected: str | None,
        difference: Difference | None = None,
    ) -> None:
        """Counts one case; a difference is a disagreement where the in-process path may have caused it (the
        table, or a table it reads, ever committed in process), else Spark-side. A difference left by a Spark
        refresh stays Spark-side while it stays exactly the same multisets (``difference``: missing, extra, in
        canonical rows): a later refresh in process that changed nothing of it did no harm; any change to it is
        judged afresh."""
        table, label, ran_in_process, failed = item
        if failed is not None:
            # An overflow is Spark's own answer in the order it added: a merge that overflows recomputes, so a
            # refresh fails with one only where Spark's query over the rows did (ANSI: some orders fail, others not).
            # Under ANSI a BIGINT sum fails with ARITHMETIC_OVERFLOW, a DECIMAL sum with NUMERIC_VALUE_OUT_OF_RANGE.
            overflow = any(f"[{name}]" in str(failed) for name in ("ARITHMETIC_OVERFLOW", "NUMERIC_VALUE_OUT_OF_RANGE"))
            if expected in ("spark query failed", ORDER_DEPENDENT) or overflow:
                self.counts.both_failed += 1
            else:
                failures = self.counts.spark_side if "[INTERNAL_ERROR]" in str(failed) else self.counts.refresh_failures
                failures.append((label, f"refresh failed: {failed}"))
            return
        self.counts.compared += 1
        if table.depth > 1:
            self.counts.chain_compared += 1
            self.counts.depth2_compared += table.depth == 2
            self.counts.depth3_compared += table.depth == 3
        if expected is None:
            return
        if expected == ORDER_DEPENDENT:
            self.counts.order_dependent += 1
            return
        if expected == "spark query failed":
            target = self.counts.disagreements if ran_in_process else self.counts.spark_side
            target.append((label, "the refresh succeeded where Spark's query fails"))
            return
        if difference is not None and self._spark_differences.get(table.name) == difference:
            self.counts.spark_side.append((label, f"{expected} (exactly as a Spark refresh left it)"))
            return
        if table.constraints:  # refreshed on Spark only: a difference is the expectations' own
            self.counts.expectation_failures.append((label, f"{expected}; refreshes: {self._refreshes(table)}"))
            return
        committed_in_process = table.accepted and self._last_ran_in_process(table)
        if ran_in_process or committed_in_process or self._reads_in_process_commits(table):
            self.counts.disagreements.append((label, f"{expected}; refreshes: {self._refreshes(table)}"))
        else:
            if difference is not None:
                self._spark_differences[table.name] = difference
            self.counts.spark_side.append((label, expected))

    def _both(self, table: Table, current: bool = False):
        """(Spark's answer to the table's query at the snapshots of its last refresh state — ``current``: at its
        inputs' current snapshots, which a refresh that just failed read — and the table)."""
        actual = self.spark.table(qualified(self.mt, table.name))
        expected = self.spark.sql(self._pinned_query(table, current))
        return expected.select(*[f"`{c}`" for c in actual.columns]), actual

    def _pinned_query(self, table: Table, current: bool = False) -> str:
        """The table's query reading its sources at the snapshots its last refresh state records (``current``:
        at their current snapshots)."""
        from mt_magic.sql.query.rewrite import pin_sources

        info, definition = self.mt.workspace.catalog.load_materialized(qualified(self.mt, table.name))
        text = definition.expanded_query
        if table.kept_by:
            text = fuzz_expectations.oracle(text, table.kept_by)
        if current:
            return text
        last = info.last_refresh()
        assert last is not None
        return pin_sources(text, {s.qualified_name: s.snapshot_id for s in last[1].source_states})

    def _order_free(self, table: Table, current: bool = False) -> str | None:
        """The table against every answer Spark gives to its query in some order of adding: each ``sum`` from its
        values (Spark collects them, Python adds them — :func:`_spark_sums`), the other columns as Spark computes
        them: ``""`` when the table holds one of them, else what differs; ``None`` when the query has no sum.

        Raises:
            _TotalOverflows: under ANSI a total does not fit its type — Spark's query fails in every order.
        """
        listed, sums = _sums_as_lists(self._pinned_query(table, current), table.summed)
        if not sums:
            return None
        ansi = self.spark.conf.get("spark.sql.ansi.enabled").lower() == "true"
        actual_frame = self.spark.table(qualified(self.mt, table.name))
        columns = actual_frame.columns
        expected = []
        for row in self.spark.sql(listed).collect():
            values = row.asDict()
            allowed = {alias: _spark_sums(values[alias], sql_type, ansi) for alias, sql_type in sums.items()}
            fixed = tuple(None if c in sums else _plain(values[c]) for c in columns)
            expected.append((fixed, allowed))
        unmatched = []
        for row in self.spark.table(qualified(self.mt, table.name)).collect():
            found = row.asDict()
            fixed = tuple(None if c in sums else _plain(found[c]) for c in columns)
            match = next(
                (
                    i
                    for i, (want, allowed) in enumerate(expected)
                    if want == fixed and all(found[a] in allowed[a] for a in sums)
                ),
                None,
            )
            if match is None:
                unmatched.append(tuple(found[c] for c in columns))
            else:
                expected.pop(match)
        if not unmatched and not expected:
            return ""
        return f"missing {[dict(a) for _, a in expected[:3]]}, extra {unmatched[:3]}"

    def _refreshes(self, table: Table) -> str:
        """The table's refresh commits, oldest first: what ran and why (for a disagreement's detail)."""
        name = qualified(self.mt, table.name)
        rows = self.spark.sql(
            f"SELECT summary['mt.strategy'] AS strategy, summary['mt.engine'] AS engine, summary['added-records'] "
            f"AS added, summary['deleted-records'] AS deleted FROM {name}.snapshots ORDER BY committed_at"
        ).collect()
        return " | ".join(f"{r.engine}: {r.strategy} (+{r.added} -{r.deleted})" for r in rows)

    def _last_ran_in_process(self, table: Table) -> bool:
        """Whether any refresh of the table so far committed in process (a difference could stem from it)."""
        info = self.mt.workspace.catalog.load(qualified(self.mt, table.name))
        return any(s.refresh_state.engine is RefreshEngine.IN_PROCESS for s in info.snapshots if s.refresh_state)

    def _spark_answer_differs(self, table: Table, current: bool = False) -> str | None:
        """``None`` when the table equals Spark's answer to its query at the snapshots its last refresh state
        records (``current``: at its inputs' current snapshots, for a refresh that failed) (multisets, exactly:
        ``EXCEPT ALL`` both ways); else what differs.

        Spark's ``sum`` depends on the order it adds rows in when a *partial* sum overflows: a BIGINT sum under
        ANSI fails, a DECIMAL sum gives NULL (or fails under ANSI), although the total fits its type — so two
        runs of one query can differ (Iceberg plans files in parallel). Where Spark's answer differs from the table
        (or its query fails with an overflow), the table is compared with every answer Spark gives in some order
        (:meth:`_order_free`): holding one of them is :data:`ORDER_DEPENDENT`."""
        overflowed = "Spark's query failed with an overflow"
        try:
            found = _difference(*self._both(table, current))
        except Exception as exc:  # Spark's query fails on this data (e.g. an overflow under ANSI)
            if "overflow" not in str(exc).lower():
                return "spark query failed"
            found = overflowed
        if found is None:
            return None
        try:
            order_free = self._order_free(table, current)
        except _TotalOverflows:
            return "spark query failed"
        except (ValueError, OverflowError) as exc:  # a value Spark holds that Python cannot (a timestamp in year 0)
            return f"{found}; the order-free check could not read the rows into Python ({exc})"
        if order_free is None:  # no sum: the difference is not Spark's order
            return "spark query failed" if found == overflowed else found
        return ORDER_DEPENDENT if not order_free else f"{found}; against the order-free sums: {order_free}"


Difference = tuple[frozenset, frozenset]
"""A table's difference from Spark's answer: (missing, extra) canonical rows with their counts."""
ORDER_DEPENDENT = "Spark's run differs from the table, which holds its answer in another order of adding"
SUMMED = {c.name: c.sql_type for c in COLUMNS if c.sql_type.startswith(NUMERIC)}


class _TotalOverflows(Exception):
    """Under ANSI a sum's total does not fit its type: Spark's query fails in every order."""


def _difference(expected, actual) -> str | None:
    found = expected.exceptAll(actual).limit(3).collect(), actual.exceptAll(expected).limit(3).collect()
    return None if not found[0] and not found[1] else f"missing {found[0]}, extra {found[1]}"


def _sums_as_lists(text: str, summed: Mapping[str, str] = SUMMED) -> tuple[str, dict[str, str]]:
    """``text`` with each ``sum(column) AS alias`` of its select list collecting the values instead
    (``collect_list``; ``collect_set`` for DISTINCT), and {alias: the summed column's Spark type} (``summed``: the
    type of each column a sum may read)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(text, read="spark")
    sums: dict[str, str] = {}
    for item in tree.expressions:
        if not (isinstance(item, exp.Alias) and isinstance(item.this, exp.Sum)):
            continue
        argument = item.this.this
        distinct = isinstance(argument, exp.Distinct)
        inner = argument.expressions[0] if distinct else argument
        if isinstance(inner, exp.Column) and inner.name in summed:
            sums[item.alias] = summed[inner.name]
            collect = "collect_set" if distinct else "collect_list"
            item.set("this", exp.Anonymous(this=collect, expressions=[inner.copy()]))
    return tree.sql(dialect="spark"), sums


def _exact_total(values: list, sql_type: str, ansi: bool) -> object:
    """Spark's ``sum`` of ``values`` (non-NULL, of ``sql_type``) added in an order whose partial sums fit:
    NULL when empty; the total when it fits the sum's type (BIGINT; DECIMAL(min(38, p + 10), s)); else it wraps
    (BIGINT), is NULL (DECIMAL), or under ANSI fails (:class:`_TotalOverflows`)."""
    if not values:
        return None
    if sql_type in ("INT", "BIGINT"):
        total = sum(values)
        if -(2**63) <= total < 2**63:
            return total
        if ansi:
            raise _TotalOverflows
        return (total + 2**63) % 2**64 - 2**63
    with localcontext() as context:
        context.prec = 100  # exact for any fuzzer data (abs() and ** round to the context too)
        total = sum(values, Decimal(0))
        if abs(total) < _decimal_bound(sql_type):
            return total
    if ansi:
        raise _TotalOverflows
    return None


def _decimal_bound(sql_type: str) -> Decimal:
    """What a DECIMAL(p, s) column's sum must stay below: its type is DECIMAL(min(38, p + 10), s)."""
    precision, scale = (int(n) for n in sql_type[len("DECIMAL(") : -1].split(","))
    return Decimal(10) ** (min(38, precision + 10) - scale)


def _spark_sums(values: list, sql_type: str, ansi: bool) -> frozenset:
    """Every answer Spark's ``sum`` of ``values`` gives in some order of adding (:func:`_exact_total` in an order
    whose partial sums fit); with ANSI off a DECIMAL sum is also NULL where some order's partial sum passes the
    type — all positive values first, or all negative ones — which Spark may pick, as Iceberg plans files in
    parallel. (Under ANSI such an order fails the query: a failed refresh is judged apart.)

    Raises:
        _TotalOverflows: under ANSI the total does not fit — Spark's query fails in every order.
    """
    answers = {_exact_total(values, sql_type, ansi)}
    if values and not ansi and sql_type.startswith("DECIMAL("):
        with localcontext() as context:
            context.prec = 100
            positive = sum((v for v in values if v > 0), Decimal(0))
            negative = sum((v for v in values if v < 0), Decimal(0))
            if max(positive, -negative) >= _decimal_bound(sql_type):
                answers.add(None)
    return frozenset(answers)


def _plain(value: object) -> object:
    """``value`` comparable as a multiset key (a float by its text, so NaN equals NaN)."""
    return repr(value) if isinstance(value, float) else value


def _canonical(frame, column: str):
    """``column`` as an exact, zone-free value for comparing rows: text as its bytes (invalid UTF-8 included),
    TIMESTAMP as epoch microseconds, TIMESTAMP_NTZ and floats as Spark's own text of them."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    kind = frame.schema[column].dataType
    value = F.col(f"`{column}`")
    if isinstance(kind, T.StringType):
        value = F.hex(value.cast("binary"))
    elif isinstance(kind, T.TimestampType):
        value = F.unix_micros(value)
    elif isinstance(kind, (T.TimestampNTZType, T.FloatType, T.DoubleType, T.DecimalType)):
        value = value.cast("string")
    return value.alias(column)

"""Python arguments → the statement a cell would hold → the grammar's typed statement.

The API writes the statement's text (names and literals quoted by :mod:`mt_magic.runtime.spark.quoting`, the
grammar's own spelling) and parses it with :func:`~mt_magic.sql.ddl.parser.parse_cell`, so a call is checked by
exactly the rules a ``%%materialized`` cell is and fails with the same error types and Fix lines. Each argument
is first read by the grammar on its own (a name, an interval, a partition), so a value cannot carry a second
clause into the text, and a query must be one statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta

from mt_magic.errors import MtMagicError
from mt_magic.runtime.spark.quoting import identifier, string_literal
from mt_magic.sql.ddl.freshness import FreshnessRules
from mt_magic.sql.ddl.parser import parse_cell, parse_interval, parse_partition, parse_table_name
from mt_magic.sql.ddl.statements import (
    STATEMENT_WORDS,
    AlterFreshness,
    AlterQuery,
    AlterRefreshMode,
    AlterResume,
    CreateMaterializedTable,
    Freshness,
    FreshnessUnit,
)
from mt_magic.sql.errors import FreshnessError, SqlSyntaxError
from mt_magic.sql.names import Position, TableName
from mt_magic.vocabulary import RefreshMode

OptionValue = str | int | float | bool
FreshnessArg = str | timedelta | Freshness
PartitionArg = str | Mapping[str, OptionValue]

MATERIALIZE = "mt_magic.materialize"
EXPLAINED = (CreateMaterializedTable, AlterQuery, AlterFreshness, AlterRefreshMode, AlterResume)
"""The statements ``%mt explain`` / ``mt_magic.explain`` take: a CREATE (before it runs) and the changes it previews."""
Explained = CreateMaterializedTable | AlterQuery | AlterFreshness | AlterRefreshMode | AlterResume | TableName
QUERY_NAME = TableName("this_query")
"""The name a query given to explain is explained under (as a table it would define)."""


def table_name(text: str) -> TableName:
    """A table name written as in a cell or on a ``%mt`` line (``daily``, ``ns.`my table```).

    Raises:
        SqlError: not one table name (the grammar's message).
    """
    return parse_table_name(text)


def freshness(value: FreshnessArg) -> Freshness:
    """``"INTERVAL '5' MINUTE"``, a :class:`~datetime.timedelta` of whole seconds, or a :class:`Freshness`.

    Raises:
        FreshnessError: a duration that is not a positive whole number of seconds, or an interval FRESHNESS refuses.
        SqlError: text that is not one interval (the grammar's message).
    """
    if isinstance(value, Freshness):
        return value
    if isinstance(value, str):
        return _interval_text(value)
    seconds = value.total_seconds()
    if seconds <= 0 or seconds != int(seconds):
        raise FreshnessError(
            f"freshness={value!r} is not a positive whole number of seconds",
            statement=MATERIALIZE,
            fix="pass e.g. timedelta(minutes=5) or \"INTERVAL '5' MINUTE\"",
        )
    whole = int(seconds)
    unit = next(u for u in reversed(FreshnessUnit) if whole % u.seconds == 0)
    return Freshness(whole // unit.seconds, unit)


def _interval_text(value: str) -> Freshness:
    """``"INTERVAL '5' MINUTE"`` as the grammar reads it (with the cell's errors), or the plain ``"5 minutes"`` /
    ``"1 hour"`` a Python caller writes; other text is refused with the argument as written, not with a position
    inside text the caller never typed."""
    words = value.split()
    if words and words[0].upper() == "INTERVAL":
        return parse_interval(value)
    if len(words) == 2 and words[0].isdigit() and int(words[0]) > 0:
        unit = FreshnessUnit.__members__.get(words[1].upper().removesuffix("S"))
        if unit is not None:
            return Freshness(int(words[0]), unit)
    raise FreshnessError(
        f"freshness={value!r} is not an interval",
        statement=MATERIALIZE,
        fix=FRESHNESS_FIX,
    )


FRESHNESS_FIX = 'pass "INTERVAL \'5\' MINUTE", "5 minutes" or timedelta(minutes=5) (SECOND, MINUTE, HOUR or DAY)'


def refresh_mode(value: RefreshMode | str) -> RefreshMode:
    """``RefreshMode.FULL`` or its name in any letter case.

    Raises:
        SqlSyntaxError: another word, with the modes there are (as the grammar says it).
    """
    if isinstance(value, RefreshMode):
        return value
    mode = RefreshMode.__members__.get(value.strip().upper())
    if mode is None:
        raise SqlSyntaxError(
            f"REFRESH_MODE must be CONTINUOUS or FULL, got {value!r}",
            statement=MATERIALIZE,
            fix="pass refresh_mode='FULL' or 'CONTINUOUS', or leave it out (the freshness decides)",
        )
    return mode


def partition(value: PartitionArg) -> tuple[tuple[str, str], ...]:
    """``"ds = '20250101'"`` (as ``%mt refresh --partition`` takes it) or ``{"ds": "20250101"}``.

    Raises:
        SqlError: not a partition spec (the grammar's message).
    """
    if isinstance(value, str):
        return parse_partition(value)
    return parse_partition(", ".join(f"{identifier(k)} = {string_literal(option_text(v))}" for k, v in value.items()))


def create_or_alter(
    name: str,
    query: str,
    rules: FreshnessRules,
    *,
    fresh: Freshness | None = None,
    mode: RefreshMode | None = None,
    options: Mapping[str, OptionValue] | None = None,
    partitioned_by: Sequence[str] = (),
) -> CreateMaterializedTable:
    """``CREATE OR ALTER MATERIALIZED TABLE`` with these clauses, parsed and checked like a cell.

    Raises:
        SqlError: what the grammar refuses in the statement (clauses, options, formatters, FRESHNESS in FULL mode).
    """
    target = table_name(name)
    pairs = tuple((str(k), option_text(v)) for k, v in (options or {}).items())
    lines = [f"CREATE OR ALTER MATERIALIZED TABLE {'.'.join(identifier(p) for p in target.parts())}"]
    if partitioned_by:
        lines.append("PARTITIONED BY (" + ", ".join(identifier(c) for c in partitioned_by) + ")")
    if pairs:
        lines.append("WITH (" + ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in pairs) + ")")
    if fresh is not None:
        lines.append(f"FRESHNESS = {fresh.sql()}")
    if mode is not None:
        lines.append(f"REFRESH_MODE = {mode.value}")
    lines.append("AS")
    statements = parse_cell("\n".join(lines) + "\n" + query.strip().rstrip(";"), rules)
    stmt = statements[0]
    if len(statements) != 1 or not isinstance(stmt, CreateMaterializedTable):
        raise SqlSyntaxError(
            f"the query holds {len(statements)} statements",
            statement=f"{MATERIALIZE}({name!r})",
            fix="pass one SELECT (a ';' ends the statement)",
        )
    # what Spark or the rules find inside the query is placed in the query as the caller passed it, not in the
    # statement built around it (whose text the caller never saw)
    return replace(stmt, query_position=_start_of(query))


def _start_of(query: str) -> Position:
    """Where ``query.strip()`` starts in ``query``: line and column, 1-based."""
    leading = query[: len(query) - len(query.lstrip())]
    line = leading.count("\n")
    return Position(1 + line, 1 + len(leading) - (leading.rfind("\n") + 1))


def option_text(value: OptionValue) -> str:
    """An option value as the catalog stores it: booleans as ``'true'`` / ``'false'``, numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def explained(text: str, rules: FreshnessRules, where: str = "%mt explain") -> Explained:
    """What ``%mt explain`` and ``mt_magic.explain`` are given: a table name, a query (explained as the CREATE of a
    table it would define, named :data:`QUERY_NAME`), or one statement of :data:`EXPLAINED`.

    Raises:
        SqlError: a statement or query the grammar (or sqlglot, for a query) refuses, at its line and column.
        MtMagicError: empty text, several statements, or a statement explain does not take (with its Fix).
    """
    from mt_magic.sql.query.analysis import analyze_query

    words = text.split()
    if not words:
        raise MtMagicError(
            f"{where} needs a table name or a statement",
            fix=f"name the table, e.g. {where} daily_orders, or write the CREATE MATERIALIZED TABLE or ALTER "
            f"MATERIALIZED TABLE statement, or the query, after {where}",
        )
    first = words[0].upper()
    if first in ("SELECT", "WITH", "VALUES") or first.startswith("("):  # a query: as a table defined by it
        query = text.strip().rstrip(";").rstrip()
        analyze_query(query, origin=Position(1, 1))  # a query sqlglot cannot read is refused where it is
        return CreateMaterializedTable(
            text, Position(1, 1), name=QUERY_NAME, query=query, query_position=Position(1, 1)
        )
    if first not in STATEMENT_WORDS:  # a name, perhaps backquoted with spaces
        return parse_table_name(text.strip())
    statements = parse_cell(text, rules)
    if len(statements) != 1 or not isinstance(statements[0], EXPLAINED):
        found = " ".join(statements[0].text.split()[:4]) if len(statements) == 1 else f"{len(statements)} statements"
        raise MtMagicError(
            f"{where} takes a table name, a query, or one CREATE MATERIALIZED TABLE statement or ALTER of one "
            f"(AS, SET FRESHNESS, SET REFRESH_MODE, RESUME), got {found}",
            fix=f"explain the table the statement names ({where} daily_orders), or write one CREATE [OR ALTER] "
            "MATERIALIZED TABLE … AS SELECT … or ALTER MATERIALIZED TABLE … AS SELECT …",
        )
    return statements[0]

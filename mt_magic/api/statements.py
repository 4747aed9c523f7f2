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
from typing import TypeVar

from mt_magic.errors import MtMagicError
from mt_magic.runtime.spark.quoting import identifier, string_literal
from mt_magic.runtime.statements.registry import PREVIEWED, Change, explains
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
    Statement,
)
from mt_magic.sql.errors import FreshnessError, SqlSyntaxError
from mt_magic.sql.names import Position, TableName
from mt_magic.vocabulary import Expectation, RefreshMode

OptionValue = str | int | float | bool
FreshnessArg = str | timedelta | Freshness
PartitionArg = str | Mapping[str, OptionValue]
Built = TypeVar("Built", bound=Statement)

MATERIALIZE = "mt_magic.materialize"
Explained = CreateMaterializedTable | Change | TableName
QUERY_NAME = TableName("this_query")
"""The name a query given to explain is explained under (as a table it would define)."""


def table_name(text: str) -> TableName:
    """A table name written as in a cell or on a ``%mt`` line (``daily``, ``ns.`my table```).

    Raises:
        SqlError: not one table name (the grammar's message).
    """
    return parse_table_name(text)


def freshness(value: FreshnessArg, where: str = MATERIALIZE) -> Freshness:
    """``"INTERVAL '5' MINUTE"``, a :class:`~datetime.timedelta` of whole seconds, or a :class:`Freshness`;
    ``where`` names the call in an error.

    Raises:
        FreshnessError: a duration that is not a positive whole number of seconds, or an interval FRESHNESS refuses.
        SqlError: text that is not one interval (the grammar's message).
    """
    if isinstance(value, Freshness):
        return value
    if isinstance(value, str):
        return _interval_text(value, where)
    seconds = value.total_seconds()
    if seconds <= 0 or seconds != int(seconds):
        raise FreshnessError(
            f"freshness={value!r} is not a positive whole number of seconds",
            statement=where,
            fix="pass e.g. timedelta(minutes=5) or \"INTERVAL '5' MINUTE\"",
        )
    whole = int(seconds)
    unit = next(u for u in reversed(FreshnessUnit) if whole % u.seconds == 0)
    return Freshness(whole // unit.seconds, unit)


def _interval_text(value: str, where: str) -> Freshness:
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
        statement=where,
        fix=FRESHNESS_FIX,
    )


FRESHNESS_FIX = 'pass "INTERVAL \'5\' MINUTE", "5 minutes" or timedelta(minutes=5) (SECOND, MINUTE, HOUR or DAY)'


def refresh_mode(value: RefreshMode | str, where: str = MATERIALIZE) -> RefreshMode:
    """``RefreshMode.FULL`` or its name in any letter case; ``where`` names the call in an error.

    Raises:
        SqlSyntaxError: another word, with the modes there are (as the grammar says it).
    """
    if isinstance(value, RefreshMode):
        return value
    mode = RefreshMode.__members__.get(value.strip().upper())
    if mode is None:
        raise SqlSyntaxError(
            f"REFRESH_MODE must be CONTINUOUS or FULL, got {value!r}",
            statement=where,
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
    expectations: Sequence[Expectation] = (),
) -> CreateMaterializedTable:
    """``CREATE OR ALTER MATERIALIZED TABLE`` with these clauses, parsed and checked like a cell (``expectations``
    in its column list, as ``CONSTRAINT … EXPECT (…)``).

    Raises:
        SqlError: what the grammar refuses in the statement (clauses, options, formatters, FRESHNESS in FULL mode).
    """
    target = table_name(name)
    pairs = tuple((str(k), option_text(v)) for k, v in (options or {}).items())
    lines = [f"CREATE OR ALTER MATERIALIZED TABLE {'.'.join(identifier(p) for p in target.parts())}"]
    if expectations:
        lines.append("(" + ", ".join(e.sql() for e in expectations) + ")")
    if partitioned_by:
        lines.append("PARTITIONED BY (" + ", ".join(identifier(c) for c in partitioned_by) + ")")
    if pairs:
        lines.append(f"WITH ({_pairs(pairs)})")
    if fresh is not None:
        lines.append(f"FRESHNESS = {fresh.sql()}")
    if mode is not None:
        lines.append(f"REFRESH_MODE = {mode.value}")
    lines.append("AS")
    text = "\n".join(lines) + "\n" + query.strip().rstrip(";")
    stmt = _one(parse_cell(text, rules), f"{MATERIALIZE}({name!r})", CreateMaterializedTable)
    # what Spark or the rules find inside the query is placed in the query as the caller passed it, not in the
    # statement built around it (whose text the caller never saw)
    return replace(stmt, query_position=_start_of(query))


def change(
    target: TableName,
    rules: FreshnessRules,
    where: str,
    *,
    query: str | None = None,
    fresh: FreshnessArg | None = None,
    mode: RefreshMode | str | None = None,
    resume: bool | Mapping[str, OptionValue] = False,
) -> Change:
    """The one ALTER the arguments name — ``AS query``, ``SET FRESHNESS``, ``SET REFRESH_MODE`` or ``RESUME [WITH
    (…)]`` (``resume``: ``True`` or its options) — parsed and checked like a cell. One: a change is previewed as
    the one statement that makes it, and two statements' previews do not add up to the preview of both.

    Raises:
        MtMagicError: none of the four, or more than one (``where``, the arguments given, the Fix).
        SqlError: what the grammar refuses in a value (``where``, or the query's own line and column).
    """
    values = (("query", query), ("freshness", fresh), ("refresh_mode", mode), ("resume", resume))
    given = [k for k, v in values if v is not None and v is not False]
    if len(given) != 1:
        raise MtMagicError(
            "needs one change to preview, got " + (" and ".join(f"{k}=" for k in given) if given else "none"),
            statement=where,
            fix="pass one of query='SELECT …', freshness='5 minutes', refresh_mode='FULL' or resume=True"
            + (", one call per change" if given else ""),
        )
    head = "ALTER MATERIALIZED TABLE " + ".".join(identifier(p) for p in target.parts())
    if query is not None:
        stmt = _one(parse_cell(f"{head} AS\n{query.strip().rstrip(';')}", rules), where, AlterQuery)
        return replace(stmt, query_position=_start_of(query))
    if fresh is not None:
        return _one(parse_cell(f"{head} SET FRESHNESS = {freshness(fresh, where).sql()}", rules), where, AlterFreshness)
    if mode is not None:
        return _one(
            parse_cell(f"{head} SET REFRESH_MODE = {refresh_mode(mode, where).value}", rules), where, AlterRefreshMode
        )
    pairs = [(str(k), option_text(v)) for k, v in (resume.items() if isinstance(resume, Mapping) else ())]
    return _one(parse_cell(f"{head} RESUME" + (f" WITH ({_pairs(pairs)})" if pairs else ""), rules), where, AlterResume)


def _one(statements: Sequence[Statement], where: str, kind: type[Built]) -> Built:
    """The one statement of ``kind`` built text parsed to (a query passed as an argument may hold a ';' and more)."""
    stmt = statements[0]
    if len(statements) != 1 or not isinstance(stmt, kind):
        raise SqlSyntaxError(
            f"the query holds {len(statements)} statements",
            statement=where,
            fix="pass one SELECT (a ';' ends the statement)",
        )
    return stmt


def _pairs(pairs: Sequence[tuple[str, str]]) -> str:
    """``'k' = 'v', …`` of a WITH list."""
    return ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in pairs)


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
    table it would define, named :data:`QUERY_NAME`), or one statement of
    :data:`~mt_magic.runtime.statements.registry.EXPLAINED`.

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
    stmt = statements[0]
    if len(statements) != 1 or not explains(stmt):
        found = " ".join(stmt.text.split()[:4]) if len(statements) == 1 else f"{len(statements)} statements"
        raise MtMagicError(
            f"{where} takes a table name, a query, or one CREATE MATERIALIZED TABLE statement or ALTER of one "
            f"({', '.join(PREVIEWED.values())}), got {found}",
            fix=f"explain the table the statement names ({where} daily_orders), or write one CREATE [OR ALTER] "
            "MATERIALIZED TABLE … AS SELECT … or ALTER MATERIALIZED TABLE … AS SELECT …",
        )
    return stmt

"""``CREATE [OR ALTER] MATERIALIZED TABLE``: the clauses in Flink's order, then ``AS <select>``.

The clauses are read in a loop so that a clause written twice, or out of Flink's order, gets its own error
instead of a generic "unexpected token". After parsing, the statement is checked as far as the DDL alone
allows: FRESHNESS against the FULL-mode rules (with the mode declared or inferred), date formatters against
the partition columns, partition columns against the declared columns. The query body is left to
:mod:`mt_magic.sql.query.analysis` and, finally, Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mt_magic.sql.ddl.clauses import (
    KeyValues,
    distribution,
    freshness_interval,
    name_list,
    option_list,
    refresh_mode_value,
)
from mt_magic.sql.ddl.columns import ColumnList, column_list
from mt_magic.sql.ddl.cursor import Cursor, describe
from mt_magic.sql.ddl.formatter import formatter_column, partition_formatters
from mt_magic.sql.ddl.freshness import FreshnessRules, resolve_schedule
from mt_magic.sql.ddl.lexing import Tok, TokKind
from mt_magic.sql.ddl.options import check_create_options
from mt_magic.sql.ddl.start_mode import start_mode_value
from mt_magic.sql.ddl.statements import CreateMaterializedTable, Distribution, Freshness, StartMode
from mt_magic.sql.errors import (
    ClauseOrderError,
    ColumnError,
    DuplicateClauseError,
    FormatterError,
    FreshnessError,
    SqlSyntaxError,
)
from mt_magic.sql.names import Position
from mt_magic.vocabulary import RefreshMode

CLAUSE_ORDER = ("COMMENT", "DISTRIBUTED BY", "PARTITIONED BY", "WITH", "FRESHNESS", "REFRESH_MODE", "START_MODE")
"""Flink's order of the optional clauses; ``AS <select>`` ends the statement."""

_CLAUSE_WORDS = {
    "COMMENT": "COMMENT",
    "DISTRIBUTED": "DISTRIBUTED BY",
    "PARTITIONED": "PARTITIONED BY",
    "WITH": "WITH",
    "FRESHNESS": "FRESHNESS",
    "REFRESH_MODE": "REFRESH_MODE",
    "START_MODE": "START_MODE",
}
NAME_RESERVED = frozenset(
    {"AS", "PARTITIONED", "DISTRIBUTED", "WITH", "FRESHNESS", "REFRESH_MODE", "START_MODE", "COMMENT", "IF"}
)
QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "FROM"})


@dataclass
class _Clauses:
    """What the clause loop has read so far, with the token of each clause for later errors."""

    seen: dict[str, Tok] = field(default_factory=dict)
    comment: str | None = None
    partitioned_by: tuple[tuple[str, Tok], ...] = ()
    distribution: Distribution | None = None
    options: KeyValues = KeyValues((), ())
    freshness: Freshness | None = None
    refresh_mode: RefreshMode | None = None
    start_mode: StartMode | None = None


def parse_create(cur: Cursor, create_tok: Tok, rules: FreshnessRules) -> CreateMaterializedTable:
    """The cursor is just past CREATE."""
    or_alter = False
    if cur.at_word("OR"):
        cur.advance()
        if cur.at_word("REPLACE"):
            raise cur.error(
                SqlSyntaxError,
                "CREATE OR REPLACE is not supported for materialized tables",
                cur.peek(),
                "use CREATE OR ALTER MATERIALIZED TABLE (Flink's create-or-update)",
            )
        cur.expect_word("ALTER", "after CREATE OR", "write CREATE OR ALTER MATERIALIZED TABLE")
        or_alter = True
    cur.label = "CREATE OR ALTER MATERIALIZED TABLE" if or_alter else "CREATE MATERIALIZED TABLE"
    cur.expect_word("MATERIALIZED", "after CREATE" + (" OR ALTER" if or_alter else ""))
    cur.expect_word("TABLE", "after MATERIALIZED")
    if cur.at_word("IF"):
        raise cur.error(
            SqlSyntaxError,
            "IF NOT EXISTS is not part of CREATE MATERIALIZED TABLE",
            cur.peek(),
            "use CREATE OR ALTER MATERIALIZED TABLE to create the table or update its query",
        )
    _, name = cur.table_name(NAME_RESERVED)
    cur.label = f"{cur.label} {name}"
    columns = column_list(cur) if cur.at_punct("(") else ColumnList((), None)
    clauses = _clauses(cur)
    query, query_pos = query_body(cur, "AS")
    _check(cur, clauses, columns, rules)
    check_create_options(cur, clauses.options, columns.primary_key, query)
    return CreateMaterializedTable(
        text=cur.source.text[cur.statement.start : cur.statement.stop],
        position=cur.source.position(create_tok.start),
        name=name,
        query=query,
        query_position=query_pos,
        columns=columns.columns,
        primary_key=columns.primary_key,
        expectations=columns.expectations,
        comment=clauses.comment,
        partitioned_by=tuple(n for n, _ in clauses.partitioned_by),
        distribution=clauses.distribution,
        options=clauses.options.pairs,
        freshness=clauses.freshness,
        refresh_mode=clauses.refresh_mode,
        start_mode=clauses.start_mode,
        or_alter=or_alter,
    )


def _clauses(cur: Cursor) -> _Clauses:
    """Read optional clauses until AS; each at most once and in Flink's order."""
    found = _Clauses()
    while not cur.at_word("AS"):
        tok = cur.peek()
        if tok is None:
            raise cur.error(
                SqlSyntaxError,
                "missing AS <select>: a materialized table is defined by a query",
                None,
                "end the statement with AS SELECT …",
            )
        clause = _CLAUSE_WORDS.get(tok.upper) if tok.kind is TokKind.WORD else None
        if clause is None:
            if tok.is_punct("("):
                raise cur.error(
                    SqlSyntaxError,
                    "the column list must come right after the table name",
                    tok,
                    "move ( … ) before " + " / ".join(CLAUSE_ORDER),
                )
            raise cur.unexpected(tok, [*CLAUSE_ORDER, "AS"])
        _check_order(cur, found, clause, tok)
        found.seen[clause] = tok
        cur.advance()
        _read_clause(cur, found, clause)
    return found


def _check_order(cur: Cursor, found: _Clauses, clause: str, tok: Tok) -> None:
    if clause in found.seen:
        first = cur.position_of(found.seen[clause])
        raise cur.error(
            DuplicateClauseError, f"{clause} is given twice (first at {first})", tok, f"keep one {clause} clause"
        )
    later = [c for c in found.seen if CLAUSE_ORDER.index(c) > CLAUSE_ORDER.index(clause)]
    if later:
        raise cur.error(
            ClauseOrderError,
            f"{clause} must come before {later[0]}",
            tok,
            "write the clauses in Flink's order: " + ", ".join(CLAUSE_ORDER) + ", AS <select>",
        )


def _read_clause(cur: Cursor, found: _Clauses, clause: str) -> None:
    if clause == "COMMENT":
        found.comment = cur.expect_string("after COMMENT", "write COMMENT 'text'")[1]
    elif clause == "DISTRIBUTED BY":
        found.distribution = distribution(cur)
    elif clause == "PARTITIONED BY":
        cur.expect_word("BY", "after PARTITIONED", "write PARTITIONED BY (col, …)")
        found.partitioned_by = name_list(cur, "PARTITIONED BY", ColumnError)
    elif clause == "WITH":
        found.options = option_list(cur, "WITH")
    elif clause == "FRESHNESS":
        found.freshness = freshness_interval(cur)
    elif clause == "REFRESH_MODE":
        found.refresh_mode = refresh_mode_value(cur)
    else:
        found.start_mode = start_mode_value(cur)


def query_body(cur: Cursor, after: str) -> tuple[str, Position]:
    """The rest of the statement after AS: its text exactly as written, and where it starts.

    Comments and whitespace around the body are dropped (a trailing ``--`` comment would swallow anything
    the runtime appends); everything in between is kept byte for byte.
    """
    cur.expect_word("AS", f"before the query, after {after}")
    first = cur.peek()
    if first is None:
        raise cur.error(SqlSyntaxError, "AS is not followed by a query", None, "write AS SELECT … after AS")
    if not (first.is_punct("(") or first.is_word(*QUERY_STARTS)):
        raise cur.error(
            SqlSyntaxError,
            f"AS must be followed by a query, found {describe(first)}",
            first,
            "write AS SELECT … (or WITH … SELECT …)",
        )
    cur.i = len(cur.toks)
    return cur.source.text[first.start : cur.statement.stop], cur.source.position(first.start)


def _check(cur: Cursor, found: _Clauses, columns: ColumnList, rules: FreshnessRules) -> None:
    """What the DDL alone can tell: FULL-mode freshness, formatters, partition columns vs. columns."""
    try:
        schedule = resolve_schedule(found.freshness, found.refresh_mode, rules)
    except FreshnessError as exc:
        tok = found.seen.get("FRESHNESS") or found.seen.get("REFRESH_MODE")
        raise exc.located(statement=cur.label, position=cur.position_of(tok)) from None
    declared = {c.name.lower() for c in columns.columns}
    if declared:
        for name, tok in found.partitioned_by:
            if name.lower() not in declared:
                raise cur.error(
                    ColumnError,
                    f"partition column {name!r} is not in the column list",
                    tok,
                    f"add {name} to the column list, or fix PARTITIONED BY",
                )
    types = {c.name: c.type for c in columns.columns}
    partitions = [n for n, _ in found.partitioned_by]
    for pair, tok in zip(found.options.pairs, found.options.key_toks, strict=True):
        if formatter_column(pair[0]) is None:
            continue
        try:
            partition_formatters([pair], partitions, schedule.mode, types)
        except FormatterError as exc:
            raise exc.located(statement=cur.label, position=cur.position_of(tok)) from None

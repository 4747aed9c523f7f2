"""The optional column list of CREATE MATERIALIZED TABLE.

Accepted (Flink's physical columns and constraints): names only (``(ds, product_id)``), names with a type
(``(ds STRING, amount DECIMAL(10, 2) NOT NULL)``), a column constraint ``[CONSTRAINT n] PRIMARY KEY NOT
ENFORCED``, a column ``COMMENT``, a table constraint ``[CONSTRAINT n] PRIMARY KEY (…) NOT ENFORCED``, and
expectations ``CONSTRAINT n EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]`` (Databricks' pipelines'
clause; the condition is Spark SQL, checked against the query's columns by Spark when the definition is built).
Flink-only kinds (METADATA and computed columns, WATERMARK) are refused by name: Spark and Iceberg have no
such thing, and the query already computes every column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mt_magic.sql.ddl.clauses import name_list
from mt_magic.sql.ddl.cursor import Cursor, describe
from mt_magic.sql.ddl.lexing import Tok, TokKind
from mt_magic.sql.ddl.statements import ColumnDef, PrimaryKey
from mt_magic.sql.errors import ColumnError, ConstraintError, SqlSyntaxError, UnsupportedClauseError
from mt_magic.sql.names import RESERVED_COLUMN_FIX, column_name_problem
from mt_magic.vocabulary import Expectation, OnViolation

_TYPE_STOP = frozenset({"CONSTRAINT", "PRIMARY", "COMMENT", "METADATA", "VIRTUAL"})
_TYPE_CONTINUATION = frozenset(
    {
        "WITH",
        "WITHOUT",
        "LOCAL",
        "TIME",
        "ZONE",
        "TO",
        "YEAR",
        "MONTH",
        "DAY",
        "HOUR",
        "MINUTE",
        "SECOND",
        "PRECISION",
        "VARYING",
        "NOT",
        "NULL",
    }
)
"""Words that may continue a type (``TIMESTAMP WITH LOCAL TIME ZONE``, ``INTERVAL DAY TO SECOND``, ``NOT NULL``)."""
_NOT_SPARK = "is a Flink feature that is not supported on Spark/Iceberg"


@dataclass
class _Columns:
    columns: list[tuple[ColumnDef, Tok]] = field(default_factory=list)
    primary_key: PrimaryKey | None = None
    key_toks: tuple[Tok, ...] = ()
    expectations: list[Expectation] = field(default_factory=list)


@dataclass(frozen=True)
class ColumnList:
    """What the column list declares."""

    columns: tuple[ColumnDef, ...]
    primary_key: PrimaryKey | None
    expectations: tuple[Expectation, ...] = ()


def column_list(cur: Cursor) -> ColumnList:
    """Parse ``( element [, …] )`` (the cursor is at ``(``) and check it is consistent."""
    cur.expect_punct("(", "to open the column list")
    if cur.at_punct(")"):
        raise cur.error(SqlSyntaxError, "the column list is empty", cur.peek(), "remove the () or list columns")
    state = _Columns()
    while True:
        _element(cur, state)
        if cur.accept_punct(","):
            continue
        if cur.accept_punct(")"):
            break
        raise cur.error(
            SqlSyntaxError,
            f"unexpected {describe(cur.peek())} in the column list: expected ',' or ')'",
            cur.peek(),
            "separate column definitions with ',' and close the list with ')'",
        )
    _check_consistent(cur, state)
    return ColumnList(tuple(c for c, _ in state.columns), state.primary_key, tuple(state.expectations))


def _element(cur: Cursor, state: _Columns) -> None:
    tok = cur.peek()
    nxt = cur.peek(1)
    if tok is not None and tok.is_word("WATERMARK") and nxt is not None and nxt.is_word("FOR"):
        raise cur.error(
            UnsupportedClauseError,
            f"WATERMARK {_NOT_SPARK}",
            tok,
            "remove it: refreshes read Iceberg snapshots, not event-time streams",
        )
    if tok is not None and tok.is_word("UNIQUE", "FOREIGN", "CHECK"):
        raise cur.error(
            UnsupportedClauseError,
            f"{tok.text} constraints are not supported",
            tok,
            "use [CONSTRAINT name] PRIMARY KEY (…) NOT ENFORCED, or CONSTRAINT name EXPECT (condition) for a check",
        )
    if tok is not None and tok.is_word("CONSTRAINT", "PRIMARY"):
        constraint_tok = tok
        constraint = _constraint_name(cur)
        if constraint is not None and cur.at_word("EXPECT"):
            _add_expectation(cur, state, expectation(cur, constraint, constraint_tok), constraint_tok)
            return
        cur.expect_word("PRIMARY", "after CONSTRAINT name", "write CONSTRAINT name PRIMARY KEY (…) NOT ENFORCED")
        cur.expect_word("KEY", "after PRIMARY")
        names = name_list(cur, "PRIMARY KEY", ConstraintError)
        _not_enforced(cur, constraint_tok)
        _set_key(
            cur, state, PrimaryKey(tuple(n for n, _ in names), constraint), constraint_tok, tuple(t for _, t in names)
        )
        return
    _column(cur, state)


def _column(cur: Cursor, state: _Columns) -> None:
    name_tok, name = cur.expect_identifier("a column name or PRIMARY KEY (…) NOT ENFORCED")
    reserved = column_name_problem(name)
    if reserved is not None:
        raise cur.error(ColumnError, reserved, name_tok, RESERVED_COLUMN_FIX)
    if cur.at_word("AS"):
        raise cur.error(
            UnsupportedClauseError,
            f"computed column {name} AS … {_NOT_SPARK}",
            cur.peek(),
            f"compute {name} in the query instead (… AS {name}) and list only its name here",
        )
    column_type = _column_type(cur)
    if cur.at_word("METADATA", "VIRTUAL"):
        raise cur.error(
            UnsupportedClauseError,
            f"METADATA column {name} {_NOT_SPARK}",
            cur.peek(),
            "remove the column, or compute it in the query",
        )
    if cur.at_word("CONSTRAINT", "PRIMARY"):
        key_tok = cur.peek()
        assert key_tok is not None
        constraint = _constraint_name(cur)
        cur.expect_word("PRIMARY", "after CONSTRAINT name", "write CONSTRAINT name PRIMARY KEY NOT ENFORCED")
        cur.expect_word("KEY", "after PRIMARY")
        _not_enforced(cur, key_tok)
        _set_key(cur, state, PrimaryKey((name,), constraint), key_tok, (name_tok,))
    comment = None
    if cur.accept_word("COMMENT"):
        comment = cur.expect_string(f"after COMMENT of column {name}", "write COMMENT 'text'")[1]
    state.columns.append((ColumnDef(name, column_type, comment), name_tok))


def _column_type(cur: Cursor) -> str | None:
    """The type's text as written: tokens up to ``,``/``)`` outside its own brackets, or a constraint."""
    first = cur.peek()
    if first is None or first.is_punct(",") or first.is_punct(")") or first.is_word(*_TYPE_STOP):
        return None
    if first.kind is not TokKind.WORD:
        raise cur.error(
            SqlSyntaxError,
            f"expected a column type, found {describe(first)}",
            first,
            "write a Spark SQL type such as STRING, BIGINT or DECIMAL(10, 2)",
        )
    parens = angles = 0
    last = first
    while (tok := cur.peek()) is not None:
        if parens == 0 and angles == 0 and (tok.is_punct(",") or tok.is_punct(")") or tok.is_word(*_TYPE_STOP)):
            break
        if (
            parens == 0
            and angles == 0
            and tok is not first
            and tok.kind is TokKind.WORD
            and tok.upper not in _TYPE_CONTINUATION
        ):
            raise cur.error(
                SqlSyntaxError,
                f"unexpected {describe(tok)} after the type "
                f"{cur.source.text[first.start : last.end]!r}: expected ',' or ')'",
                tok,
                "separate column definitions with ','",
            )
        if tok.is_punct("("):
            parens += 1
        elif tok.is_punct(")"):
            parens -= 1
        elif tok.kind is TokKind.OPERATOR:
            angles += tok.text.count("<") - tok.text.count(">")
        last = cur.advance()
    return cur.source.text[first.start : last.end]


def _constraint_name(cur: Cursor) -> str | None:
    if cur.accept_word("CONSTRAINT"):
        return cur.expect_identifier("a constraint name after CONSTRAINT", frozenset({"PRIMARY", "EXPECT"}))[1]
    return None


def _not_enforced(cur: Cursor, key_tok: Tok) -> None:
    tok = cur.peek()
    nxt = cur.peek(1)
    if tok is not None and tok.is_word("NOT") and nxt is not None and nxt.is_word("ENFORCED"):
        cur.advance()
        cur.advance()
        return
    found = "ENFORCED" if tok is not None and tok.is_word("ENFORCED") else describe(tok)
    raise cur.error(
        ConstraintError,
        f"PRIMARY KEY must be declared NOT ENFORCED, found {found}",
        tok or key_tok,
        "add NOT ENFORCED after the key: Flink does not enforce primary keys, and neither does Iceberg",
    )


def _set_key(cur: Cursor, state: _Columns, key: PrimaryKey, tok: Tok, toks: tuple[Tok, ...]) -> None:
    if state.primary_key is not None:
        raise cur.error(
            ConstraintError,
            "a second PRIMARY KEY: a table has at most one",
            tok,
            "declare one PRIMARY KEY (col, …) NOT ENFORCED listing all key columns",
        )
    state.primary_key = key
    state.key_toks = toks


def _check_consistent(cur: Cursor, state: _Columns) -> None:
    seen: set[str] = set()
    for column, tok in state.columns:
        if column.name.lower() in seen:
            raise cur.error(ColumnError, f"column {column.name!r} is declared twice", tok, "declare each column once")
        seen.add(column.name.lower())
    if state.primary_key is None or not seen:
        return
    for name, tok in zip(state.primary_key.columns, state.key_toks, strict=True):
        if name.lower() not in seen:
            raise cur.error(
                ColumnError,
                f"PRIMARY KEY column {name!r} is not in the column list",
                tok,
                f"add {name} to the column list, or fix the key column's name",
            )


def expectation(cur: Cursor, name: str, at: Tok) -> Expectation:
    """``EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]`` after ``CONSTRAINT name`` (the cursor at
    ``EXPECT``): the condition's text as written, between its parentheses."""
    cur.expect_word("EXPECT", f"after CONSTRAINT {name}")
    open_tok = cur.expect_punct("(", "after EXPECT", "write EXPECT (condition), e.g. EXPECT (amount >= 0)")
    depth, last = 1, open_tok
    while depth:
        tok = cur.advance()
        depth += 1 if tok.is_punct("(") else -1 if tok.is_punct(")") else 0
        if depth:
            last = tok
    if last is open_tok:
        raise cur.error(
            ConstraintError,
            f"expectation {name} has an empty condition",
            at,
            "write a condition over the table's columns, e.g. EXPECT (amount >= 0)",
        )
    condition = cur.source.text[open_tok.end : last.end].strip()
    action = OnViolation.KEEP
    if cur.accept_word("ON"):
        cur.expect_word("VIOLATION", "after ON", "write ON VIOLATION DROP ROW or ON VIOLATION FAIL UPDATE")
        if cur.accept_word("DROP"):
            cur.expect_word("ROW", "after ON VIOLATION DROP", "write ON VIOLATION DROP ROW")
            action = OnViolation.DROP_ROW
        elif cur.accept_word("FAIL"):
            cur.expect_word("UPDATE", "after ON VIOLATION FAIL", "write ON VIOLATION FAIL UPDATE")
            action = OnViolation.FAIL_UPDATE
        else:
            raise cur.unexpected(cur.peek(), ["DROP ROW", "FAIL UPDATE"])
    return Expectation(name, condition, action)


def _add_expectation(cur: Cursor, state: _Columns, found: Expectation, at: Tok) -> None:
    for other in state.expectations:
        if other.name.lower() == found.name.lower():
            raise cur.error(
                ConstraintError,
                f"constraint {found.name!r} is declared twice",
                at,
                "give each expectation its own name",
            )
    state.expectations.append(found)

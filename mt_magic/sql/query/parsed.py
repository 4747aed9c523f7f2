"""A query read once: :class:`ParsedQuery` carries sqlglot's tree and its Spark SQL text from rule to rule.

A CREATE's query is parsed once (:func:`parse_query`, where its errors are placed in the cell); the rewrites
(:mod:`.rewrite`, :mod:`.hidden_keys`) take a :class:`ParsedQuery` and return a new one, and the facts
(:func:`~mt_magic.sql.query.analysis.analyze_query`) are read from its tree. A rewrite's text is its tree's
``sql()``, the same bytes a parse of the previous text and the same rewrite gave (checked over the fuzzer's queries:
``tests/sql/test_parsed_query.py``).

Where only text crosses a boundary — the definition the catalog stores, read back by the view's registration and
by the first refresh — :func:`query_of` finds the query this process parsed or generated with that text (a small
memory of recent queries) and parses only a text it has not seen. A tree is shared: nothing changes one in place;
a rewrite works on :meth:`ParsedQuery.copy_tree`.

>>> q = parse_query("select a from t")
>>> q.text, query_of("select a from t") is q
('select a from t', True)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, TypeVar

import sqlglot
from sqlglot import exp

from mt_magic.sql.errors import QueryAnalysisError
from mt_magic.sql.names import Position
from mt_magic.sql.query.tree import DIALECT

if TYPE_CHECKING:
    from mt_magic.sql.query.facts import QueryFacts

Q = TypeVar("Q", str, "ParsedQuery")
"""A query as text (a rewrite gives text back) or parsed (a rewrite gives a new :class:`ParsedQuery`)."""

REMEMBERED = 256
"""How many queries :func:`query_of` remembers (the facts' cache before it held as many)."""


class ParsedQuery:
    """A query's tree (spark dialect; never changed in place) and its text (as written, or its tree's ``sql()``).

    Its facts are read once, on first use (:func:`~mt_magic.sql.query.analysis.analyze_query`).
    """

    __slots__ = ("tree", "text", "facts")

    def __init__(self, tree: exp.Query, text: str) -> None:
        self.tree = tree
        self.text = text
        self.facts: QueryFacts | None = None

    @classmethod
    def of_tree(cls, tree: exp.Query) -> ParsedQuery:
        """A rewritten tree (owned by the new value from now on) with its Spark SQL; remembered by that text."""
        return _remember(cls(tree, tree.sql(dialect=DIALECT)))

    def copy_tree(self) -> exp.Query:
        """A copy of the tree for a rewrite to change."""
        return self.tree.copy()

    def __repr__(self) -> str:
        return f"ParsedQuery({self.text!r})"


_memory: OrderedDict[str, ParsedQuery] = OrderedDict()
_lock = threading.Lock()


def _remember(query: ParsedQuery) -> ParsedQuery:
    with _lock:
        _memory[query.text] = query
        _memory.move_to_end(query.text)
        while len(_memory) > REMEMBERED:
            _memory.popitem(last=False)
    return query


def _recalled(text: str) -> ParsedQuery | None:
    with _lock:
        found = _memory.get(text)
        if found is not None:
            _memory.move_to_end(text)
        return found


def query_of(text: str) -> ParsedQuery | None:
    """The query with ``text``: remembered, else parsed once; ``None`` when the text is not exactly one query
    (callers keep their own reading of such text, and their own errors)."""
    found = _recalled(text)
    if found is not None:
        return found
    try:
        trees = sqlglot.parse(text, read=DIALECT)
    except sqlglot.errors.SqlglotError:
        return None
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        return None
    return _remember(ParsedQuery(trees[0], text))


def parse_query(text: str, *, statement: str | None = None, origin: Position | None = None) -> ParsedQuery:
    """The query ``text`` (an ``AS`` body), parsed once (or remembered), refused with its position in the cell.

    Args:
        statement: the statement it belongs to, named in errors.
        origin: where ``text`` starts in the cell, so error positions are cell positions.

    Raises:
        QueryAnalysisError: the text is not exactly one query sqlglot can read.
    """
    found = _recalled(text)
    if found is not None:
        return found
    tree, alone = _parse(text, statement, origin)
    query = ParsedQuery(tree, text)
    return _remember(query) if alone else query  # "SELECT 1;" is remembered by no text: a rewrite reads it its way


def _parse(sql: str, statement: str | None, origin: Position | None) -> tuple[exp.Query, bool]:
    """The one query of ``sql``, and whether it was all that was parsed (no empty statement after a ``;``)."""
    label = f"query of {statement}" if statement else "query"
    try:
        parsed = sqlglot.parse(sql, read=DIALECT)
        trees = [t for t in parsed if t is not None]
    except sqlglot.errors.ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        raise QueryAnalysisError(
            f"the query cannot be read as Spark SQL: {detail.get('description', exc)}",
            statement=label,
            offending=detail.get("highlight") or None,
            position=_cell_position(detail, origin),
            fix="correct the query near this position",
        ) from None
    except sqlglot.errors.SqlglotError as exc:
        raise QueryAnalysisError(
            f"the query cannot be read as Spark SQL: {exc}",
            statement=label,
            position=origin,
            fix="check quotes and brackets in the query",
        ) from None
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        what = "several statements" if len(trees) > 1 else "no query" if not trees else type(trees[0]).__name__
        raise QueryAnalysisError(
            f"the AS body must be exactly one query (SELECT …), found {what}",
            statement=label,
            offending=sql[:40],
            position=origin,
            fix="write a single SELECT (or WITH … SELECT) after AS",
        )
    return trees[0], len(parsed) == 1


def _cell_position(detail: dict[str, Any], origin: Position | None) -> Position | None:
    line, col = detail.get("line"), detail.get("col")
    if not isinstance(line, int) or not isinstance(col, int):
        return origin
    col = max(1, col - len(detail.get("highlight") or "x") + 1)
    return Position(line, col).inside(origin)


def read_tree(query: str | ParsedQuery) -> exp.Expr:
    """``query``'s tree to read (not to change): its own, remembered, or parsed as ``sqlglot.parse_one`` reads text
    that is not exactly one query.

    Raises:
        sqlglot.errors.ParseError: the text cannot be read.
    """
    if isinstance(query, ParsedQuery):
        return query.tree
    parsed = query_of(query)
    return parsed.tree if parsed is not None else sqlglot.parse_one(query, read=DIALECT)


def tree_to_change(query: str | ParsedQuery) -> exp.Expr:
    """A tree of ``query`` a rewrite may change (a copy of a shared one, :func:`read_tree`)."""
    tree = read_tree(query)
    return tree.copy() if isinstance(query, ParsedQuery) or _recalled(query) is not None else tree


def rewritten(query: Q, tree: exp.Expr) -> Q:
    """A rewrite's ``tree`` in the form ``query`` came in: a :class:`ParsedQuery` (remembered by its text), or text."""
    if isinstance(query, ParsedQuery) and isinstance(tree, exp.Query):
        return ParsedQuery.of_tree(tree)
    return tree.sql(dialect=DIALECT)  # type: ignore[return-value]


def text_of(query: str | ParsedQuery) -> str:
    """The query's text (what Spark is handed)."""
    return query.text if isinstance(query, ParsedQuery) else query


def wrapped(query: Q, select_list: str, alias: str) -> Q:
    """``SELECT <select_list> FROM (<query>) AS <alias>`` (a column list's renaming wrapper, its text exactly that);
    parsed, the wrapper's own text is read without the query, whose tree is put in (it is not parsed again)."""
    text = f"SELECT {select_list} FROM ({text_of(query)}) AS {alias}"
    if not isinstance(query, ParsedQuery):
        return text
    tree = sqlglot.parse_one(f"SELECT {select_list} FROM (SELECT 1) AS {alias}", read=DIALECT)
    inner = tree.find(exp.Subquery)
    assert isinstance(tree, exp.Query) and inner is not None
    inner.set("this", query.copy_tree())
    return _remember(ParsedQuery(tree, text))


def forget() -> None:
    """Forget every remembered query: each text is parsed again (tests comparing the tree path with a fresh parse)."""
    with _lock:
        _memory.clear()

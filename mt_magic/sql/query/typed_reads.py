"""What a query being typed reads, seen from the cursor: its tables with their aliases, and its named subqueries.

sqlglot (spark dialect) parses the query with the word at the cursor replaced by a placeholder and any parenthesis
left open closed, so ``SELECT  FROM t``, ``SELECT s. FROM t s`` or ``… WHERE`` still parse; its parser is told to
keep going past what it cannot read (``ErrorLevel.IGNORE``), which leaves the tables it did read.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, SqlglotError
from sqlglot.tokens import TokenType

from mt_magic.sql.query.tree import DIALECT

PLACEHOLDER = "mt_magic_cursor__"
"""Stands for the word being typed, so the query parses; never offered."""
_SPARK = Dialect.get_or_raise(DIALECT)


class _QuietParser(_SPARK.parser_class):  # type: ignore[name-defined]
    """Spark's parser, silent about what it reads as a ``Command``: a half-typed query is no one's mistake yet
    (sqlglot logs a warning, which a kernel would print under the cell)."""

    def _warn_unsupported(self) -> None:
        return None


@dataclass(frozen=True)
class Relation:
    """A relation the query reads, as the query names it."""

    parts: tuple[str, ...]
    """A table's name as written (``('mt', 'sales', 'orders')``); a CTE's or a subquery's alias alone."""
    alias: str = ""
    derived: tuple[str, ...] | None = None
    """A CTE's or a subquery's output columns; ``None`` for a catalog table (its columns are the catalog's)."""

    def known_as(self, qualifier: tuple[str, ...]) -> bool:
        """``qualifier`` (``s`` in ``s.col``, ``sales.orders`` in ``sales.orders.col``) names this relation."""
        typed = tuple(part.lower() for part in qualifier)
        if self.alias:
            return typed == (self.alias.lower(),)
        return typed == tuple(part.lower() for part in self.parts[-len(typed) :])

    @property
    def reference(self) -> str:
        """How the query refers to it: its alias, else its name as written."""
        return self.alias or ".".join(self.parts)


def relations(query: str, start: int | None = None, end: int | None = None) -> tuple[Relation, ...]:
    """The tables (without the CTEs' names) and named subqueries of ``query``, in the order written.

    Args:
        query: the query text (a cell's ``AS SELECT …`` body, or a query cell).
        start, end: the word being typed (``query[start:end]``), replaced by :data:`PLACEHOLDER` (none: the
            cursor is not in the query).
    """
    tree = _parse(query if start is None else query[:start] + PLACEHOLDER + query[end:])
    if tree is None:
        return ()
    ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE)}
    found: list[Relation] = []
    for table in tree.find_all(exp.Table, bfs=False):
        parts = tuple(part.name for part in table.parts)
        if not isinstance(table.this, exp.Identifier) or PLACEHOLDER in parts:
            continue
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        found.append(Relation(parts, table.alias))
    for node in tree.find_all(exp.CTE, exp.Subquery, bfs=False):
        if node.alias and isinstance(node.this, exp.Query):
            columns = tuple(c for c in node.this.named_selects if c and c not in ("*", PLACEHOLDER))
            found.append(Relation((node.alias,), node.alias, columns))
    return tuple(found)


def output_columns(query: str) -> tuple[str, ...]:
    """The names of the query's result columns as far as the text says them (``*`` where it selects all)."""
    tree = _parse(query)
    if not isinstance(tree, exp.Query):
        return ()
    return tuple(name for name in tree.named_selects if name)


def _parse(text: str) -> exp.Expr | None:
    """The query's tree as far as sqlglot can read it, with the parentheses left open closed."""
    try:
        tokens = _SPARK.tokenize(text)
        depth = sum((t.token_type is TokenType.L_PAREN) - (t.token_type is TokenType.R_PAREN) for t in tokens)
        if depth > 0:
            text += ")" * depth
            tokens = _SPARK.tokenize(text)
        trees = _QuietParser(error_level=ErrorLevel.IGNORE, dialect=_SPARK).parse(tokens, text)
    except SqlglotError:  # an unterminated string or quote: nothing to read yet
        return None
    return trees[0] if trees else None

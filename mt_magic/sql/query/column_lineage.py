"""Which source columns feed each output column of a query (sqlglot's lineage over the spark dialect), for the
column-lineage facet of a refresh's OpenLineage events.

A column read as is is ``IDENTITY``; one inside an aggregate call ``AGGREGATION``; anything else
``TRANSFORMATION`` (OpenLineage's subtypes of a ``DIRECT`` transformation). An output column whose origin cannot be
followed (a ``*`` without a schema, a literal, ``COUNT(*)``) has no entry: nothing is guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.lineage import Node, lineage

from mt_magic.sql.query.parsed import query_of
from mt_magic.sql.query.tree import DIALECT


@dataclass(frozen=True)
class ColumnOrigin:
    """One source column an output column is computed from."""

    table: str
    """The source as written in the query (dotted parts, no alias)."""
    column: str
    subtype: str
    """``IDENTITY``, ``TRANSFORMATION`` or ``AGGREGATION``."""


def _subtype(node: Node) -> str:
    select = node.expression.this if isinstance(node.expression, exp.Alias) else node.expression
    if isinstance(select, exp.Column):
        return "IDENTITY"
    return "AGGREGATION" if select.find(exp.AggFunc) is not None else "TRANSFORMATION"


def _table_name(table: exp.Table) -> str:
    return ".".join(part.name for part in table.parts)


def column_origins(query: str) -> dict[str, tuple[ColumnOrigin, ...]]:
    """Output column → the source columns it reads (select-list order; empty for a query that cannot be read)."""
    parsed = query_of(query)
    if parsed is None or not isinstance(parsed.tree, exp.Query):
        return {}
    origins: dict[str, tuple[ColumnOrigin, ...]] = {}
    for output in parsed.tree.named_selects:
        if output == "*":
            continue
        try:
            root = lineage(output, parsed.tree, {}, dialect=DIALECT)
        except (SqlglotError, KeyError, ValueError):
            continue
        subtype = _subtype(root)
        found = [
            ColumnOrigin(_table_name(leaf.expression), leaf.name.split(".")[-1], subtype)
            for leaf in root.walk()
            if not leaf.downstream and isinstance(leaf.expression, exp.Table)
        ]
        if found:
            origins[output] = tuple(dict.fromkeys(found))
    return origins

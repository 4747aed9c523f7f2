"""Rewrites of the result SELECT that incremental strategies run, on sqlglot's tree (spark dialect).

Each rewrite touches only the result SELECT (found as :func:`mt_magic.sql.query.result_shape.result_select` finds it),
so the facts the planner read and the SQL the strategies run describe the same SELECT.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from decimal import Decimal

import sqlglot
from sqlglot import exp

from mt_magic.sql.query.parsed import tree_to_change
from mt_magic.sql.query.result_shape import result_select
from mt_magic.sql.query.tree import DIALECT

Predicate = exp.Expr
"""A condition built here (:func:`literal`, :func:`in_list`) and handed back to :func:`with_input_filter`: callers
outside ``mt_magic.sql`` hold it without looking inside (sqlglot stays in this package)."""


def _result(query: str) -> tuple[exp.Expr, exp.Select]:
    tree = tree_to_change(query)
    found = result_select(tree)
    if found is None:
        raise ValueError("the query has no result SELECT (it is a set operation)")
    return tree, found[0]


def without_having(query: str) -> str:
    """The query with the result SELECT's HAVING removed: every group the input produces appears."""
    tree, select = _result(query)
    select.set("having", None)
    return tree.sql(dialect=DIALECT)


def window_probe(query: str) -> str:
    """The query without the filter of an outer SELECT over its windows (``WHERE rn <= 3`` of a top-N).

    Over a delta, such a filter could drop every row of a partition the delta touches; without it each
    touched partition's key appears (the probe only locates partitions, a superset is correct).
    """
    tree, select = _result(query)
    own = any(w.find_ancestor(exp.Select) is select for w in select.find_all(exp.Window))
    if not own:
        select.set("where", None)
    return tree.sql(dialect=DIALECT)


def with_input_filter(query: str, predicates: Sequence[exp.Expr]) -> str:
    """The query with ``predicates`` ANDed into the result SELECT's WHERE (filtering its input rows)."""
    if not predicates:
        return query
    tree, select = _result(query)
    for predicate in predicates:
        select.where(predicate, append=True, copy=False)
    return tree.sql(dialect=DIALECT)


def _input_probe(query: str, expressions: Sequence[exp.Expr]) -> str:
    """``SELECT <expressions> FROM <the result SELECT's input>`` (its WHERE and joins kept; no grouping, HAVING,
    order or limit), with the query's CTEs."""
    tree, select = _result(query)
    probe = select.copy()
    for clause in ("group", "having", "order", "limit", "distinct", "qualify"):
        probe.set(clause, None)
    probe.set("expressions", list(expressions))
    with_ = tree.args.get("with_") or tree.args.get("with")
    if with_ is not None and select is not tree:
        probe.set("with_" if "with_" in tree.args else "with", with_.copy())
    return probe.sql(dialect=DIALECT)


def key_probe(query: str, keys: Sequence[str]) -> str:
    """``SELECT <keys> FROM <the result SELECT's input>``: the grouping expressions as input columns."""
    return _input_probe(
        query, [exp.alias_(sqlglot.parse_one(k, read=DIALECT), f"__mt_k{i}") for i, k in enumerate(keys)]
    )


@functools.lru_cache(maxsize=256)
def summed_expression(call: str) -> str:
    """The argument of a ``sum`` call (``sum(d) FILTER (WHERE …)`` → ``d``), Spark SQL; ``""`` if it has none."""
    found = sqlglot.parse_one(call, read=DIALECT).find(exp.Sum)
    return "" if found is None or found.this is None else found.this.sql(dialect=DIALECT)


def mass_probe(query: str, summed: Sequence[str]) -> str:
    """``SELECT coalesce(sum(abs(CAST(<e> AS DOUBLE))), 0) AS __mt_m<i>, … FROM <the result SELECT's input>``: for
    each summed expression, the absolute values it adds up over every input row, as one row.

    A sum's own filter (``FILTER (WHERE …)``) is left out: the probe bounds those values from above.
    """
    terms = [f"coalesce(sum(abs(CAST({e} AS DOUBLE))), CAST(0 AS DOUBLE)) AS __mt_m{i}" for i, e in enumerate(summed)]
    return _input_probe(query, [sqlglot.parse_one(t, read=DIALECT) for t in terms])


def literal(value: object, type_name: str) -> exp.Expr | None:
    """A Spark SQL literal of ``value`` for a column of Spark type ``type_name``; ``None`` if not renderable.

    Timestamps arrive as microseconds since the epoch (collected with ``unix_micros``), so no time zone
    conversion happens between Spark and Python.
    """
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if type_name == "timestamp" and isinstance(value, int):
        return exp.func("timestamp_micros", exp.Literal.number(value))
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("DATE"))
    if isinstance(value, Decimal) and type_name.startswith("decimal"):
        return exp.cast(exp.Literal.string(str(value)), exp.DataType.build(type_name, dialect=DIALECT))
    return None


def in_list(key_sql: str, literals: Sequence[exp.Expr], has_null: bool) -> exp.Expr:
    """``key IN (…) OR key IS NULL`` (either part only when needed; ``FALSE`` when both are empty)."""
    key = sqlglot.parse_one(key_sql, read=DIALECT)
    parts: list[exp.Expr] = []
    if literals:
        parts.append(exp.In(this=exp.Paren(this=key.copy()), expressions=list(literals)))
    if has_null:
        parts.append(exp.Is(this=exp.Paren(this=key.copy()), expression=exp.Null()))
    if not parts:
        return exp.false()
    return exp.Paren(this=exp.or_(*parts)) if len(parts) > 1 else parts[0]

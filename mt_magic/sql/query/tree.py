"""Small readers of sqlglot trees (spark dialect) shared by the query analysis modules."""

from __future__ import annotations

from sqlglot import exp

from mt_magic.sql.query.facts import AggregateCall

DIALECT = "spark"

UNKNOWN_AGGREGATES = frozenset(
    """every some any try_sum try_avg histogram_numeric count_min_sketch hll_sketch_agg hll_union_agg product
    bitmap_construct_agg bitmap_or_agg approx_top_k""".split()
)
"""Spark aggregate functions that sqlglot reads as anonymous functions."""


def spark_sql(node: exp.Expr) -> str:
    return node.sql(dialect=DIALECT)


def function_name(fn: exp.Expr) -> str:
    """A function's Spark name, lower case: as written for unknown functions, else as Spark spells it."""
    if isinstance(fn, exp.Anonymous):
        return str(fn.name).lower()
    return spark_sql(fn).split("(", 1)[0].strip().lower()


def is_aggregate(fn: exp.Expr) -> bool:
    return isinstance(fn, exp.AggFunc) or (isinstance(fn, exp.Anonymous) and function_name(fn) in UNKNOWN_AGGREGATES)


def in_window(fn: exp.Expr) -> bool:
    parent = fn.parent
    if isinstance(parent, exp.Filter):
        parent = parent.parent
    return isinstance(parent, exp.Window)


def aggregate_calls(tree: exp.Expr) -> list[AggregateCall]:
    calls = []
    for fn in tree.find_all(exp.Func, bfs=False):
        if not is_aggregate(fn) or in_window(fn):
            continue
        distinct = any(isinstance(a, exp.Distinct) for a in fn.iter_expressions())
        filtered = isinstance(fn.parent, exp.Filter)
        source = fn.parent if filtered and fn.parent is not None else fn
        calls.append(AggregateCall(function_name(fn), distinct, filtered, spark_sql(source)))
    return calls

"""Expectations over groups of rows (``count(*) OVER (PARTITION BY order_id) = 1``): counted on the table as it
will be published, the staged snapshot, after the write (whose observed metrics count the row conditions only).

A group passes or fails as a whole, and a duplicate pairs a row the refresh added with one already published, so
a refresh that appended reads the rows of the groups it touched: the staged snapshot's rows whose ``PARTITION BY``
values appear among the rows it added (a null-safe join with those values, distinct), old rows included. Any other
refresh (a recompute, an overwrite, a ``MERGE``) reads the whole staged table. One Spark aggregation counts every
group expectation there (:func:`with_group_counts`); a table without one runs nothing here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING, Any

from mt_magic.runtime.refresh.audit import (
    Audit,
    Counted,
    failing_sample,
    over_groups,
    passes,
    shown_columns,
)
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.vocabulary import Expectation

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

IN_GROUP = "__mt_group_in_{}"
"""Column marking a row of a group the refresh touched, for the ``i``-th group expectation."""
FAILS = "__mt_group_fails_{}"
"""Column TRUE for a row failing the ``i``-th group expectation (its window computed over the rows read)."""


def grouped(expectations: tuple[Expectation, ...]) -> tuple[Expectation, ...]:
    """The expectations over groups of rows (their condition holds a window function)."""
    return tuple(e for e in expectations if over_groups(e) is not None)


def row_level(expectations: tuple[Expectation, ...]) -> tuple[Expectation, ...]:
    """The row conditions: what a write counts as it passes the rows (:mod:`.audit_write`)."""
    return tuple(e for e in expectations if over_groups(e) is None)


def with_group_counts(
    session: SparkSession,
    table: str,
    counted: Audit,
    expectations: tuple[Expectation, ...],
    staged: int,
    added: DataFrame | None,
) -> Audit:
    """``counted`` (the write's counts of the row conditions) with every group expectation counted on ``table`` at
    ``staged``, in the declared order; ``added``: the rows the refresh appended (``None``: read the whole table).
    A ``FAIL UPDATE`` one that failed carries a sample of its failing rows (in memory only, as a row one's)."""
    from pyspark.sql import functions as F

    groups = grouped(expectations)
    if not groups:
        return counted
    marked = _marked(table_at(session, table, staged), groups, added)
    sums = [F.sum(F.when(F.col(IN_GROUP.format(i)), 1).otherwise(0)).alias(f"c{i}") for i in range(len(groups))] + [
        F.sum(F.when(F.col(IN_GROUP.format(i)) & F.col(FAILS.format(i)), 1).otherwise(0)).alias(f"f{i}")
        for i in range(len(groups))
    ]
    row = marked.agg(*sums).first()
    found = {
        e.name: Counted(e.name, e.on_violation, int(_got(row, f"c{i}")), int(_got(row, f"f{i}")))
        for i, e in enumerate(groups)
    }
    for i, e in enumerate(groups):
        if found[e.name].blocks:
            found[e.name] = replace(found[e.name], sample=_sample(marked, i))
    by_name = {c.name: c for c in counted.counts}
    return Audit(tuple(found.get(e.name) or by_name[e.name] for e in expectations))


def _marked(rows: DataFrame, groups: tuple[Expectation, ...], added: DataFrame | None) -> DataFrame:
    """``rows`` of the groups the refresh touched (all of them where ``added`` is ``None``), each marked per group
    expectation: in a touched group (:data:`IN_GROUP`) and failing (:data:`FAILS`, the window over these rows)."""
    from pyspark.sql import functions as F

    for i, e in enumerate(groups):
        keys = over_groups(e) or ()
        if added is None or not keys:
            rows = rows.withColumn(IN_GROUP.format(i), F.lit(True))
            continue
        named = [f"__mt_group_key_{i}_{j}" for j in range(len(keys))]
        touched = added.select(*(F.expr(k).alias(n) for k, n in zip(keys, named, strict=True))).distinct()
        on: Column = reduce(
            lambda a, b: a & b, (F.expr(k).eqNullSafe(F.col(n)) for k, n in zip(keys, named, strict=True))
        )
        touched = touched.withColumn(IN_GROUP.format(i), F.lit(True))
        rows = rows.join(touched, on, "left").drop(*named)
        rows = rows.withColumn(IN_GROUP.format(i), F.coalesce(F.col(IN_GROUP.format(i)), F.lit(False)))
    touched_any = reduce(lambda a, b: a | b, (F.col(IN_GROUP.format(i)) for i in range(len(groups))))
    rows = rows.where(touched_any)
    return rows.select("*", *(F.expr(f"NOT {passes(e)}").alias(FAILS.format(i)) for i, e in enumerate(groups)))


def _sample(marked: DataFrame, i: int) -> tuple[str, ...]:
    """A few rows failing the ``i``-th group expectation, as ``col=value, …`` (a held refresh only)."""
    from pyspark.sql import functions as F

    visible = shown_columns(c for c in marked.columns if not c.startswith("__mt_group_"))
    return failing_sample(marked.where(F.col(IN_GROUP.format(i)) & F.col(FAILS.format(i))), visible)


def _got(row: Any, name: str) -> int:
    return int((row[name] if row is not None else 0) or 0)

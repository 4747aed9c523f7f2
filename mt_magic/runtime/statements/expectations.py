"""A definition's expectations, checked with Spark before anything is written (one over groups of rows, a window
function in its condition, never drops rows: :mod:`~mt_magic.runtime.refresh.audit_groups`), and the stored query
with the ``DROP ROW`` ones applied: ``SELECT * FROM (query) WHERE cond AND …``, so a table equals its query with the
failing rows removed after every refresh (the incremental planner reads that query as any other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.errors import DefinitionError
from mt_magic.runtime.refresh.audit import ALIAS, kept, over_groups, passes
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.query.group_condition import window_partitions
from mt_magic.sql.query.parsed import Q, parse_query, text_of
from mt_magic.vocabulary import Expectation, OnViolation

if TYPE_CHECKING:
    from pyspark.sql.types import DataType


def check_expectations(ws: Workspace, label: str, query: str, expectations: tuple[Expectation, ...]) -> None:
    """Each condition must be a boolean over the query's columns, without aggregates; a window function makes it an
    expectation over groups (:func:`_check_groups`).

    Raises:
        DefinitionError: the first that is not, with Spark's reason and the columns it may use.
    """
    if not expectations:
        return
    for expectation in expectations:
        _check_groups(label, expectation)
    columns = [f.name for f in ws.spark.sql(query).schema.fields if not f.name.startswith("__mt_")]
    fix = f"write the condition over the table's columns ({', '.join(columns)}), e.g. EXPECT ({columns[0]} IS NOT NULL)"
    for expectation in expectations:
        base = f"FROM ({query}) AS {ALIAS}"
        kind = _analysed(ws, label, expectation, f"SELECT ({expectation.condition}) AS c {base}", fix)
        if kind.typeName() != "boolean":
            raise DefinitionError(
                f"expectation {expectation.name} ({expectation.condition}) is a {kind.simpleString()}, not a condition",
                statement=label,
                offending=expectation.condition,
                fix="write a comparison that is TRUE for a good row, e.g. EXPECT (amount >= 0)",
            )
        passing = f"SELECT * {base} WHERE {passes(expectation)}"
        if over_groups(expectation) is not None:  # a window is evaluated in a projection, never in WHERE
            passing = f"SELECT * FROM (SELECT *, {passes(expectation)} AS __mt_passes {base}) WHERE __mt_passes"
        _analysed(ws, label, expectation, passing, fix)  # no aggregates


def _check_groups(label: str, expectation: Expectation) -> None:
    """An expectation over groups (a window function in its condition) must name its groups, one set of keys, and
    may not drop rows (dropping some would change the groups the others are judged in).

    Raises:
        DefinitionError: it does not; nothing is written.
    """
    windows = window_partitions(expectation.condition)
    what = f"expectation {expectation.name} ({expectation.condition})"
    example = "e.g. EXPECT (count(*) OVER (PARTITION BY order_id) = 1)"
    if not windows:
        return
    if expectation.on_violation is OnViolation.DROP_ROW:
        raise DefinitionError(
            f"{what} is over groups of rows (a window function) and cannot DROP ROW: dropping rows would change the "
            "groups it judges",
            statement=label,
            offending=expectation.condition,
            fix="use ON VIOLATION FAIL UPDATE (hold the refresh) or no ON VIOLATION (keep and count the rows)",
        )
    if any(not keys for keys in windows):
        raise DefinitionError(
            f"{what} has a window function without PARTITION BY: its group would be the whole table",
            statement=label,
            offending=expectation.condition,
            fix=f"partition the window by the keys of a group, {example}",
        )
    if over_groups(expectation) == ():
        raise DefinitionError(
            f"{what} partitions its window functions by different keys",
            statement=label,
            offending=expectation.condition,
            fix="write one CONSTRAINT per set of PARTITION BY keys",
        )


def _analysed(ws: Workspace, label: str, expectation: Expectation, sql: str, fix: str) -> DataType:
    """The first column's type of ``sql`` as Spark analyses it (nothing runs), or the expectation's error."""
    try:
        return ws.spark.sql(sql).schema.fields[0].dataType
    except Exception as exc:  # AnalysisException and friends: Spark's reason, first line
        reason = str(getattr(exc, "desc", None) or exc).strip().splitlines()[0]
        raise DefinitionError(
            f"expectation {expectation.name} ({expectation.condition}) cannot be evaluated: {reason}",
            statement=label,
            offending=expectation.condition,
            fix=fix,
        ) from exc


def with_dropped_rows(query: Q, expectations: tuple[Expectation, ...]) -> Q:
    """``query`` with the ``DROP ROW`` expectations' failing rows filtered out (unchanged without any)."""
    keeps = kept(expectations)
    if keeps is None:
        return query
    text = f"SELECT * FROM ({text_of(query)}) AS {ALIAS} WHERE {keeps}"
    return parse_query(text) if not isinstance(query, str) else text

"""A definition's expectations, checked with Spark before anything is written, and the stored query with the
``DROP ROW`` ones applied: ``SELECT * FROM (query) WHERE cond AND …``, so a table equals its query with the
failing rows removed after every refresh (the incremental planner reads that query as any other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.errors import DefinitionError
from mt_magic.runtime.refresh.audit import ALIAS, kept, passes
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.query.parsed import Q, parse_query, text_of
from mt_magic.vocabulary import Expectation

if TYPE_CHECKING:
    from pyspark.sql.types import DataType


def check_expectations(ws: Workspace, label: str, query: str, expectations: tuple[Expectation, ...]) -> None:
    """Each condition must be a boolean over the query's columns, without aggregates or windows.

    Raises:
        DefinitionError: the first that is not, with Spark's reason and the columns it may use.
    """
    if not expectations:
        return
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
        _analysed(ws, label, expectation, f"SELECT * {base} WHERE {passes(expectation)}", fix)  # no aggregates


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

"""Spark's refusal of a definition's query is said where the user wrote it (issue 38): the cell's line and column of
the token Spark points at (Spark analyses the rewritten query, whose positions the user never saw), Spark's problem
without its plan or SQLSTATE, and a Fix with the name Spark or the session suggests."""

from __future__ import annotations

import pytest
from mt_testing import run

from mt_magic.errors import DefinitionError

pytestmark = pytest.mark.spark


@pytest.fixture
def source(spark, mt) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE TABLE tms_source (order_id STRING, tms_company STRING) USING iceberg")


def _refusal(mt, cell: str) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(DefinitionError) as refused:
        run(mt, cell)
    return str(refused.value)


def test_a_group_by_over_a_missing_column_is_placed_in_the_cell_with_the_column_meant(mt, source) -> None:
    cell = (
        "CREATE MATERIALIZED TABLE per_company\n"
        "FRESHNESS = INTERVAL '1' MINUTE\n"
        "AS SELECT tms_company, count(*) AS n\n"
        "   FROM tms_source\n"
        "   GROUP BY tms_compnay"
    )
    message = _refusal(mt, cell)
    assert message.startswith(
        "CREATE MATERIALIZED TABLE per_company, line 5, column 13: Spark cannot analyse the query: "
        "A column or function parameter with name `tms_compnay` cannot be resolved"
        if "variable" not in message
        else "CREATE MATERIALIZED TABLE per_company, line 5, column 13: Spark cannot analyse the query: "
        "A column, variable, or function parameter with name `tms_compnay` cannot be resolved"
    ), message
    assert message.endswith("Fix: did you mean `tms_company`? (Spark sees `tms_company`, `order_id`).") or (
        message.endswith("Fix: did you mean `tms_company`? (Spark sees `order_id`, `tms_company`).")
    ), message
    assert "line 1 pos" not in message and "SQLSTATE" not in message and "Aggregate" not in message


def test_the_occurrence_spark_points_at_is_the_one_placed(mt, source) -> None:
    # the rewrite qualifies the FROM (`mt.<namespace>.tms_source`); Spark points at the second `tms_source.`
    cell = "CREATE MATERIALIZED TABLE twice AS SELECT tms_source.order_id,\n  tms_source.nope FROM tms_source"
    message = _refusal(mt, cell)
    assert message.startswith("CREATE MATERIALIZED TABLE twice, line 2, column 3: "), message
    assert message.endswith(
        "Fix: use one of the columns Spark sees: `tms_source`.`order_id`, `tms_source`.`tms_company`."
    ) or ("Fix: did you mean" in message), message


def test_an_unknown_function_suggests_the_one_meant_and_alter_as_is_placed_too(mt, source) -> None:
    run(mt, "CREATE MATERIALIZED TABLE lengths AS SELECT order_id FROM tms_source")
    message = _refusal(
        mt, "ALTER MATERIALIZED TABLE lengths\nAS SELECT order_id, lenght(tms_company) AS l FROM tms_source"
    )
    assert " AS, line 2, column 21: Spark cannot analyse the query: " in message, message
    assert "`lenght`" in message, message  # as written, not as the rewrite spelled it
    assert message.endswith("Fix: did you mean length?"), message


def test_a_missing_aggregation_gives_sparks_advice_as_the_fix(mt, source) -> None:
    message = _refusal(
        mt, "CREATE MATERIALIZED TABLE grouped AS SELECT tms_company, order_id FROM tms_source GROUP BY tms_company"
    )
    assert "Fix: add the columns or the expression to the GROUP BY" in message, message
    assert "SQLSTATE" not in message and "Aggregate [" not in message

"""A statement's refusal of a source says where the source is in the cell (issue 38): the line and column of a
missing source table or of a temporary view, in a CREATE and in an ALTER … AS, with the Fix."""

from __future__ import annotations

import pytest
from mt_testing import run

from mt_magic.errors import DefinitionError

pytestmark = pytest.mark.spark


@pytest.fixture
def names(spark, mt) -> str:  # type: ignore[no-untyped-def]
    spark.sql("CREATE TABLE pos_source (k STRING, v INT) USING iceberg")
    spark.sql("INSERT INTO pos_source VALUES ('a', 1)")
    spark.range(3).createOrReplaceTempView("pos_view")
    run(mt, "CREATE MATERIALIZED TABLE pos_table AS SELECT k, v FROM pos_source")
    return f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}"


def test_a_temporary_view_is_refused_at_its_line_and_column(mt, names: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        run(mt, "CREATE MATERIALIZED TABLE pos_copy\nAS SELECT id\nFROM pos_view")
    assert str(refused.value) == (
        "CREATE MATERIALIZED TABLE pos_copy, line 3, column 6: source pos_view is a temporary view; materialized "
        "tables may only read catalog tables (a refresh in another session could not see it). Fix: write it to an "
        "Iceberg table first, and read that."
    )


def test_alter_as_names_a_missing_source_at_its_line_and_column(mt, names: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        run(mt, "ALTER MATERIALIZED TABLE pos_table AS\nSELECT k, v\n  FROM pos_sourc")
    assert str(refused.value) == (
        f"ALTER MATERIALIZED TABLE {names}.pos_table AS, line 3, column 8: source table {names}.pos_sourc does not "
        f"exist in the catalog. Fix: did you mean {names}.pos_source?"
    )


def _query_refusal(mt, text: str) -> str:  # type: ignore[no-untyped-def]
    from mt_magic.runtime.inspect.query import QueryCellError, resolve, to_pandas

    with pytest.raises(QueryCellError) as refused:
        to_pandas(mt.workspace, resolve(mt.workspace, text), 10)
    return str(refused.value)


def test_a_query_cell_s_unknown_column_is_placed_where_it_was_typed_with_the_column_meant(mt, spark) -> None:
    spark.sql("CREATE TABLE pos_amounts (amount INT) USING iceberg")
    message = _query_refusal(mt, "SELECT\n  amout\nFROM pos_amounts")
    said = "A column, variable, or function parameter" if "variable" in message else "A column or function parameter"
    assert message == (
        f"%%mtsql, line 2, column 3: Spark cannot analyse the query: {said} with name `amout` cannot be resolved. "
        "Fix: did you mean `amount`? (Spark sees `amount`)."
    )


def test_a_query_cell_s_unknown_function_is_placed_and_the_function_meant_suggested(mt, names: str) -> None:
    message = _query_refusal(mt, "SELECT k,\n       lenght(k) AS n FROM pos_source")
    assert message.startswith("%%mtsql, line 2, column 8: Spark cannot analyse the query: "), message
    assert "`lenght`" in message and "line 1 pos" not in message, message
    assert message.endswith("Fix: did you mean length?"), message

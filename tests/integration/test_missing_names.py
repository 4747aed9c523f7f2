"""A name that is not in the catalog is answered with the statement, the name, and a Fix with the closest name of
its namespace (issue 38): a source of a CREATE, and the table an ALTER, DROP or DESCRIBE names."""

from __future__ import annotations

import pytest
from mt_testing import run

from mt_magic.errors import DefinitionError, NoSuchMaterializedTableError

pytestmark = pytest.mark.spark


@pytest.fixture
def names(spark, mt) -> str:  # type: ignore[no-untyped-def]
    spark.sql("CREATE TABLE tms_source (order_id STRING, tms_company STRING) USING iceberg")
    spark.sql("INSERT INTO tms_source VALUES ('1', 'a')")
    run(
        mt,
        "CREATE MATERIALIZED TABLE continues_tms_res FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT tms_company, count(*) AS n FROM tms_source GROUP BY tms_company",
    )
    return f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}"


def test_a_missing_source_names_the_closest_table(mt, names: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        run(mt, "CREATE MATERIALIZED TABLE counts AS SELECT tms_company FROM tms_sauce")
    assert str(refused.value) == (
        f"CREATE MATERIALIZED TABLE counts, line 1, column 61: source table {names}.tms_sauce does not exist in the "
        "catalog. "
        f"Fix: did you mean {names}.tms_source?"
    )
    with pytest.raises(DefinitionError) as refused:
        run(mt, "CREATE MATERIALIZED TABLE counts AS SELECT 1 AS one FROM zzz_nothing_like_it")
    assert str(refused.value).endswith(
        f"Fix: check the name; SHOW TABLES IN {names} lists the tables there (unqualified names are in it)."
    )


@pytest.mark.parametrize(
    ("statement", "verb"),
    [
        ("ALTER MATERIALIZED TABLE continues_tms_re SUSPEND", "ALTER"),
        ("ALTER MATERIALIZED TABLE continues_tms_re SET FRESHNESS = INTERVAL '2' MINUTE", "ALTER"),
        ("DROP MATERIALIZED TABLE continues_tms_re", "DROP"),
        ("DESCRIBE MATERIALIZED TABLE continues_tms_re", "DESCRIBE"),
    ],
)
def test_a_statement_on_a_missing_table_names_the_closest_one(mt, names: str, statement: str, verb: str) -> None:
    with pytest.raises(NoSuchMaterializedTableError) as refused:
        run(mt, statement)
    skip = " (DROP MATERIALIZED TABLE IF EXISTS skips a missing table.)" if verb == "DROP" else ""
    assert str(refused.value) == (
        f"{verb} MATERIALIZED TABLE continues_tms_re: {names}.continues_tms_re does not exist. "
        f"Fix: did you mean {names}.continues_tms_res?{skip}"
    )

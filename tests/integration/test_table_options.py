"""WITH options that are Iceberg table properties reach the Iceberg table; mt_magic's own stay in ``mt.*``."""

from __future__ import annotations

import pytest
from mt_testing import run

pytestmark = pytest.mark.spark


def test_iceberg_properties_from_with_are_applied(mt, spark) -> None:
    spark.sql("CREATE TABLE opt_src (k INT) USING iceberg")
    spark.sql("INSERT INTO opt_src VALUES (1), (2)")
    run(
        mt,
        """
        CREATE MATERIALIZED TABLE opts
        WITH ('write.format.default' = 'orc', 'commit.retry.num-retries' = '7', 'team.owner' = 'data-eng',
              'incremental' = 'always')
        FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT k, count(*) AS n FROM opt_src GROUP BY k
    """,
    )
    info, definition = mt.workspace.catalog.load_materialized(
        f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}.opts"
    )
    assert info.properties["write.format.default"] == "orc"
    assert info.properties["commit.retry.num-retries"] == "7" and info.properties["team.owner"] == "data-eng"
    assert "incremental" not in info.properties and definition.options["incremental"] == "always"
    files = spark.sql(f"SELECT file_format FROM {info.name}.files").collect()
    assert files and {row[0] for row in files} == {"ORC"}

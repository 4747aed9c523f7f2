"""Every statement of Flink's materialized-table reference and of the two tutorials in shared/seeds parses to
the expected structure. Query bodies are adapted to Spark SQL where Flink's differ (``...`` placeholders
filled in, ``//`` comments written as ``--``); the DDL part is as published, except Flink/Paimon connector
options (``'format'``, ``'merge-engine'``, ``'sink.parallelism'``, …), which are removed here as their error tells
the user to; the statements as published, with those errors, are in ``test_seed_statements.py``."""

from __future__ import annotations

import pytest

from mt_magic.sql import (
    AlterFreshness,
    AlterQuery,
    AlterRefresh,
    AlterResume,
    AlterSuspend,
    ColumnDef,
    CreateMaterializedTable,
    DropMaterializedTable,
    Freshness,
    FreshnessUnit,
    Position,
    PrimaryKey,
    RefreshMode,
    TableName,
    parse_cell,
)

P0 = Position(1, 1)
HOUR = FreshnessUnit.HOUR
MINUTE = FreshnessUnit.MINUTE
SECOND = FreshnessUnit.SECOND
DAY = FreshnessUnit.DAY


def create(name: str | TableName, query: str, **fields: object) -> CreateMaterializedTable:
    table = name if isinstance(name, TableName) else TableName(name)
    return CreateMaterializedTable(text="", position=P0, name=table, query=query, **fields)  # type: ignore[arg-type]


def only(cell: str):
    statements = parse_cell(cell)
    assert len(statements) == 1, statements
    return statements[0]


CONTINUOUS_QUERY = (
    "SELECT k.ds, k.user_id, COUNT(*) AS event_count, SUM(k.amount) AS total_amount, MAX(u.age) AS max_age "
    "FROM kafka_catalog.db1.kafka_table k JOIN user_catalog.db1.user_table u ON k.user_id = u.user_id "
    "WHERE k.event_type = 'purchase' GROUP BY k.ds, k.user_id"
)
FULL_QUERY = (
    "SELECT p.ds, p.product_id, p.product_name, AVG(s.sale_price) AS avg_sale_price, "
    "SUM(s.quantity) AS total_quantity FROM paimon_catalog.db1.product_table p "
    "LEFT JOIN paimon_catalog.db1.sales_table s ON p.product_id = s.product_id "
    "WHERE p.category = 'electronics' GROUP BY p.ds, p.product_id, p.product_name"
)
FULL_OPTIONS = (("partition.fields.ds.date-formatter", "yyyy-MM-dd"),)


REFERENCE = [
    pytest.param(
        "-- Create a materialized table and specify the partition field as `ds`.\n"
        "CREATE MATERIALIZED TABLE my_materialized_table PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' HOUR "
        "AS SELECT ds FROM source_table",
        create(
            "my_materialized_table", "SELECT ds FROM source_table", partitioned_by=("ds",), freshness=Freshness(1, HOUR)
        ),
        id="partitioned-by",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table PARTITIONED BY (ds) WITH ( "
        "'partition.fields.ds.date-formatter' = 'yyyy-MM-dd' ) AS SELECT ds FROM source_table",
        create("my_materialized_table", "SELECT ds FROM source_table", partitioned_by=("ds",), options=FULL_OPTIONS),
        id="with-options",
    ),
    *[
        pytest.param(
            f"CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' {unit.value} AS SELECT * FROM s",
            create("t", "SELECT * FROM s", freshness=Freshness(1, unit)),
            id=f"freshness-1-{unit.value}",
        )
        for unit in FreshnessUnit
    ],
    pytest.param(
        "-- FRESHNESS is omitted, uses the configured default of 3 minutes for CONTINUOUS mode\n"
        "CREATE MATERIALIZED TABLE my_materialized_table AS SELECT * FROM source_table;",
        create("my_materialized_table", "SELECT * FROM source_table"),
        id="default-freshness",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full REFRESH_MODE = FULL AS SELECT * FROM source_table;",
        create("my_materialized_table_full", "SELECT * FROM source_table", refresh_mode=RefreshMode.FULL),
        id="full-default-freshness",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = CONTINUOUS "
        "AS SELECT * FROM source_table",
        create(
            "my_materialized_table",
            "SELECT * FROM source_table",
            freshness=Freshness(1, HOUR),
            refresh_mode=RefreshMode.CONTINUOUS,
        ),
        id="continuous-1-hour",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '10' MINUTE REFRESH_MODE = FULL "
        "AS SELECT * FROM source_table",
        create(
            "my_materialized_table",
            "SELECT * FROM source_table",
            freshness=Freshness(10, MINUTE),
            refresh_mode=RefreshMode.FULL,
        ),
        id="full-10-minutes",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '10' SECOND "
        "AS SELECT * FROM kafka_catalog.db1.kafka_table;",
        create("my_materialized_table", "SELECT * FROM kafka_catalog.db1.kafka_table", freshness=Freshness(10, SECOND)),
        id="three-part-source",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_continuous PARTITIONED BY (ds) WITH ( "
        "'partition.fields.ds.date-formatter' = 'yyyy-MM-dd' ) FRESHNESS = INTERVAL '10' SECOND "
        f"AS {CONTINUOUS_QUERY}",
        create(
            "my_materialized_table_continuous",
            CONTINUOUS_QUERY,
            partitioned_by=("ds",),
            options=FULL_OPTIONS,
            freshness=Freshness(10, SECOND),
        ),
        id="example-continuous",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full PARTITIONED BY (ds) WITH ( "
        f"'partition.fields.ds.date-formatter' = 'yyyy-MM-dd' ) FRESHNESS = INTERVAL '1' HOUR AS {FULL_QUERY}",
        create(
            "my_materialized_table_full",
            FULL_QUERY,
            partitioned_by=("ds",),
            options=FULL_OPTIONS,
            freshness=Freshness(1, HOUR),
        ),
        id="example-full",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full ( ds, product_id, product_name, avg_sale_price, "
        "total_quantity) PARTITIONED BY (ds) WITH ( 'partition.fields.ds.date-formatter' = "
        f"'yyyy-MM-dd' ) FRESHNESS = INTERVAL '1' HOUR AS {FULL_QUERY}",
        create(
            "my_materialized_table_full",
            FULL_QUERY,
            partitioned_by=("ds",),
            options=FULL_OPTIONS,
            freshness=Freshness(1, HOUR),
            columns=tuple(
                ColumnDef(c) for c in ("ds", "product_id", "product_name", "avg_sale_price", "total_quantity")
            ),
        ),
        id="column-names",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full ( product_id, product_name, ds, avg_sale_price, "
        f"total_quantity) PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' HOUR AS {FULL_QUERY}",
        create(
            "my_materialized_table_full",
            FULL_QUERY,
            partitioned_by=("ds",),
            freshness=Freshness(1, HOUR),
            columns=tuple(
                ColumnDef(c) for c in ("product_id", "product_name", "ds", "avg_sale_price", "total_quantity")
            ),
        ),
        id="column-names-reordered",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full ( ds STRING, product_id STRING, product_name STRING, "
        "avg_sale_price DOUBLE, total_quantity BIGINT) PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' HOUR "
        f"AS {FULL_QUERY}",
        create(
            "my_materialized_table_full",
            FULL_QUERY,
            partitioned_by=("ds",),
            freshness=Freshness(1, HOUR),
            columns=(
                ColumnDef("ds", "STRING"),
                ColumnDef("product_id", "STRING"),
                ColumnDef("product_name", "STRING"),
                ColumnDef("avg_sale_price", "DOUBLE"),
                ColumnDef("total_quantity", "BIGINT"),
            ),
        ),
        id="column-names-and-types",
    ),
]


@pytest.mark.parametrize(("cell", "expected"), REFERENCE)
def test_reference_create_statements(cell: str, expected: CreateMaterializedTable) -> None:
    assert only(cell) == expected


EVENTS_QUERY = (
    "SELECT user_id, COUNT(*) AS event_count, SUM(amount) AS total_amount FROM kafka_catalog.db1.events "
    "WHERE event_type = 'purchase' GROUP BY user_id"
)
EVENTS_QUERY_V2 = (
    "SELECT user_id, COUNT(*) AS event_count, SUM(amount) AS total_amount, AVG(amount) AS avg_amount "
    "-- Add a new nullable column at the end\n"
    "FROM kafka_catalog.db1.events WHERE event_type = 'purchase' GROUP BY user_id"
)


def test_create_or_alter_executed_twice_in_one_cell() -> None:
    cell = (
        "-- First execution: creates the materialized table\n"
        "CREATE OR ALTER MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '10' SECOND\n"
        f"AS {EVENTS_QUERY};\n"
        "-- Second execution: alters the query definition (adds avg_amount column)\n"
        "CREATE OR ALTER MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '10' SECOND\n"
        f"AS {EVENTS_QUERY_V2};"
    )
    first, second = parse_cell(cell)
    assert first == create("my_materialized_table", EVENTS_QUERY, freshness=Freshness(10, SECOND), or_alter=True)
    assert second == create("my_materialized_table", EVENTS_QUERY_V2, freshness=Freshness(10, SECOND), or_alter=True)
    assert "-- Add a new nullable column at the end\n" in second.query
    assert (first.position, second.position) == (Position(2, 1), Position(5, 1))


NAME = TableName("my_materialized_table")

ALTER_AND_DROP = [
    pytest.param(
        "-- Suspend the specified materialized table\nALTER MATERIALIZED TABLE my_materialized_table SUSPEND;",
        AlterSuspend(text="", position=P0, name=NAME),
        id="suspend",
    ),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table RESUME;",
        AlterResume(text="", position=P0, name=NAME),
        id="resume",
    ),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table RESUME WITH ('spark.sql.shuffle.partitions'='10');",
        AlterResume(text="", position=P0, name=NAME, options=(("spark.sql.shuffle.partitions", "10"),)),
        id="resume-with",
    ),
    pytest.param(
        "-- Refresh the entire table data\nALTER MATERIALIZED TABLE my_materialized_table REFRESH;",
        AlterRefresh(text="", position=P0, name=NAME),
        id="refresh",
    ),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table REFRESH PARTITION (ds='2024-06-28');",
        AlterRefresh(text="", position=P0, name=NAME, partition=(("ds", "2024-06-28"),)),
        id="refresh-partition",
    ),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table REFRESH PARTITION (ds = '20241217', hh = 10)",
        AlterRefresh(text="", position=P0, name=NAME, partition=(("ds", "20241217"), ("hh", "10"))),
        id="refresh-partition-two-keys",
    ),
    pytest.param(
        f"ALTER MATERIALIZED TABLE my_materialized_table AS {EVENTS_QUERY_V2};",
        AlterQuery(text="", position=P0, name=NAME, query=EVENTS_QUERY_V2),
        id="alter-as",
    ),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table SET FRESHNESS = INTERVAL '5' MINUTE",
        AlterFreshness(text="", position=P0, name=NAME, freshness=Freshness(5, MINUTE)),
        id="set-freshness",
    ),
    pytest.param(
        "-- Delete the specified materialized table\nDROP MATERIALIZED TABLE IF EXISTS my_materialized_table;",
        DropMaterializedTable(text="", position=P0, name=NAME, if_exists=True),
        id="drop-if-exists",
    ),
    pytest.param(
        "DROP MATERIALIZED TABLE cat.db.my_materialized_table",
        DropMaterializedTable(text="", position=P0, name=TableName("my_materialized_table", "db", "cat")),
        id="drop-qualified",
    ),
]


@pytest.mark.parametrize(("cell", "expected"), ALTER_AND_DROP)
def test_reference_alter_and_drop_statements(cell: str, expected: object) -> None:
    assert only(cell) == expected


DWD_QUERY = (
    "SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, r.seller_id FROM `paimon`.`default`.`ods_user_log` l "
    "INNER JOIN `paimon`.`default`.`ods_dim_product` r ON l.item_id = r.item_id"
)
DWS_QUERY = (
    "SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(distinct user_id) AS uv FROM (SELECT ds, "
    "date_format(vtime, 'HH') AS hh, user_id FROM `paimon`.`default`.`dwd_user_log_product`) tmp "
    "GROUP BY GROUPING SETS(ds, (ds, hh))"
)
DS_FORMATTER = (("partition.fields.ds.date-formatter", "yyyyMMdd"),)


def test_tutorial_dwd_user_log_product() -> None:
    cell = (
        "-- DWD layer widening logic CREATE MATERIALIZED TABLE dwd_user_log_product(\n"
        "CREATE MATERIALIZED TABLE dwd_user_log_product( PRIMARY KEY (item_id) NOT ENFORCED ) PARTITIONED BY(ds) "
        "WITH ( 'partition.fields.ds.date-formatter' = 'yyyyMMdd' ) FRESHNESS = INTERVAL '1' HOUR "
        f"-- Refresh every 1 hour.\nAS {DWD_QUERY};"
    )
    assert only(cell) == create(
        "dwd_user_log_product",
        DWD_QUERY,
        primary_key=PrimaryKey(("item_id",)),
        partitioned_by=("ds",),
        options=DS_FORMATTER,
        freshness=Freshness(1, HOUR),
    )


def test_tutorial_dws_overall_with_grouping_sets() -> None:
    cell = (
        "-- Calculate daily PVs and UVs.\n"
        "CREATE MATERIALIZED TABLE dws_overall( PRIMARY KEY(ds, hh) NOT ENFORCED ) PARTITIONED BY(ds) "
        "WITH ( 'partition.fields.ds.date-formatter' = 'yyyyMMdd' ) FRESHNESS = INTERVAL '1' HOUR "
        f"-- Refresh every 1 hour.\nAS {DWS_QUERY};"
    )
    statement = only(cell)
    assert statement == create(
        "dws_overall",
        DWS_QUERY,
        primary_key=PrimaryKey(("ds", "hh")),
        partitioned_by=("ds",),
        options=DS_FORMATTER,
        freshness=Freshness(1, HOUR),
    )
    assert statement.query_position == Position(3, 4)


TMS_QUERY = (
    "SELECT tms_company, sum(order_cnt) AS order_cnt FROM (SELECT tms_company, 1 AS order_cnt FROM tms_source) t "
    "GROUP BY tms_company"
)


def test_tutorial_continues_tms_res_as_the_paimon_option_error_suggests() -> None:
    cell = (
        "CREATE MATERIALIZED TABLE continues_tms_res (\n"
        "  CONSTRAINT `pk_tms_company` PRIMARY KEY (tms_company) NOT ENFORCED\n"
        ") FRESHNESS = INTERVAL '30' SECOND\n"
        f"AS {TMS_QUERY};"
    )
    assert only(cell) == create(
        "continues_tms_res",
        TMS_QUERY,
        primary_key=PrimaryKey(("tms_company",), "pk_tms_company"),
        freshness=Freshness(30, SECOND),
    )


def test_design_doc_cell_and_demo_cell_parse() -> None:
    cell = (
        "CREATE MATERIALIZED TABLE dws_overall\nPARTITIONED BY (ds)\n"
        "WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd')\nFRESHNESS = INTERVAL '1' HOUR\n"
        "AS SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(DISTINCT user_id) AS uv\n"
        "   FROM (SELECT ds, date_format(vtime, 'HH') AS hh, user_id FROM dwd_user_log_product) t\n"
        "   GROUP BY GROUPING SETS ((ds), (ds, hh))\n"
    )
    statement = only(cell)
    assert statement.name == TableName("dws_overall")
    assert statement.query.endswith("GROUP BY GROUPING SETS ((ds), (ds, hh))")
    assert statement.query_position == Position(5, 4)

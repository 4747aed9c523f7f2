"""Every statement of the source documents, pasted as published into a ``%%materialized`` cell, either parses
or gets a message that says what it means on Spark/Iceberg and what to write instead.

The statements are copied here from the documents (the tests never read them at run time): Flink's
materialized-table reference, the lakehouse tutorial, the architecture talk and the incremental-computation
article with the order-count example. The documents' text lost its line breaks; where a ``--`` comment would
otherwise swallow the rest of a statement, the line break after it is put back, nothing else is changed.
"""

from __future__ import annotations

import re

import pytest

from mt_magic.sql import (
    AlterRefresh,
    AlterResume,
    AlterSuspend,
    CreateMaterializedTable,
    DropMaterializedTable,
    FreshnessError,
    PrimaryKey,
    SqlError,
    SqlSyntaxError,
    TableName,
    UnsupportedStatementError,
    parse_cell,
)
from mt_magic.sql.ddl.options import foreign_option
from mt_magic.sql.errors import UnsupportedOptionError

# --- the incremental-computation article (order counts per logistics company) --------------------------------

TMS_RES = """CREATE MATERIALIZED TABLE continues_tms_res (
CONSTRAINT `pk_tms_company` PRIMARY KEY (tms_company) NOT ENFORCED
) WITH (
'format'='debezium-json',
'scan.remove-normalize'='true',
'changelog-producer'='lookup',
'merge-engine'='aggregation',
'fields.order_cnt.aggregate-function'='sum'
) FRESHNESS = INTERVAL '30' SECOND
AS SELECT tms_company, 1 AS order_cnt FROM tms_source;"""

TMS_SOURCE = """CREATE TABLE tms_source (
order_id STRING PRIMARY KEY KEY NOT ENFORCED,
tms_company STRING NOT NULL
) WITH (
'connector'='paimon',
'path'='file:/tmp/paimon/default.db/tms_source',
'changelog-producer'='lookup',
'scan.remove-normalize'='true'
);"""

# --- the lakehouse tutorial -----------------------------------------------------------------------------------

ODS_USER_LOG = (
    "CREATE TABLE `paimon`.`default`.`ods_user_log` ( item_id INT NOT NULL, user_id INT NOT NULL, vtime "
    "TIMESTAMP(6), ds VARCHAR(10) NOT NULL ) PARTITIONED BY(ds) WITH ( 'bucket' = '4', -- Specify 4 buckets.\n"
    "'bucket-key' = 'item_id' -- Specify the bucket key. Data with the same item_id is placed in the same bucket.\n"
    ");"
)
ODS_DIM_PRODUCT = (
    "CREATE TABLE `paimon`.`default`.`ods_dim_product` ( item_id INT NOT NULL, title VARCHAR(255), pict_url "
    "VARCHAR(255), brand_id INT, seller_id INT, PRIMARY KEY(item_id) NOT ENFORCED ) WITH ( 'bucket' = '4', "
    "'bucket-key' = 'item_id' );"
)
FAKER_USER_LOG = (
    "CREATE TEMPORARY TABLE `user_log` ( item_id INT, // Product ID\nuser_id INT, // User ID\nvtime TIMESTAMP, "
    "ds AS DATE_FORMAT(CURRENT_DATE,'yyyyMMdd') ) WITH ( 'connector' = 'faker', -- Faker connector\n"
    "'fields.item_id.expression'='#{number.numberBetween ''0'',''1000''}', -- Generate a random number.\n"
    "'fields.user_id.expression'='#{number.numberBetween ''0'',''100''}', "
    "'fields.vtime.expression'='#{date.past ''5'',''HOURS''}', -- Generate data from the last 5 hours.\n"
    "'rows-per-second' = '3' -- Generate 3 rows per second.\n);"
)
STATEMENT_SET = (
    "BEGIN STATEMENT SET; INSERT INTO `paimon`.`default`.`ods_user_log` SELECT item_id, user_id, vtime, "
    "CAST(ds AS VARCHAR(10)) AS ds FROM `user_log`; INSERT INTO `paimon`.`default`.`ods_dim_product` SELECT "
    "item_id, title, pict_url, brand_id, seller_id FROM `dim_product`; END;"
)
DWD = (
    "-- DWD layer widening logic\nCREATE MATERIALIZED TABLE dwd_user_log_product( PRIMARY KEY (item_id) NOT "
    "ENFORCED ) PARTITIONED BY(ds) WITH ( 'partition.fields.ds.date-formatter' = 'yyyyMMdd' ) FRESHNESS = "
    "INTERVAL '1' HOUR -- Refresh every 1 hour.\nAS SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, "
    "r.seller_id FROM `paimon`.`default`.`ods_user_log` l INNER JOIN `paimon`.`default`.`ods_dim_product` r ON "
    "l.item_id = r.item_id;"
)
DWS_BODY = (
    "CREATE MATERIALIZED TABLE dws_overall( PRIMARY KEY(ds, hh) NOT ENFORCED ) PARTITIONED BY(ds) WITH ( "
    "'partition.fields.ds.date-formatter' = 'yyyyMMdd' ) FRESHNESS = INTERVAL '1' HOUR -- Refresh every 1 hour.\n"
    "AS SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(distinct user_id) AS uv FROM (SELECT ds, "
    "date_format(vtime, 'HH') AS hh, user_id FROM `paimon`.`default`.`dwd_user_log_product`) tmp GROUP BY "
    "GROUPING SETS(ds, (ds, hh));"
)

# --- Flink's reference --------------------------------------------------------------------------------------

CONTINUOUS_EXAMPLE = (
    "CREATE MATERIALIZED TABLE my_materialized_table_continuous PARTITIONED BY (ds) WITH ( 'format' = "
    "'debezium-json', 'partition.fields.ds.date-formatter' = 'yyyy-MM-dd' ) FRESHNESS = INTERVAL '10' SECOND AS "
    "SELECT k.ds, k.user_id, COUNT(*) AS event_count, SUM(k.amount) AS total_amount, MAX(u.age) AS max_age FROM "
    "kafka_catalog.db1.kafka_table k JOIN user_catalog.db1.user_table u ON k.user_id = u.user_id WHERE "
    "k.event_type = 'purchase' GROUP BY k.ds, k.user_id"
)
FULL_EXAMPLE = (
    "CREATE MATERIALIZED TABLE my_materialized_table_full PARTITIONED BY (ds) WITH ( 'format' = 'json', "
    "'partition.fields.ds.date-formatter' = 'yyyy-MM-dd' ) FRESHNESS = INTERVAL '1' HOUR AS SELECT p.ds, "
    "p.product_id, p.product_name, AVG(s.sale_price) AS avg_sale_price, SUM(s.quantity) AS total_quantity FROM "
    "paimon_catalog.db1.product_table p LEFT JOIN paimon_catalog.db1.sales_table s ON p.product_id = "
    "s.product_id WHERE p.category = 'electronics' GROUP BY p.ds, p.product_id, p.product_name"
)
EVENTS = (
    "SELECT user_id, COUNT(*) AS event_count, SUM(amount) AS total_amount FROM kafka_catalog.db1.events WHERE "
    "event_type = 'purchase' GROUP BY user_id"
)

PARSES = [
    pytest.param(DWD, CreateMaterializedTable, id="tutorial-dwd"),
    pytest.param("-- Calculate daily PVs and UVs.\n" + DWS_BODY, CreateMaterializedTable, id="tutorial-dws"),
    pytest.param(
        "ALTER MATERIALIZED TABLE customer_orders REFRESH PARTITION(ds='20241125')", AlterRefresh, id="talk-backfill"
    ),
    pytest.param(
        "-- Create a materialized table and specify the partition field as `ds`. \nCREATE MATERIALIZED TABLE "
        "my_materialized_table PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' HOUR AS SELECT ds FROM source_table",
        CreateMaterializedTable,
        id="reference-partitioned",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table AS SELECT * FROM source_table;",
        CreateMaterializedTable,
        id="reference-default-freshness",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full REFRESH_MODE = FULL AS SELECT * FROM source_table;",
        CreateMaterializedTable,
        id="reference-full-default",
    ),
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '10' SECOND AS SELECT * FROM "
        "kafka_catalog.db1.kafka_table;",
        CreateMaterializedTable,
        id="reference-kafka-source",
    ),
    pytest.param(
        f"CREATE OR ALTER MATERIALIZED TABLE my_materialized_table FRESHNESS = INTERVAL '10' SECOND AS {EVENTS};",
        CreateMaterializedTable,
        id="reference-create-or-alter",
    ),
    pytest.param(f"ALTER MATERIALIZED TABLE my_materialized_table AS {EVENTS}", None, id="reference-alter-as"),
    pytest.param("ALTER MATERIALIZED TABLE my_materialized_table SUSPEND;", AlterSuspend, id="reference-suspend"),
    pytest.param("ALTER MATERIALIZED TABLE my_materialized_table RESUME;", AlterResume, id="reference-resume"),
    pytest.param("ALTER MATERIALIZED TABLE my_materialized_table REFRESH;", AlterRefresh, id="reference-refresh"),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table REFRESH PARTITION (ds='2024-06-28');",
        AlterRefresh,
        id="reference-refresh-partition",
    ),
    pytest.param(
        "DROP MATERIALIZED TABLE IF EXISTS my_materialized_table;", DropMaterializedTable, id="reference-drop"
    ),
]


@pytest.mark.parametrize(("cell", "kind"), PARSES)
def test_seed_statement_parses(cell: str, kind: type | None) -> None:
    (statement,) = parse_cell(cell)
    if kind is not None:
        assert isinstance(statement, kind)


ANSWERED = [
    pytest.param(
        TMS_RES,
        UnsupportedOptionError,
        r"continues_tms_res, line 4, column 1: WITH has 5 options that Spark and Iceberg cannot honour: "
        r"'format' = 'debezium-json' is a Flink connector option.*'merge-engine' = 'aggregation' is a Paimon option"
        r".*Fix: write the aggregation in the query, e\.g\. AS SELECT tms_company, sum\(order_cnt\) AS order_cnt "
        r"FROM \(SELECT tms_company, 1 AS order_cnt FROM tms_source\) t GROUP BY tms_company",
        id="article-order-count",
    ),
    pytest.param(
        "SET 'sql-client.execution.result-mode' = 'tableau';",
        UnsupportedStatementError,
        r"SET … is not a materialized-table statement.*Fix: Flink's SET configures the SQL client",
        id="article-set-result-mode",
    ),
    pytest.param(
        "SET 'table.exec.sink.upsert-materialize' = 'NONE';",
        UnsupportedStatementError,
        r"drop the SET",
        id="article-set-upsert",
    ),
    pytest.param(
        "SET 'execution.runtime-mode' = 'streaming';",
        UnsupportedStatementError,
        r"refresh mode follows FRESHNESS or REFRESH_MODE",
        id="article-set-runtime-mode",
    ),
    pytest.param(
        "CREATE CATALOG paimon WITH ('type'='paimon','warehouse'='file:/tmp/paimon');",
        UnsupportedStatementError,
        r"CREATE CATALOG is not a materialized-table statement.*catalogs are configured, not created",
        id="article-create-catalog",
    ),
    pytest.param(
        TMS_SOURCE, UnsupportedStatementError, r"CREATE TABLE is not.*USING iceberg", id="article-source-table"
    ),
    pytest.param(
        "INSERT INTO tms_source VALUES ('001','YuanTong');",
        UnsupportedStatementError,
        r"MERGE INTO for upserts by key",
        id="article-insert",
    ),
    pytest.param(ODS_USER_LOG, UnsupportedStatementError, r"USING iceberg", id="tutorial-ods-user-log"),
    pytest.param(ODS_DIM_PRODUCT, UnsupportedStatementError, r"USING iceberg", id="tutorial-ods-dim-product"),
    pytest.param(
        FAKER_USER_LOG, UnsupportedStatementError, r"CREATE TEMPORARY.*mt_magic\.datagen", id="tutorial-faker"
    ),
    pytest.param(STATEMENT_SET, UnsupportedStatementError, r"statement set has no equivalent", id="tutorial-set"),
    pytest.param(
        "SELECT * FROM `paimon`.`default`.ods_dim_product LIMIT 10;",
        UnsupportedStatementError,
        r"spark\.sql\(…\)\.show\(\)",
        id="tutorial-select",
    ),
    pytest.param(
        "// Calculate daily PVs and UVs. " + DWS_BODY,
        UnsupportedStatementError,
        r"// is not a SQL comment; write -- comment",
        id="tutorial-dws-slash-comment",
    ),
    pytest.param(
        CONTINUOUS_EXAMPLE,
        UnsupportedOptionError,
        r"line 1, column 87: WITH has an option that Spark and Iceberg cannot honour: 'format' = 'debezium-json'"
        r".*'write\.format\.default'.*Fix: remove 'format' from WITH",
        id="reference-continuous-format",
    ),
    pytest.param(
        FULL_EXAMPLE,
        UnsupportedOptionError,
        r"'format' = 'json' is a Flink connector option",
        id="reference-full-format",
    ),
    pytest.param(
        "ALTER MATERIALIZED TABLE my_materialized_table RESUME WITH ('sink.parallelism'='10');",
        UnsupportedOptionError,
        r"'sink\.parallelism' is not one.*Fix: set Spark's instead: .*'spark\.sql\.shuffle\.partitions' = 'N'",
        id="reference-resume-sink-parallelism",
    ),
    pytest.param(
        "SET 'execution.checkpointing.savepoint-dir' = 'hdfs://savepoint_path';",
        UnsupportedStatementError,
        r"drop the SET",
        id="reference-savepoint-dir",
    ),
    *[
        pytest.param(
            f"CREATE MATERIALIZED TABLE t FRESHNESS = {interval} {mode} AS SELECT * FROM s",
            FreshnessError,
            message,
            id=f"reference-invalid-freshness-{i}",
        )
        for i, (interval, mode, message) in enumerate(
            [
                ("INTERVAL '-1' SECOND", "", r"must be positive"),
                ("INTERVAL '0' SECOND", "", r"must be positive"),
                ("INTERVAL '1' MONTH", "", r"MONTH is not a FRESHNESS unit"),
                ("INTERVAL '1' YEAR", "", r"YEAR is not a FRESHNESS unit"),
                ("INTERVAL '60' SECOND", "REFRESH_MODE = FULL", r"FULL"),
                ("INTERVAL '5' HOUR", "", r"FULL"),
            ]
        )
    ],
    pytest.param(
        "CREATE MATERIALIZED TABLE my_materialized_table_full ( ds, product_id, product_name, avg_sale_price, "
        "total_quantity) ...",
        SqlSyntaxError,
        r"unexpected '\.'",
        id="reference-placeholder",
    ),
]


@pytest.mark.parametrize(("cell", "error", "message"), ANSWERED)
def test_seed_statement_is_answered(cell: str, error: type[SqlError], message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        parse_cell(cell)
    assert caught.value.position is not None and caught.value.fix


def test_the_order_count_fix_is_a_statement_that_parses() -> None:
    """What the error tells the user to write is itself accepted, with the article's key and freshness."""
    with pytest.raises(UnsupportedOptionError) as caught:
        parse_cell(TMS_RES)
    fix = caught.value.fix or ""
    query = re.search(r"AS (SELECT .* GROUP BY tms_company)", fix)
    assert query is not None, fix
    rewritten = (
        "CREATE MATERIALIZED TABLE continues_tms_res (CONSTRAINT `pk_tms_company` PRIMARY KEY (tms_company) NOT "
        f"ENFORCED) FRESHNESS = INTERVAL '30' SECOND AS {query.group(1)}"
    )
    (statement,) = parse_cell(rewritten)
    assert isinstance(statement, CreateMaterializedTable)
    assert statement.primary_key == PrimaryKey(("tms_company",), "pk_tms_company")
    assert statement.options == ()


def test_catalog_names_of_the_tutorial_are_kept_for_the_runtime_to_resolve() -> None:
    (statement,) = parse_cell(DWD)
    assert isinstance(statement, CreateMaterializedTable)
    assert statement.name == TableName("dwd_user_log_product")
    assert "`paimon`.`default`.`ods_user_log`" in statement.query


@pytest.mark.parametrize(
    "options",
    [
        "'write.format.default' = 'orc'",
        "'format-version' = '2'",
        "'write.target-file-size-bytes' = '134217728'",
        "'write.parquet.compression-codec' = 'zstd'",
        "'history.expire.min-snapshots-to-keep' = '7', 'history.expire.max-snapshot-age-ms' = '3600000'",
        "'commit.retry.num-retries' = '10'",
        "'incremental' = 'strict'",
        "'partition.fields.ds.date-formatter' = 'yyyyMMdd'",
        "'my.own.property' = 'kept'",
    ],
)
def test_options_meaningful_on_iceberg_are_kept(options: str) -> None:
    (statement,) = parse_cell(
        f"CREATE MATERIALIZED TABLE t PARTITIONED BY (ds) WITH ({options}) FRESHNESS = INTERVAL '1' HOUR "
        "AS SELECT ds, count(*) AS n FROM s GROUP BY ds"
    )
    assert isinstance(statement, CreateMaterializedTable)
    assert len(statement.options) == options.count("=")


@pytest.mark.parametrize(
    ("key", "system"),
    [
        ("merge-engine", "Paimon"),
        ("fields.price.aggregate-function", "Paimon"),
        ("changelog-producer", "Paimon"),
        ("scan.startup.mode", "Flink source"),
        ("connector", "Flink"),
        ("properties.bootstrap.servers", "Kafka"),
        ("topic", "Kafka"),
        ("value.format", "Kafka"),
        ("bucket", "Paimon"),
        ("sink.parallelism", "Flink"),
        ("FORMAT", "Flink connector"),
    ],
)
def test_foreign_options_are_recognised(key: str, system: str) -> None:
    rule = foreign_option(key)
    assert rule is not None and rule.system == system


@pytest.mark.parametrize(
    ("with_clause", "fix"),
    [
        ("'merge-engine' = 'deduplicate'", r"keeps one row per key \(k\)"),
        (
            "'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'last_value'",
            r"'last_value' on v has no order-free equivalent",
        ),
        ("'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'max'", r"AS SELECT k, max\(v\) AS v FROM"),
    ],
)
def test_merge_engines_get_the_query_that_does_the_same(with_clause: str, fix: str) -> None:
    with pytest.raises(UnsupportedOptionError, match=fix):
        parse_cell(
            f"CREATE MATERIALIZED TABLE t (PRIMARY KEY (k) NOT ENFORCED) WITH ({with_clause}) AS SELECT k, v FROM s"
        )


def test_resume_with_a_non_spark_key_changes_nothing_and_says_why() -> None:
    with pytest.raises(UnsupportedOptionError, match=r"line 1, column 41: RESUME WITH options are Spark settings.*'x'"):
        parse_cell("ALTER MATERIALIZED TABLE t RESUME WITH ('x' = '1')")
    (statement,) = parse_cell("ALTER MATERIALIZED TABLE t RESUME WITH ('spark.sql.shuffle.partitions' = '4')")
    assert isinstance(statement, AlterResume)
    assert statement.options == (("spark.sql.shuffle.partitions", "4"),)

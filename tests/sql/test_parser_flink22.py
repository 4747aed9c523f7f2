"""The statements Flink 2.2/2.3 added: SHOW MATERIALIZED TABLES, SHOW CREATE, DESCRIBE, RENAME TO and
SET REFRESH_MODE — parsed into typed statements, and malformed ones refused with position and fix."""

from __future__ import annotations

import pytest

from mt_magic.sql import (
    ClauseOrderError,
    SqlError,
    SqlSyntaxError,
    UnsupportedClauseError,
    UnsupportedStatementError,
    parse_cell,
)
from mt_magic.sql.ddl.statements import (
    AlterRefreshMode,
    AlterRename,
    CreateMaterializedTable,
    DescribeMaterializedTable,
    Distribution,
    ShowCreateMaterializedTable,
    ShowMaterializedTables,
)
from mt_magic.sql.names import TableName
from mt_magic.vocabulary import RefreshMode


def one(text: str) -> object:
    [statement] = parse_cell(text)
    return statement


def test_show_materialized_tables_with_namespace_and_like() -> None:
    assert one("SHOW MATERIALIZED TABLES") == ShowMaterializedTables("", None)  # type: ignore[arg-type]
    shown = one("show materialized tables in `sales db` like 'daily\\_%'")
    assert isinstance(shown, ShowMaterializedTables)
    assert (shown.namespace, shown.like) == ("sales db", "daily\\_%")
    nested = one("SHOW MATERIALIZED TABLES FROM a.b")
    assert isinstance(nested, ShowMaterializedTables) and nested.namespace == "a.b"


def test_show_create_and_describe_name_a_table() -> None:
    create = one("SHOW CREATE MATERIALIZED TABLE db.daily")
    assert isinstance(create, ShowCreateMaterializedTable) and create.name == TableName("daily", "db")
    for verb in ("DESCRIBE", "desc"):
        described = one(f"{verb} MATERIALIZED TABLE `odd name`")
        assert isinstance(described, DescribeMaterializedTable) and described.name == TableName("odd name")


def test_rename_and_set_refresh_mode() -> None:
    renamed = one("ALTER MATERIALIZED TABLE t RENAME TO other.u")
    assert isinstance(renamed, AlterRename) and renamed.new_name == TableName("u", "other")
    switched = one("alter materialized table t set refresh_mode = continuous")
    assert isinstance(switched, AlterRefreshMode) and switched.mode is RefreshMode.CONTINUOUS


def test_distributed_by_hash_into_buckets() -> None:
    created = one(
        "CREATE MATERIALIZED TABLE t DISTRIBUTED BY HASH(user_id, `item id`) INTO 8 BUCKETS "
        "PARTITIONED BY (ds) AS SELECT 1 AS user_id, 2 AS `item id`, 'x' AS ds"
    )
    assert isinstance(created, CreateMaterializedTable)
    assert created.distribution == Distribution(("user_id", "item id"), 8) and created.partitioned_by == ("ds",)
    plain = one("CREATE MATERIALIZED TABLE t DISTRIBUTED BY (k) INTO 2 BUCKETS AS SELECT 1 AS k")
    assert isinstance(plain, CreateMaterializedTable) and plain.distribution == Distribution(("k",), 2)


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        (
            "CREATE MATERIALIZED TABLE t DISTRIBUTED BY RANGE(a) INTO 2 BUCKETS AS SELECT 1 AS a",
            UnsupportedClauseError,
            r"column 44: DISTRIBUTED BY RANGE has no Iceberg equivalent.*Fix: use DISTRIBUTED BY HASH",
        ),
        (
            "CREATE MATERIALIZED TABLE t DISTRIBUTED BY HASH(a) INTO 0 BUCKETS AS SELECT 1 AS a",
            SqlSyntaxError,
            r"column 57: expected a positive number of buckets, found '0'",
        ),
        (
            "CREATE MATERIALIZED TABLE t DISTRIBUTED BY HASH(a) AS SELECT 1 AS a",
            SqlSyntaxError,
            r"expected INTO after the bucket columns, found 'AS'",
        ),
        (
            "CREATE MATERIALIZED TABLE t PARTITIONED BY (a) DISTRIBUTED BY HASH(a) INTO 2 BUCKETS AS SELECT 1 AS a",
            ClauseOrderError,
            r"DISTRIBUTED BY must come before PARTITIONED BY",
        ),
        ("SHOW TABLES", UnsupportedStatementError, r"SHOW TABLES is not a materialized-table statement.*spark\.sql"),
        (
            "SHOW MATERIALIZED TABLES LIKE daily",
            SqlSyntaxError,
            r"line 1, column 31: expected a single-quoted string after LIKE, found 'daily'.*Fix: write LIKE 'daily_%'",
        ),
        ("SHOW MATERIALIZED TABLES FROM", SqlSyntaxError, r"expected namespace after FROM/IN, found the end"),
        ("SHOW MATERIALIZED TABLES extra", SqlSyntaxError, r"unexpected 'extra' after SHOW MATERIALIZED TABLES"),
        ("SHOW CREATE TABLE t", UnsupportedStatementError, r"SHOW CREATE TABLE is not a materialized-table statement"),
        ("SHOW CREATE MATERIALIZED TABLE", SqlSyntaxError, r"SHOW CREATE MATERIALIZED TABLE"),
        ("DESCRIBE t", UnsupportedStatementError, r"is not a materialized-table statement"),
        ("DESC MATERIALIZED TABLE t u", SqlSyntaxError, r"unexpected 'u' after DESC MATERIALIZED TABLE name"),
        (
            "ALTER MATERIALIZED TABLE t RENAME u",
            SqlSyntaxError,
            r"line 1, column 35: expected TO after RENAME, found 'u'.*Fix: write RENAME TO new_name",
        ),
        ("ALTER MATERIALIZED TABLE t RENAME TO", SqlSyntaxError, r"ALTER MATERIALIZED TABLE t"),
        (
            "ALTER MATERIALIZED TABLE t SET REFRESH_MODE = FAST",
            SqlSyntaxError,
            r"column 47: REFRESH_MODE must be CONTINUOUS or FULL, found 'FAST'",
        ),
        (
            "ALTER MATERIALIZED TABLE t SET REFRESH_MODE FULL",
            SqlSyntaxError,
            r"column 45: expected '=' after REFRESH_MODE, found 'FULL'",
        ),
        (
            "ALTER MATERIALIZED TABLE t SET OWNER = x",
            SqlSyntaxError,
            r"ALTER … SET supports FRESHNESS, REFRESH_MODE and \('scheduler' = …\), found 'OWNER'",
        ),
    ],
)
def test_malformed_statements_are_refused_with_position_and_fix(text: str, error: type[SqlError], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_cell(text)

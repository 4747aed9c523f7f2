"""The grammar's general behaviour: several statements, comments, letter case, quoting, positions, text."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mt_magic.sql import (
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
    UnsupportedNameError,
    parse_cell,
)


def test_several_statements_with_comments_and_positions() -> None:
    cell = (
        "/* a block\n   comment */ create materialized table a.b as select 1;\n"
        "-- a line comment ; with a semicolon\n"
        "alter materialized table `a`.`b` suspend ;;\n"
        "  DROP MATERIALIZED TABLE a.b  -- trailing\n"
    )
    create, suspend, drop = parse_cell(cell)
    assert isinstance(create, CreateMaterializedTable) and create.position == Position(2, 15)
    assert create.name == TableName("b", "a") and create.query == "select 1"
    assert isinstance(suspend, AlterSuspend) and suspend.position == Position(4, 1)
    assert suspend.name == TableName("b", "a")
    assert isinstance(drop, DropMaterializedTable) and drop.position == Position(5, 3) and not drop.if_exists
    assert drop.text == "DROP MATERIALIZED TABLE a.b"


def test_semicolons_inside_strings_and_comments_of_the_body_do_not_split() -> None:
    query = "SELECT 'a;b' AS s, \"c;d\" AS t /* ; */ FROM src -- ;\nWHERE x <> ';'"
    (statement,) = parse_cell(f"CREATE MATERIALIZED TABLE t AS {query};")
    assert statement.query == query


def test_query_body_is_kept_exactly_without_surrounding_comments_or_semicolon() -> None:
    query = "WITH c AS (\n  SELECT a, (1 + 2) * 3 AS b FROM s\n)\nSELECT * FROM c"
    (statement,) = parse_cell(f"CREATE MATERIALIZED TABLE t AS\n  -- leading\n  {query}  -- trailing\n ; ")
    assert statement.query == query
    assert statement.query_position == Position(3, 3)


def test_any_letter_case_and_backtick_identifiers() -> None:
    cell = (
        "CrEaTe Or AlTeR mAtErIaLiZeD tAbLe `my cat`.`my-db`.`weird``name` "
        "partitioned by (`ds`) with ('K' = 'V') freshness = interval '2' hours refresh_mode = full "
        "AS select 1 AS ds"
    )
    (statement,) = parse_cell(cell)
    assert statement.name == TableName("weird`name", "my-db", "my cat")
    assert statement.or_alter and statement.refresh_mode is RefreshMode.FULL
    assert statement.freshness == Freshness(2, FreshnessUnit.HOUR)
    assert statement.partitioned_by == ("ds",) and statement.options == (("K", "V"),)


def test_plural_units_and_string_escapes() -> None:
    (statement,) = parse_cell(
        "CREATE MATERIALIZED TABLE t COMMENT 'it''s \\'quoted\\'' WITH ('a' = 'x''y') "
        "FRESHNESS = INTERVAL ' 15 ' SECONDS AS SELECT 1"
    )
    assert statement.comment == "it's 'quoted'"
    assert statement.options == (("a", "x'y"),)
    assert statement.freshness == Freshness(15, FreshnessUnit.SECOND)


def test_column_definitions_with_complex_types_constraints_and_comments() -> None:
    (statement,) = parse_cell(
        "CREATE MATERIALIZED TABLE t (\n"
        "  id BIGINT NOT NULL CONSTRAINT pk PRIMARY KEY NOT ENFORCED COMMENT 'the key',\n"
        "  amount DECIMAL(10, 2),\n"
        "  tags ARRAY<STRUCT<k: STRING, v: MAP<STRING, INT>>>,\n"
        "  ts TIMESTAMP,\n"
        "  note COMMENT 'type left to the query'\n"
        ") COMMENT 'table' AS SELECT 1"
    )
    assert statement.columns == (
        ColumnDef("id", "BIGINT NOT NULL", "the key"),
        ColumnDef("amount", "DECIMAL(10, 2)"),
        ColumnDef("tags", "ARRAY<STRUCT<k: STRING, v: MAP<STRING, INT>>>"),
        ColumnDef("ts", "TIMESTAMP"),
        ColumnDef("note", None, "type left to the query"),
    )
    assert statement.primary_key == PrimaryKey(("id",), "pk")
    assert statement.comment == "table"


def test_all_clauses_in_flink_order() -> None:
    (statement,) = parse_cell(
        "CREATE MATERIALIZED TABLE c.n.t (ds STRING, v BIGINT, PRIMARY KEY (ds) NOT ENFORCED) COMMENT 'x' "
        "PARTITIONED BY (ds) WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd') "
        "FRESHNESS = INTERVAL '1' DAY REFRESH_MODE = FULL AS SELECT ds, v FROM s"
    )
    assert statement.name == TableName("t", "n", "c")
    assert statement.partitioned_by == ("ds",) and statement.refresh_mode is RefreshMode.FULL
    assert statement.options_dict == {"partition.fields.ds.date-formatter": "yyyy-MM-dd"}


def test_statement_text_and_alter_query_position() -> None:
    cell = "ALTER MATERIALIZED TABLE t\nAS\n  SELECT 2 AS x;"
    (statement,) = parse_cell(cell)
    assert statement.text == "ALTER MATERIALIZED TABLE t\nAS\n  SELECT 2 AS x"
    assert statement.query == "SELECT 2 AS x" and statement.query_position == Position(3, 3)


def test_statements_are_frozen() -> None:
    (statement,) = parse_cell("DROP MATERIALIZED TABLE t")
    try:
        statement.if_exists = True  # type: ignore[misc]
    except AttributeError:
        return
    raise AssertionError("statements must be immutable")


KEYWORDS = [
    "CREATE",
    "MATERIALIZED",
    "TABLE",
    "PARTITIONED",
    "BY",
    "WITH",
    "FRESHNESS",
    "INTERVAL",
    "HOUR",
    "REFRESH_MODE",
    "FULL",
    "AS",
]
DDL = [
    "CREATE",
    "MATERIALIZED",
    "TABLE",
    "db",
    ".",
    "t",
    "PARTITIONED",
    "BY",
    "(",
    "ds",
    ")",
    "WITH",
    "(",
    "'k'",
    "=",
    "'v'",
    ")",
    "FRESHNESS",
    "=",
    "INTERVAL",
    "'2'",
    "HOUR",
    "REFRESH_MODE",
    "=",
    "FULL",
    "AS",
]
QUERY = "SELECT ds FROM src"
SEPARATORS = st.sampled_from([" ", "\n", "\t", " /* c; */ ", " -- c; \n", "\n\n  "])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(SEPARATORS, min_size=len(DDL), max_size=len(DDL)),
    st.lists(st.booleans(), min_size=len(DDL), max_size=len(DDL)),
)
def test_whitespace_comments_and_case_never_change_the_statement(separators: list[str], lower: list[bool]) -> None:
    words = [w.lower() if low and w.upper() in KEYWORDS else w for w, low in zip(DDL, lower, strict=True)]
    cell = "".join(f"{sep}{word}" for sep, word in zip(separators, words, strict=True)) + " " + QUERY
    (statement,) = parse_cell(cell)
    assert statement == CreateMaterializedTable(
        text="",
        position=Position(1, 1),
        name=TableName("t", "db"),
        query=QUERY,
        partitioned_by=("ds",),
        options=(("k", "v"),),
        freshness=Freshness(2, FreshnessUnit.HOUR),
        refresh_mode=RefreshMode.FULL,
    )


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "_ -.`", min_size=1, max_size=12))
def test_any_backtick_identifier_round_trips(name: str) -> None:
    quoted = "`" + name.replace("`", "``") + "`"
    if "." in name:  # a dot inside a part would name another table (sql.names.name_part_refusal)
        with pytest.raises(UnsupportedNameError, match="contains '.'"):
            parse_cell(f"DROP MATERIALIZED TABLE {quoted}")
        return
    (statement,) = parse_cell(f"DROP MATERIALIZED TABLE {quoted}")
    assert statement.name == TableName(name)


def test_windows_line_endings_and_unicode_names() -> None:
    _, drop = parse_cell("DROP MATERIALIZED TABLE a;\r\n  DROP MATERIALIZED TABLE 表名")
    assert drop.position == Position(2, 3) and drop.name == TableName("表名")

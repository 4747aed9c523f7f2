"""analyze_query: sources (CTEs excluded) and the shape facts the incremental planner needs."""

from __future__ import annotations

import pytest

from mt_magic.sql import (
    AggregateCall,
    GroupingKind,
    JoinKind,
    Position,
    QueryAnalysisError,
    SetOperation,
    SetOpKind,
    TableName,
    analyze_query,
    parse_cell,
)

DWS = (
    "SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(distinct user_id) AS uv FROM (SELECT ds, "
    "date_format(vtime, 'HH') AS hh, user_id FROM `paimon`.`default`.`dwd_user_log_product`) tmp "
    "GROUP BY GROUPING SETS(ds, (ds, hh))"
)


def test_dws_overall_facts() -> None:
    facts = analyze_query(DWS)
    assert facts.sources == (TableName("dwd_user_log_product", "default", "paimon"),)
    assert facts.output_columns == ("ds", "hh", "pv", "uv")
    assert facts.aggregates == (
        AggregateCall("count", False, False, "COUNT(*)"),
        AggregateCall("count", True, False, "COUNT(DISTINCT user_id)"),
    )
    assert facts.grouping == frozenset({GroupingKind.GROUPING_SETS})
    assert facts.grouping_sets == (("ds",), ("ds", "hh"))
    assert facts.group_by == ("ds", "hh")
    assert facts.derived_tables == 1 and facts.expression_subqueries == 0 and facts.subqueries == 1
    assert facts.is_aggregate and not facts.joins and not facts.nondeterministic and not facts.distinct


def test_projection_over_one_table() -> None:
    facts = analyze_query("SELECT a, b + 1 AS c, upper(d) FROM db.t WHERE a > 0")
    assert facts.sources == (TableName("t", "db"),)
    assert facts.output_columns == ("a", "c", None)
    assert not facts.is_aggregate and not facts.joins and not facts.limit and not facts.order_by
    assert facts.grouping == frozenset() and facts.set_operations == ()


def test_star_makes_output_columns_unknown() -> None:
    assert analyze_query("SELECT * FROM t").output_columns is None
    assert analyze_query("SELECT t.*, 1 AS x FROM t").output_columns is None


def test_ctes_are_not_sources_and_sources_are_in_order_deduplicated() -> None:
    facts = analyze_query(
        "WITH recent AS (SELECT * FROM cat.db.events WHERE ts > 0), totals AS (SELECT k, count(*) c FROM recent "
        "GROUP BY k) SELECT * FROM totals JOIN Cat.DB.Events e ON totals.k = e.k JOIN dims d ON d.k = e.k "
        "JOIN recent r ON r.k = d.k"
    )
    assert facts.ctes == ("recent", "totals")
    assert facts.sources == (TableName("events", "db", "cat"), TableName("dims"))


def test_qualified_name_matching_a_cte_is_a_source() -> None:
    facts = analyze_query("WITH t AS (SELECT 1 AS a) SELECT * FROM t JOIN db.t USING (a)")
    assert facts.sources == (TableName("t", "db"),)


def test_nested_namespaces_are_joined() -> None:
    assert analyze_query("SELECT * FROM cat.ns1.ns2.tbl").sources == (TableName("tbl", "ns1.ns2", "cat"),)


def test_table_functions_and_values_are_not_sources() -> None:
    facts = analyze_query("SELECT id FROM range(10)")
    assert facts.sources == () and facts.table_functions == ("range",)
    assert analyze_query("SELECT * FROM VALUES (1, 2) AS v(a, b)").sources == ()


@pytest.mark.parametrize(
    ("join", "kind", "natural", "condition"),
    [
        ("JOIN r ON l.k = r.k", JoinKind.INNER, False, True),
        ("INNER JOIN r ON l.k = r.k", JoinKind.INNER, False, True),
        ("LEFT JOIN r ON l.k = r.k", JoinKind.LEFT, False, True),
        ("LEFT OUTER JOIN r ON l.k = r.k", JoinKind.LEFT, False, True),
        ("RIGHT JOIN r USING (k)", JoinKind.RIGHT, False, True),
        ("FULL OUTER JOIN r ON l.k = r.k", JoinKind.FULL, False, True),
        ("CROSS JOIN r", JoinKind.CROSS, False, False),
        (", r", JoinKind.CROSS, False, False),
        ("LEFT SEMI JOIN r ON l.k = r.k", JoinKind.SEMI, False, True),
        ("LEFT ANTI JOIN r ON l.k = r.k", JoinKind.ANTI, False, True),
        ("NATURAL JOIN r", JoinKind.INNER, True, False),
    ],
)
def test_join_kinds(join: str, kind: JoinKind, natural: bool, condition: bool) -> None:
    facts = analyze_query(f"SELECT l.k FROM l {join}")
    (fact,) = facts.joins
    assert (fact.kind, fact.natural, fact.has_condition, fact.relation) == (kind, natural, condition, "r")
    assert facts.sources == (TableName("l"), TableName("r"))


def test_several_joins_in_order_with_subquery_relation() -> None:
    facts = analyze_query(
        "SELECT * FROM a JOIN b ON a.k = b.k LEFT JOIN (SELECT k FROM c) s ON s.k = a.k FULL JOIN d ON d.k = a.k"
    )
    assert [(j.kind, j.relation) for j in facts.joins] == [
        (JoinKind.INNER, "b"),
        (JoinKind.LEFT, "s"),
        (JoinKind.FULL, "d"),
    ]
    assert facts.sources == tuple(TableName(n) for n in "abcd")
    assert facts.derived_tables == 1


def test_tutorial_dwd_join() -> None:
    facts = analyze_query(
        "SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, r.seller_id FROM `paimon`.`default`.`ods_user_log` l "
        "INNER JOIN `paimon`.`default`.`ods_dim_product` r ON l.item_id = r.item_id"
    )
    assert [j.kind for j in facts.joins] == [JoinKind.INNER]
    assert facts.sources == (
        TableName("ods_user_log", "default", "paimon"),
        TableName("ods_dim_product", "default", "paimon"),
    )
    assert facts.output_columns == ("ds", "item_id", "user_id", "vtime", "brand_id", "seller_id")


@pytest.mark.parametrize(
    ("group_by", "kinds", "keys"),
    [
        ("GROUP BY a, b", {GroupingKind.GROUP_BY}, ("a", "b")),
        ("GROUP BY CUBE (a, b)", {GroupingKind.CUBE}, ("a", "b")),
        ("GROUP BY ROLLUP (a, b)", {GroupingKind.ROLLUP}, ("a", "b")),
        ("GROUP BY a, b WITH ROLLUP", {GroupingKind.GROUP_BY, GroupingKind.ROLLUP}, ("a", "b")),
        ("GROUP BY a, b WITH CUBE", {GroupingKind.GROUP_BY, GroupingKind.CUBE}, ("a", "b")),
        ("GROUP BY GROUPING SETS ((a), (a, b), ())", {GroupingKind.GROUPING_SETS}, ("a", "b")),
        ("GROUP BY a + 1", {GroupingKind.GROUP_BY}, ("a + 1",)),
    ],
)
def test_grouping(group_by: str, kinds: set[GroupingKind], keys: tuple[str, ...]) -> None:
    facts = analyze_query(f"SELECT a, sum(x) AS s FROM t {group_by}")
    assert facts.grouping == kinds and facts.group_by == keys


def test_grouping_sets_as_written() -> None:
    facts = analyze_query("SELECT a, b, count(*) FROM t GROUP BY GROUPING SETS ((a), (a, b), ())")
    assert facts.grouping_sets == (("a",), ("a", "b"), ())


def test_aggregate_names_distinct_and_filter() -> None:
    facts = analyze_query(
        "SELECT k, sum(DISTINCT x), avg(x), min(x), max(x), approx_count_distinct(u), collect_list(y), "
        "collect_set(y), count(x) FILTER (WHERE x > 1), try_sum(x) FROM t GROUP BY k"
    )
    assert [(a.name, a.distinct, a.filtered) for a in facts.aggregates] == [
        ("sum", True, False),
        ("avg", False, False),
        ("min", False, False),
        ("max", False, False),
        ("approx_count_distinct", False, False),
        ("collect_list", False, False),
        ("collect_set", False, False),
        ("count", False, True),
        ("try_sum", False, False),
    ]
    assert facts.aggregates[-2].sql == "COUNT(x) FILTER(WHERE x > 1)"


def test_global_aggregate_without_group_by() -> None:
    facts = analyze_query("SELECT count(*) AS n FROM t")
    assert facts.is_aggregate and facts.group_by == () and facts.grouping == frozenset()


def test_window_functions_are_not_aggregates() -> None:
    facts = analyze_query(
        "SELECT k, row_number() OVER (PARTITION BY k ORDER BY ts) AS rn, sum(x) OVER w AS running, "
        "lag(x) OVER (ORDER BY ts) FROM t WINDOW w AS (ORDER BY ts)"
    )
    assert [w.name for w in facts.window_functions] == ["row_number", "sum", "lag"]
    assert facts.aggregates == () and not facts.is_aggregate
    assert not facts.order_by


def test_distinct_limit_order_by() -> None:
    facts = analyze_query("SELECT DISTINCT a FROM t ORDER BY a LIMIT 10")
    assert facts.distinct and facts.limit and facts.order_by


def test_limit_inside_a_subquery_counts() -> None:
    facts = analyze_query("SELECT * FROM (SELECT a FROM t ORDER BY a LIMIT 5) s")
    assert facts.limit and facts.order_by and facts.derived_tables == 1


def test_set_operations_in_written_order() -> None:
    facts = analyze_query(
        "SELECT a FROM t1 UNION SELECT a FROM t2 UNION ALL SELECT b FROM t3 INTERSECT SELECT 1 EXCEPT ALL SELECT 2"
    )
    assert facts.set_operations == (
        SetOperation(SetOpKind.UNION, True),
        SetOperation(SetOpKind.UNION, False),
        SetOperation(SetOpKind.INTERSECT, True),
        SetOperation(SetOpKind.EXCEPT, False),
    )
    assert facts.sources == (TableName("t1"), TableName("t2"), TableName("t3"))
    assert facts.subqueries == 0
    assert facts.output_columns == ("a",)


def test_minus_is_except() -> None:
    assert analyze_query("SELECT a FROM t1 MINUS SELECT a FROM t2").set_operations[0].kind is SetOpKind.EXCEPT


def test_expression_subqueries() -> None:
    facts = analyze_query(
        "SELECT a, (SELECT max(b) FROM u) AS m FROM t WHERE a IN (SELECT a FROM v) AND EXISTS (SELECT 1 FROM w)"
    )
    assert facts.expression_subqueries == 3 and facts.derived_tables == 0
    assert facts.sources == tuple(TableName(n) for n in ("u", "t", "v", "w"))
    assert [a.name for a in facts.aggregates] == ["max"]


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("rand()", ("rand",)),
        ("random()", ("rand",)),
        ("randn(7)", ("randn",)),
        ("uuid()", ("uuid",)),
        ("current_timestamp()", ("current_timestamp",)),
        ("current_timestamp", ("current_timestamp",)),
        ("now()", ("now",)),
        ("current_date()", ("current_date",)),
        ("shuffle(array(1, 2))", ("shuffle",)),
        ("monotonically_increasing_id()", ("monotonically_increasing_id",)),
        ("unix_timestamp()", ("current_timestamp",)),
        ("spark_partition_id()", ("spark_partition_id",)),
        ("input_file_name()", ("input_file_name",)),
        ("rand() + rand(1) + uuid()", ("rand", "uuid")),
        ("upper(a) || date_format(ts, 'yyyy')", ()),
    ],
)
def test_nondeterministic_functions(expression: str, names: tuple[str, ...]) -> None:
    assert analyze_query(f"SELECT {expression} AS x FROM t").nondeterministic == names


def test_lateral_view() -> None:
    facts = analyze_query("SELECT k, item FROM t LATERAL VIEW explode(items) e AS item")
    assert facts.lateral_views and facts.sources == (TableName("t"),)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT a FROM", r"query, line 1, column 10: the query cannot be read as Spark SQL: Expected table name"),
        ("SELECT 1 +", r"cannot be read as Spark SQL: Required keyword: 'expression' missing"),
        ("SELECT 1; SELECT 2", r"exactly one query \(SELECT …\), found several statements"),
        ("INSERT INTO t SELECT 1", r"exactly one query \(SELECT …\), found Insert"),
        ("", r"exactly one query \(SELECT …\), found no query"),
        ("SELECT 'abc FROM t", r"cannot be read as Spark SQL"),
    ],
)
def test_unreadable_query_is_a_clear_error(sql: str, message: str) -> None:
    with pytest.raises(QueryAnalysisError, match=message):
        analyze_query(sql)


def test_parse_error_position_is_a_cell_position() -> None:
    cell = "CREATE MATERIALIZED TABLE dws\nFRESHNESS = INTERVAL '1' HOUR\nAS SELECT a\n  FROM t WHERE a = = 1"
    (statement,) = parse_cell(cell)
    with pytest.raises(QueryAnalysisError) as info:
        analyze_query(statement.query, statement="CREATE MATERIALIZED TABLE dws", origin=statement.query_position)
    err = info.value
    assert err.statement == "query of CREATE MATERIALIZED TABLE dws"
    assert err.position == Position(4, 20)
    assert err.offending == "="
    assert cell.split("\n")[3][19] == "="


def test_parse_error_on_the_first_body_line_is_shifted_by_the_body_column() -> None:
    (statement,) = parse_cell("ALTER MATERIALIZED TABLE t AS SELECT a FROM")
    with pytest.raises(QueryAnalysisError) as info:
        analyze_query(statement.query, statement="ALTER MATERIALIZED TABLE t", origin=statement.query_position)
    assert info.value.position == Position(1, 40)
    assert info.value.statement == "query of ALTER MATERIALIZED TABLE t"


def test_facts_are_frozen() -> None:
    facts = analyze_query("SELECT 1 AS x")
    with pytest.raises(AttributeError):
        facts.limit = True  # type: ignore[misc]

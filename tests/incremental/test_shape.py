"""The static planner (no Spark): result-SELECT facts, and which strategy each query shape gets."""

from __future__ import annotations

import pytest

from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason as R
from mt_magic.runtime.refresh.incremental.reasons import Strategy as S
from mt_magic.runtime.refresh.incremental.shape import QueryShape, plan_query
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.facts import OutputKind, TableName

DWS = (
    "SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(DISTINCT user_id) AS uv FROM (SELECT ds, "
    "date_format(vtime, 'HH') AS hh, user_id FROM c.db.dwd) tmp GROUP BY GROUPING SETS ((ds), (ds, hh))"
)
DWD = (
    "SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, r.seller_id FROM c.db.ods_user_log l "
    "INNER JOIN c.db.ods_dim_product r ON l.item_id = r.item_id"
)


def test_result_facts_of_the_tutorial_grouping_sets() -> None:
    result = analyze_query(DWS).result
    assert result is not None and result.aggregated and result.grouping_set_count == 2
    assert [(o.name, o.kind) for o in result.outputs] == [
        ("ds", OutputKind.GROUP_KEY),
        ("hh", OutputKind.KEY_EXPRESSION),
        ("pv", OutputKind.AGGREGATE),
        ("uv", OutputKind.AGGREGATE),
    ]
    assert result.group_keys == ("ds", "hh") and result.common_group_keys == ("ds",)
    assert not result.nested_aggregation and not result.having


def test_result_facts_resolve_ordinals_rollups_and_a_renaming_wrapper() -> None:
    rollup = analyze_query("SELECT a, b, count(*) AS n FROM t GROUP BY a, ROLLUP (b, c)").result
    assert rollup.group_keys == ("a", "b", "c") and rollup.common_group_keys == ("a",)
    assert rollup.grouping_set_count == 3
    with_rollup = analyze_query("SELECT a, b, count(*) AS n FROM t GROUP BY a, b WITH ROLLUP").result
    assert with_rollup.common_group_keys == () and with_rollup.grouping_set_count == 3
    ordinal = analyze_query("SELECT k, sum(v) AS s FROM t GROUP BY 1").result
    assert ordinal.outputs[0].kind is OutputKind.GROUP_KEY and ordinal.outputs[0].group_key == "k"
    wrapped = analyze_query("SELECT k AS key, CAST(n AS INT) AS n FROM (SELECT k, count(*) AS n FROM t GROUP BY k) w")
    result = wrapped.result
    assert result.wrapped and [(o.name, o.kind) for o in result.outputs] == [
        ("key", OutputKind.GROUP_KEY),
        ("n", OutputKind.AGGREGATE_EXPRESSION),
    ]


def test_repeated_sources_count_cte_references() -> None:
    assert analyze_query("SELECT * FROM t a JOIN t b ON a.k = b.k").repeated_sources == (TableName("t"),)
    assert analyze_query("WITH x AS (SELECT * FROM s) SELECT * FROM x JOIN x y ON x.k = y.k").repeated_sources == (
        TableName("s"),
    )
    assert analyze_query("WITH x AS (SELECT * FROM s) SELECT * FROM x JOIN t ON x.k = t.k").repeated_sources == ()


@pytest.mark.parametrize(
    ("query", "on_appends", "on_changes"),
    [
        ("SELECT k, v * 2 AS v2 FROM t WHERE v > 0", S.APPEND_DELTA, S.APPLY_CHANGES),
        (DWD, S.APPEND_DELTA, S.APPLY_CHANGES),
        ("SELECT * FROM a, b WHERE a.k = b.k", S.APPEND_DELTA, S.APPLY_CHANGES),
        ("SELECT a.k, b.y FROM a CROSS JOIN b", S.APPEND_DELTA, S.APPLY_CHANGES),
        (
            "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM t GROUP BY k",
            S.AGGREGATE_MERGE,
            S.AGGREGATE_RETRACT,
        ),
        ("SELECT k, COUNT(1) AS n FROM t GROUP BY k", S.AGGREGATE_MERGE, S.AGGREGATE_RETRACT),
        # no unfiltered count(*) says when a group is empty; a join's delta terms are not the rows removed
        ("SELECT k, count(*) FILTER (WHERE v > 0) AS n FROM t GROUP BY k", S.AGGREGATE_MERGE, S.AFFECTED_GROUPS),
        ("SELECT a.k, count(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.k", S.AGGREGATE_MERGE, S.AFFECTED_GROUPS),
        ("SELECT k, count(v) FILTER (WHERE v > 0) AS n FROM t GROUP BY k", S.AGGREGATE_MERGE, S.AFFECTED_GROUPS),
        ("SELECT count(*) AS n FROM t", S.AGGREGATE_MERGE, None),
        ("SELECT DISTINCT a, b FROM t", S.AGGREGATE_MERGE, S.AFFECTED_GROUPS),
        ("SELECT k, avg(v) AS a FROM t GROUP BY k", S.AFFECTED_GROUPS, S.AFFECTED_GROUPS),
        ("SELECT k, count(DISTINCT v) AS d FROM t GROUP BY k", S.AFFECTED_GROUPS, S.AFFECTED_GROUPS),
        ("SELECT k, sum(v) AS s FROM t GROUP BY k HAVING sum(v) > 3", S.AFFECTED_GROUPS, S.AFFECTED_GROUPS),
        ("SELECT upper(k) AS uk, count(*) AS n FROM t GROUP BY k", S.AFFECTED_GROUPS, S.AFFECTED_GROUPS),
        ("SELECT k, sum(v) / count(*) AS r FROM t GROUP BY k", S.AFFECTED_GROUPS, S.AFFECTED_GROUPS),
        (DWS, S.AFFECTED_GROUPS, S.AFFECTED_GROUPS),
        (
            "SELECT a, b, count(*) AS n FROM t GROUP BY GROUPING SETS ((a), (a, b))",
            S.AGGREGATE_MERGE,
            S.AFFECTED_GROUPS,
        ),
        ("SELECT a, b, count(*) AS n FROM t GROUP BY CUBE (a, b)", S.AGGREGATE_MERGE, None),
    ],
)
def test_strategy_by_shape_and_change(query: str, on_appends: S | None, on_changes: S | None) -> None:
    plan = plan_query(analyze_query(query))
    assert plan.fallback is None
    assert plan.strategy_for(ChangeKind.APPENDS) is on_appends
    assert plan.strategy_for(ChangeKind.ROW_LEVEL) is on_changes


def test_merge_plan_names_keys_and_combine_functions() -> None:
    plan = plan_query(
        analyze_query(
            "SELECT g, k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM t "
            "GROUP BY GROUPING SETS ((g), (g, k))"
        )
    )
    assert plan.shape is QueryShape.AGGREGATE
    assert plan.merge == (("n", "sum"), ("s", "sum"), ("lo", "min"), ("hi", "max"))
    assert plan.merge_keys == ("g", "k") and plan.rollup_keys == ("k",)
    assert plan.slice_columns == ("g", "k") and plan.pushdown == (("g", "g"),)


@pytest.mark.parametrize(
    ("query", "reasons"),
    [
        ("SELECT k, row_number() OVER (ORDER BY v) AS rn FROM t", [R.WINDOW_FUNCTION]),
        ("SELECT k FROM t ORDER BY k LIMIT 3", [R.LIMIT, R.ORDER_BY]),
        ("SELECT k, rand() AS r FROM t", [R.NONDETERMINISTIC]),
        ("SELECT k, current_date() AS d FROM t", [R.NONDETERMINISTIC]),
        ("SELECT k, s FROM t WHERE s >= CAST(unhex('C328') AS STRING)", [R.TEXT_NOT_UTF8]),
        (
            "SELECT k FROM t WHERE s = TRY_CAST(X'FF' AS STRING) OR s = CAST(unbase64('/w==') AS STRING)",
            [R.TEXT_NOT_UTF8],
        ),
        ("SELECT k FROM a INTERSECT SELECT k FROM b", [R.SET_OPERATION]),
        ("SELECT k FROM a UNION ALL SELECT k FROM b GROUP BY k", [R.SET_OPERATION]),
        ("SELECT k FROM a UNION ALL SELECT k FROM b LEFT JOIN c ON b.k = c.k", [R.OUTER_JOIN, R.SET_OPERATION]),
        ("SELECT x.k FROM (SELECT k FROM a UNION ALL SELECT k FROM b) x", [R.SET_OPERATION]),
        ("SELECT k FROM a UNION ALL SELECT k FROM a", [R.SELF_JOIN]),
        ("SELECT k FROM a WHERE k = (SELECT max(k) FROM b)", [R.SUBQUERY_EXPRESSION, R.NESTED_AGGREGATION]),
        ("SELECT a.k FROM t a JOIN t b ON a.k = b.k", [R.SELF_JOIN]),
        ("SELECT k, n FROM (SELECT k, count(*) AS n FROM t GROUP BY k) x WHERE n > 1", [R.NESTED_AGGREGATION]),
        ("SELECT count(DISTINCT v) AS d FROM t", [R.GROUPS_NOT_LOCATABLE]),
        ("SELECT avg(v) AS a FROM t", [R.GROUPS_NOT_LOCATABLE]),
        ("SELECT a, b, count(DISTINCT v) AS d FROM t GROUP BY ROLLUP (a, b)", [R.GROUPS_NOT_LOCATABLE]),
        ("SELECT id FROM range(10)", [R.TABLE_FUNCTION]),
    ],
)
def test_shapes_that_always_recompute_say_why(query: str, reasons: list[R]) -> None:
    plan = plan_query(analyze_query(query))
    assert plan.fallback is not None and list(plan.fallback.reasons) == reasons
    assert plan.strategy_for(ChangeKind.APPENDS) is None
    assert plan.describe().startswith(f"fallback: {reasons[0].sentence}")


def test_every_reason_and_strategy_has_a_sentence() -> None:
    for reason in R:
        assert len(reason.sentence) > 20 and str(reason).endswith(f"[{reason.name}]")
    assert len({s.label for s in S}) == len(S) and len({r.sentence for r in R}) == len(R)


KEYED_JOINS = [
    ("SELECT a.k, a.x, b.y FROM a LEFT JOIN b ON a.k = b.k", ("k",), ("a",)),
    ("SELECT a.k, b.y FROM a LEFT OUTER JOIN b ON b.k = a.k AND b.y > 0 LEFT JOIN c ON c.k = b.k", ("k",), ("a",)),
    ("SELECT b.k, a.x FROM a RIGHT JOIN b ON a.k = b.k", ("k",), ("b",)),
    ("SELECT a.k AS ak, b.k AS bk, b.y FROM a FULL OUTER JOIN b ON a.k = b.k", ("ak", "bk"), ()),
    ("SELECT coalesce(a.k, b.k) AS k, b.y FROM a FULL JOIN b ON a.k = b.k", ("k",), ()),
    ("SELECT k, a.x, b.y FROM a FULL JOIN b USING (k)", ("k",), ()),
    ("SELECT a.k, a.x FROM a LEFT SEMI JOIN b ON a.k = b.k", ("k",), ("a",)),
    ("SELECT a.k, a.x FROM a LEFT ANTI JOIN b ON a.k = b.k WHERE a.x > 0", ("k",), ("a",)),
    ("SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k LEFT JOIN c ON b.k = c.k", ("k",), ("a", "b")),
    ("SELECT a.k, a.x FROM a WHERE a.k IN (SELECT b.k FROM b WHERE b.y > 0) AND a.x > 1", ("k",), ("a",)),
    ("SELECT k, x FROM a WHERE k IN (SELECT k FROM b)", ("k",), ("a",)),
    ("SELECT a.k, a.x FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.y > a.x)", ("k",), ("a",)),
    ("SELECT a.k, a.x FROM a WHERE NOT EXISTS (SELECT * FROM b WHERE a.k = b.k)", ("k",), ("a",)),
    (
        "SELECT a.k, c.z FROM a LEFT JOIN c ON a.k = c.k WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
        ("k",),
        ("a",),
    ),
]


@pytest.mark.parametrize(("query", "located", "preserved"), KEYED_JOINS)
def test_outer_semi_and_anti_joins_on_one_shown_key_recompute_the_affected_keys(
    query: str, located: tuple, preserved: tuple
) -> None:
    plan = plan_query(analyze_query(query))
    assert plan.fallback is None and plan.shape is QueryShape.KEYED_JOIN
    assert plan.slice_columns == located
    assert plan.strategy_for(ChangeKind.APPENDS) is S.AFFECTED_KEYS
    assert plan.strategy_for(ChangeKind.ROW_LEVEL) is S.AFFECTED_KEYS
    assert [c.column for c in plan.join_key] == ["k"] * len(plan.join_key)
    # a change to the preserved tables alone (present in every result row) is a sum of delta terms
    assert plan.linear_sources == frozenset(preserved)
    for table in preserved:
        assert plan.strategy_for(ChangeKind.APPENDS, [table.upper()]) is S.APPEND_DELTA
        assert plan.strategy_for(ChangeKind.ROW_LEVEL, [table]) is S.APPLY_CHANGES
    assert plan.strategy_for(ChangeKind.APPENDS, ["a", "b", "c"]) is S.AFFECTED_KEYS
    assert ("when only" in plan.describe()) == bool(preserved)


WINDOWS = [
    ("SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v) AS rn FROM t", ("g",)),
    ("SELECT g, h, sum(v) OVER (PARTITION BY g, h) AS s, max(v) OVER (PARTITION BY h) AS m FROM t", ("h",)),
    (
        "SELECT g, v FROM (SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v DESC) AS rn FROM t) x "
        "WHERE rn = 1",
        ("g",),
    ),
    ("SELECT * FROM (SELECT *, rank() OVER (PARTITION BY g ORDER BY v) AS r FROM t) x WHERE r <= 3", ("g",)),
    ("SELECT t.g, d.n, lag(v) OVER (PARTITION BY t.g ORDER BY v) AS p FROM t JOIN d ON t.g = d.g", ("g",)),
    ("SELECT t.g, d.n, rank() OVER (PARTITION BY t.g ORDER BY d.n) AS r FROM t CROSS JOIN d", ("g",)),
]


@pytest.mark.parametrize(("query", "located"), WINDOWS)
def test_partitioned_windows_and_top_n_recompute_the_affected_partitions(query: str, located: tuple) -> None:
    plan = plan_query(analyze_query(query))
    assert plan.fallback is None and plan.shape is QueryShape.WINDOW
    assert plan.slice_columns == located
    assert plan.strategy_for(ChangeKind.APPENDS) is S.AFFECTED_WINDOWS
    assert plan.strategy_for(ChangeKind.ROW_LEVEL) is S.AFFECTED_WINDOWS


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("SELECT b.k, b.y FROM a LEFT JOIN b ON a.k = b.k", R.JOIN_KEY_NOT_SHOWN),
        ("SELECT a.x, b.y FROM a LEFT JOIN b ON a.k = b.k", R.JOIN_KEY_NOT_SHOWN),
        ("SELECT a.k, b.y FROM a FULL JOIN b ON a.k = b.k", R.JOIN_KEY_NOT_SHOWN),
        ("SELECT a.k, b.y FROM a RIGHT JOIN b ON a.k = b.k", R.JOIN_KEY_NOT_SHOWN),
        ("SELECT a.k FROM a LEFT JOIN b ON a.k = b.k LEFT JOIN c ON b.j = c.j", R.JOIN_KEY_NOT_SHARED),
        ("SELECT a.k FROM a LEFT JOIN b ON a.k < b.k", R.JOIN_KEY_NOT_SHARED),
        ("SELECT a.k FROM a WHERE a.k NOT IN (SELECT b.k FROM b)", R.NOT_IN_SUBQUERY),
        ("SELECT a.x FROM a WHERE a.k IN (SELECT b.k FROM b)", R.JOIN_KEY_NOT_SHOWN),
        ("SELECT a.k FROM a WHERE a.x > 0 OR a.k IN (SELECT b.k FROM b)", R.SUBQUERY_EXPRESSION),
        ("SELECT a.k FROM a WHERE a.k IN (SELECT max(b.k) FROM b GROUP BY b.y)", R.SUBQUERY_EXPRESSION),
        ("SELECT a.k FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.y > a.x)", R.SUBQUERY_EXPRESSION),
        ("SELECT a.k FROM a LEFT JOIN (SELECT k FROM b) s ON a.k = s.k", R.JOIN_KEY_NOT_SHARED),
        ("SELECT a.k, count(b.y) AS n FROM a LEFT JOIN b ON a.k = b.k GROUP BY a.k", R.OUTER_JOIN),
        ("SELECT x.k FROM (SELECT a.k FROM a LEFT JOIN b ON a.k = b.k) x", R.OUTER_JOIN),
        ("SELECT v, row_number() OVER (PARTITION BY g ORDER BY v) AS rn FROM t", R.WINDOW_PARTITION_NOT_SHOWN),
        (
            "SELECT v FROM (SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v) AS rn FROM t) x WHERE rn = 1",
            R.WINDOW_PARTITION_NOT_SHOWN,
        ),
        ("SELECT g, sum(v) OVER () AS s FROM t", R.WINDOW_FUNCTION),
        ("SELECT g, sum(v) OVER (PARTITION BY g) AS s FROM t GROUP BY g, v", R.WINDOW_FUNCTION),
        (
            "SELECT a.k, rank() OVER (PARTITION BY a.k ORDER BY b.y) AS r FROM a LEFT JOIN b ON a.k = b.k",
            R.WINDOW_FUNCTION,
        ),
    ],
)
def test_outer_joins_and_windows_that_cannot_be_located_say_what_to_change(query: str, reason: R) -> None:
    plan = plan_query(analyze_query(query))
    assert plan.fallback is not None and plan.fallback.reason is reason
    assert plan.strategy_for(ChangeKind.ROW_LEVEL) is None


@pytest.mark.parametrize(
    ("query", "on_appends", "on_changes"),
    [
        ("SELECT k, v FROM a WHERE v > 0 UNION ALL SELECT k, w FROM b", S.APPEND_DELTA, S.APPLY_CHANGES),
        (
            "SELECT k FROM a UNION ALL SELECT b.k FROM b JOIN c ON b.k = c.k UNION ALL SELECT k FROM d",
            S.APPEND_DELTA,
            S.APPLY_CHANGES,
        ),
        ("SELECT k, v FROM a UNION SELECT k, w AS v FROM b", S.AGGREGATE_MERGE, S.AFFECTED_GROUPS),
        ("SELECT k FROM a UNION ALL SELECT k FROM b UNION SELECT k FROM c", S.AGGREGATE_MERGE, S.AFFECTED_GROUPS),
    ],
)
def test_union_all_sums_its_branches_and_union_is_distinct_over_them(query: str, on_appends: S, on_changes: S) -> None:
    plan = plan_query(analyze_query(query))
    assert plan.fallback is None
    assert (plan.strategy_for(ChangeKind.APPENDS), plan.strategy_for(ChangeKind.ROW_LEVEL)) == (on_appends, on_changes)
    assert all(len(b) >= 1 for b in plan.branches) and len(set().union(*plan.branches)) == sum(map(len, plan.branches))

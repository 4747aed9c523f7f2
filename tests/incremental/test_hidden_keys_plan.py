"""Which definitions get hidden key columns, and what users see of them: pure (no JVM).

The storage query appends the join key exactly when that turns a JOIN_KEY_NOT_SHOWN fallback into an
affected-key plan; every other query is stored as written. The key is the preserved table's column, or the
COALESCE of every visible table's (a FULL join), and :func:`visible_query` gives the user's columns back.
"""

from __future__ import annotations

import pytest
import sqlglot

from mt_magic.runtime.refresh.incremental import FallbackReason, Strategy
from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.row_identity import storage_query
from mt_magic.runtime.refresh.incremental.shape import QueryShape, plan_query
from mt_magic.sql import parse_cell
from mt_magic.sql.errors import ColumnError
from mt_magic.sql.names import column_name_problem
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.hidden_keys import hidden_columns, visible_query
from mt_magic.vocabulary import is_hidden_column

HIDDEN = [
    # (user query, the hidden key's expression)
    ("SELECT f.id, f.v, d.name FROM c.n.facts f LEFT JOIN c.n.dims d ON f.k = d.k", "`f`.`k`"),
    ("SELECT d.k FROM c.n.facts f FULL OUTER JOIN c.n.dims d ON f.k = d.k", "COALESCE(`f`.`k`, `d`.`k`)"),
    ("SELECT f.name FROM c.n.facts f FULL JOIN c.n.dims d ON f.k = d.k", "COALESCE(`f`.`k`, `d`.`k`)"),
    ("SELECT f.id, d.name FROM c.n.facts f RIGHT JOIN c.n.dims d ON f.k = d.k", "`d`.`k`"),
    ("SELECT id, v FROM c.n.facts f WHERE f.k IN (SELECT k FROM c.n.dims WHERE name <> 'x')", "`f`.`k`"),
    ("SELECT id, v FROM c.n.facts WHERE k IN (SELECT k FROM c.n.dims)", "`facts`.`k`"),
    ("SELECT id, v FROM c.n.facts f WHERE NOT EXISTS (SELECT 1 FROM c.n.dims d WHERE d.k = f.k)", "`f`.`k`"),
    ("SELECT f.id FROM c.n.facts f LEFT ANTI JOIN c.n.dims d ON f.k = d.k", "`f`.`k`"),
    ("SELECT a.x, c.z FROM c.n.a a LEFT JOIN c.n.b b ON a.k = b.k LEFT JOIN c.n.c c ON b.k = c.k", "`a`.`k`"),
]


@pytest.mark.parametrize(("query", "key"), HIDDEN)
def test_a_join_whose_key_is_not_shown_stores_it_hidden_and_plans_affected_keys(query: str, key: str) -> None:
    before = plan_query(analyze_query(query))
    assert before.fallback is not None and before.fallback.reasons == (FallbackReason.JOIN_KEY_NOT_SHOWN,)
    stored = storage_query(query)
    assert hidden_columns(stored) == ("__mt_key_0",)
    assert f"{key} AS __mt_key_0" in stored, stored
    plan = plan_query(analyze_query(stored))
    assert plan.fallback is None and plan.shape is QueryShape.KEYED_JOIN
    assert plan.slice_columns == ("__mt_key_0",)  # the hidden key alone locates every row
    assert plan.strategy_for(ChangeKind.ROW_LEVEL) is Strategy.AFFECTED_KEYS
    assert visible_query(stored) == sqlglot.parse_one(query, read="spark").sql(dialect="spark")
    assert not hidden_columns(visible_query(stored))
    # keep=1 (ALTER … AS over a table that has one) gives the same layout
    assert storage_query(query, keep=1) == stored


WINDOWS = [
    # (user query, the storage query)
    (
        "SELECT k, v, sum(v) OVER (PARTITION BY g) AS total FROM c.n.src",
        "SELECT k, v, SUM(v) OVER (PARTITION BY g) AS total, g AS __mt_key_0 FROM c.n.src",
    ),
    (
        "SELECT v FROM (SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v) AS rn FROM c.n.src) t WHERE rn = 1",
        "SELECT v, t.__mt_key_0 AS __mt_key_0 FROM (SELECT g, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v) AS rn, "
        "g AS __mt_key_0 FROM c.n.src) AS t WHERE rn = 1",
    ),
    (
        "SELECT k, rank() OVER (PARTITION BY g, ds ORDER BY v) AS r, count(*) OVER (PARTITION BY ds, g) AS n "
        "FROM c.n.src",
        "SELECT k, RANK() OVER (PARTITION BY g, ds ORDER BY v) AS r, COUNT(*) OVER (PARTITION BY ds, g) AS n, "
        "g AS __mt_key_0, ds AS __mt_key_1 FROM c.n.src",
    ),
]


@pytest.mark.parametrize(("query", "stored"), WINDOWS)
def test_a_window_whose_partition_is_not_shown_stores_it_hidden(query: str, stored: str) -> None:
    before = plan_query(analyze_query(query))
    assert before.fallback is not None and before.fallback.reasons == (FallbackReason.WINDOW_PARTITION_NOT_SHOWN,)
    assert storage_query(query) == stored
    plan = plan_query(analyze_query(stored))
    assert plan.fallback is None and plan.shape is QueryShape.WINDOW
    assert all(is_hidden_column(c) for c in plan.slice_columns) and plan.slice_columns
    assert plan.strategy_for(ChangeKind.APPENDS) is Strategy.AFFECTED_WINDOWS
    assert not hidden_columns(visible_query(stored))


@pytest.mark.parametrize(
    "query",
    [
        "SELECT g, v, rank() OVER (PARTITION BY g ORDER BY v) AS r FROM c.n.src",  # shown: nothing hidden
        "SELECT v, rank() OVER (ORDER BY v) AS r FROM c.n.src",  # no PARTITION BY: the whole input
        "SELECT * FROM (SELECT v, rank() OVER (PARTITION BY g ORDER BY v) AS r FROM c.n.src) WHERE r = 1",
        "SELECT f.k, d.name FROM c.n.facts f LEFT JOIN c.n.dims d ON f.k = d.k",  # shown: nothing hidden
        "SELECT f.id, d.name FROM c.n.facts f JOIN c.n.dims d ON f.k = d.k",  # inner: delta terms
        "SELECT id FROM c.n.facts f WHERE f.k NOT IN (SELECT k FROM c.n.dims)",  # NOT IN is not key-local
        "SELECT f.id FROM c.n.facts f LEFT JOIN c.n.dims d ON f.k = d.k ORDER BY f.id",  # also ORDER BY
        "SELECT f.id FROM c.n.facts f LEFT JOIN c.n.dims d ON f.k < d.k",  # no equi-join key
        "SELECT count(*) AS n FROM c.n.facts f LEFT JOIN c.n.dims d ON f.k = d.k",  # aggregated outer join
        "SELECT a.x FROM c.n.a a LEFT JOIN c.n.b b ON a.k = b.k LEFT JOIN c.n.c c ON b.j = c.j",  # two keys
    ],
)
def test_other_queries_are_stored_as_written(query: str) -> None:
    assert storage_query(query) == query


def test_keep_stores_the_key_of_a_query_that_shows_it_and_nothing_without_a_join() -> None:
    shown = "SELECT f.k, d.name FROM c.n.facts f LEFT JOIN c.n.dims d ON f.k = d.k"
    stored = storage_query(shown, keep=1)
    assert hidden_columns(stored) == ("__mt_key_0",)
    assert plan_query(analyze_query(stored)).slice_columns == ("k",)
    assert storage_query("SELECT id FROM c.n.facts", keep=1) == "SELECT id FROM c.n.facts"


def test_the_hidden_prefix_is_refused_for_user_columns_in_any_letter_case() -> None:
    assert is_hidden_column("__MT_KEY_7") and is_hidden_column("__mt_key_") and not is_hidden_column("mt_key_0")
    problem = column_name_problem("__Mt_Key_0")
    assert problem is not None and "reserves for the hidden key columns" in problem
    assert column_name_problem("__mt_keys") is None
    with pytest.raises(ColumnError, match=r"'__mt_key_0' starts with '__mt_key_'.*rename it"):
        parse_cell(
            "CREATE MATERIALIZED TABLE t (__mt_key_0 INT) FRESHNESS = INTERVAL '1' MINUTE AS SELECT 1 AS __mt_key_0"
        )

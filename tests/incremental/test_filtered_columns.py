"""Which column names a query's conditions compare (:mod:`mt_magic.sql.query.filtered_columns`): the columns whose
replaced STRING bounds make a refresh recompute (issue 46). More names than Spark pushes is safe, fewer is not."""

from __future__ import annotations

import pytest

from mt_magic.sql.query.filtered_columns import filtered_columns


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("SELECT k, s FROM t WHERE s = 'é'", {"s"}),
        ("SELECT g, count(*) AS n FROM t GROUP BY g", set()),
        ("SELECT g, count(*) AS n FROM t GROUP BY g HAVING g > 'a'", {"g"}),
        ("SELECT f.id, d.name FROM f JOIN d ON f.k = d.k", {"f", "d", "k"}),
        ("SELECT * FROM f JOIN d USING (s)", {"s"}),
        ("SELECT * FROM (SELECT upper(s) AS u, n FROM t) WHERE u < 'b'", {"u", "s"}),
        (
            "WITH x AS (SELECT s AS a FROM t) SELECT * FROM x WHERE a IN (SELECT b FROM y WHERE y.c = 1)",
            {"a", "s", "b", "y", "c"},
        ),
        ("SELECT * FROM (SELECT k, lower(s) FROM t) AS x(j, u) WHERE u = 'é'", {"u", "s"}),
        ("SELECT k FROM t WHERE st.s >= 'a'", {"st", "s"}),
        ("SELECT k, s FROM t QUALIFY row_number() OVER (PARTITION BY s ORDER BY k) = 1", {"s", "k"}),
    ],
)
def test_the_names_a_condition_compares_and_the_aliases_they_name(query: str, names: set[str]) -> None:
    assert filtered_columns(query) == names

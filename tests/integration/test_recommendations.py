"""Each piece of advice in ``recommendations.ADVICE``, applied as written to a real table, makes its refreshes
incremental again.

For every entry: a real materialized table whose refreshes recompute for that reason; the advice where a user
reads it (``recommend`` over the table's history, ``%mt history`` as text and HTML, the card's ``advice`` line);
the advice applied literally (``ALTER MATERIALIZED TABLE … AS``, DROP then CREATE, or ``SET FRESHNESS`` with the
value the advice computed); then a change to the source at the same rate and one refresh, which must be
incremental and leave the table equal to ``spark.sql(<its query>)``. The cases are keyed by the advice's reason,
so an entry added to ``ADVICE`` without a case here fails.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from mt_testing import run
from shared_catalog import CATALOG

from mt_magic.runtime.inspect.recommendations import ADVICE, Recommendation, fallback_reason, recommend
from mt_magic.runtime.refresh.incremental import FallbackReason
from mt_magic.runtime.status import RefreshOutcome
from mt_magic.vocabulary import RefreshKind
from mt_magic.widgets.badges import recommendation_text
from mt_magic.widgets.render import detail_rows
from mt_magic.widgets.static_views import HistoryView

pytestmark = pytest.mark.spark

TABLE = "advised"
FRESHNESS = "INTERVAL '10' MINUTE"


def append_range(start: int, rows: int) -> Callable[..., None]:
    """Append ``k`` = start … start + rows - 1 to ``big`` (the large source of the change-fraction case)."""

    def append(spark, _scale: float = 1.0) -> None:
        spark.range(start, start + int(rows * _scale)).selectExpr("CAST(id AS INT) AS k").writeTo("big").append()

    return append


def big_source(spark, _scale: float = 1.0) -> None:
    spark.sql("CREATE TABLE big (k INT) USING iceberg")
    append_range(0, 100_000)(spark)


def sql(*statements: str) -> Callable[..., None]:
    def change(spark, _scale: float = 1.0) -> None:
        for statement in statements:
            spark.sql(statement)

    return change


def alter_as(query: str) -> Callable[[Recommendation], list[str]]:
    return lambda _advice: [f"ALTER MATERIALIZED TABLE {TABLE} AS {query}"]


def create_again(query: str) -> Callable[[Recommendation], list[str]]:
    return lambda _advice: [
        f"DROP MATERIALIZED TABLE {TABLE}",
        f"CREATE MATERIALIZED TABLE {TABLE} FRESHNESS = {FRESHNESS} AS {query}",
    ]


def set_advised_freshness(advice: Recommendation) -> list[str]:
    """The FRESHNESS the advice computed, read from its text as a user would copy it."""
    found = re.search(r"SET FRESHNESS = (INTERVAL '\d+' [A-Z]+)", advice.change)
    assert found is not None, advice.change
    return [f"ALTER MATERIALIZED TABLE {TABLE} SET FRESHNESS = {found[1]}"]


@dataclass(frozen=True)
class Case:
    sources: Callable[..., None]
    query: str
    """The query whose refreshes recompute for the reason."""
    recomputing: tuple[Callable[..., None], ...]
    """Source changes, each followed by a refresh that recomputes for the reason."""
    apply: Callable[[Recommendation], list[str]]
    """The statements the advice says to run."""
    advised_query: str
    next_change: Callable[..., None]
    """The next change, at the rate of the last one: called with the new freshness over the old."""


SMALL = sql(
    "CREATE TABLE a (k INT NOT NULL, v INT) USING iceberg",
    "INSERT INTO a VALUES (1, 10), (2, 20), (3, 30), (4, 40)",
    "CREATE TABLE b (k INT NOT NULL) USING iceberg",
    "INSERT INTO b VALUES (2), (9)",
)

CASES: dict[FallbackReason, Case] = {
    FallbackReason.NOT_IN_SUBQUERY: Case(
        SMALL,
        "SELECT a.k, a.v FROM a WHERE a.k NOT IN (SELECT b.k FROM b)",
        (sql("INSERT INTO a VALUES (5, 50), (9, 90)"),),
        alter_as("SELECT a.k, a.v FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)"),
        "SELECT a.k, a.v FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
        sql("INSERT INTO a VALUES (6, 60), (2, 21)"),
    ),
    FallbackReason.ORDER_BY: Case(
        SMALL,
        "SELECT k % 2 AS g, count(*) AS n, sum(v) AS total FROM a GROUP BY k % 2 ORDER BY g",
        (sql("INSERT INTO a VALUES (5, 50)"),),
        alter_as("SELECT k % 2 AS g, count(*) AS n, sum(v) AS total FROM a GROUP BY k % 2"),
        "SELECT k % 2 AS g, count(*) AS n, sum(v) AS total FROM a GROUP BY k % 2",
        sql("INSERT INTO a VALUES (6, 60), (7, 70)"),
    ),
    FallbackReason.NONDETERMINISTIC: Case(
        SMALL,
        "SELECT k, v, rand() AS r FROM a",
        (sql("INSERT INTO a VALUES (5, 50)"),),
        create_again("SELECT k, v FROM a"),
        "SELECT k, v FROM a",
        sql("INSERT INTO a VALUES (6, 60)"),
    ),
    # A GROUP BY over a source past ADAPTIVE_MIN_ROWS: 100,000 rows, then 100,000 (50 % of the 200,000 then
    # pinned) and 150,000 (43 %) arrive per refresh, both past the default 30 %; at the advised freshness the
    # same rate brings a smaller share.
    FallbackReason.CHEAPER_TO_RECOMPUTE: Case(
        big_source,
        "SELECT k % 100 AS g, count(*) AS n, sum(k) AS s FROM big GROUP BY k % 100",
        (append_range(100_000, 100_000), append_range(200_000, 150_000)),
        set_advised_freshness,
        "SELECT k % 100 AS g, count(*) AS n, sum(k) AS s FROM big GROUP BY k % 100",
        append_range(350_000, 150_000),
    ),
}


def refresh(mt) -> RefreshOutcome:
    [result] = run(mt, f"ALTER MATERIALIZED TABLE {TABLE} REFRESH")
    assert result.refresh is not None
    return result.refresh.result(timeout=300)


def shown_advice(mt, name: str, reason: FallbackReason) -> Recommendation:
    """The advice from the table's history, and the same advice in ``%mt history`` and on the card."""
    history = mt.history(name)
    advice = recommend(history.records, history.freshness)
    assert advice is not None and advice.reason is reason, [r.strategy for r in history.records]
    text = f"advice: {recommendation_text(advice)}"
    view = HistoryView(history.name, history.records, history.freshness)
    assert text in repr(view)
    assert html.escape(text) in view._repr_html_()
    card = dict(detail_rows(mt.status(name)))
    assert card["advice"].startswith(f"recomputes ({reason.name.lower().replace('_', ' ')}): {advice.change} · ")
    return advice


def rows(df) -> Counter:
    return Counter(tuple(row) for row in df.collect())


@pytest.mark.parametrize("reason", list(ADVICE), ids=lambda reason: reason.name.lower())
def test_the_advice_applied_as_written_makes_the_next_refresh_incremental(spark, mt, reason) -> None:
    case = CASES[reason]
    name = f"{CATALOG}.{mt.workspace.default_namespace}.{TABLE}"
    case.sources(spark)
    run(mt, f"CREATE MATERIALIZED TABLE {TABLE} FRESHNESS = {FRESHNESS} AS {case.query}")
    for change in case.recomputing:
        change(spark)
        outcome = refresh(mt)
        assert outcome.kind is RefreshKind.FULL and fallback_reason(outcome.strategy) is reason, outcome.strategy

    advice = shown_advice(mt, name, reason)
    before = mt.status(name).freshness
    for statement in case.apply(advice):
        run(mt, statement)
    # The refresh that takes up a new definition recomputes (DEFINITION_CHANGED) as after any ALTER … AS; after
    # DROP + CREATE or a new FRESHNESS nothing changed since, so it commits nothing.
    taken_up = refresh(mt)
    assert fallback_reason(taken_up.strategy) is not reason, taken_up.strategy
    scale = mt.status(name).freshness / before
    assert scale < 1 if reason is FallbackReason.CHEAPER_TO_RECOMPUTE else scale == 1

    case.next_change(spark, scale)
    outcome = refresh(mt)
    assert outcome.kind is RefreshKind.INCREMENTAL, outcome.strategy
    assert rows(spark.table(name)) == rows(spark.sql(case.advised_query))
    history = mt.history(name)
    assert recommend(history.records, history.freshness) is None

"""Recommendations from a table's refreshes, without Spark: which recorded strategy lines carry a reason the user
can change, and the saving estimated from measured durations only (the advice itself is proven on real tables in
tests/integration/test_recommendations.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mt_magic.runtime.inspect.recommendations import (
    ADVICE,
    change_fraction,
    fallback_reason,
    recommend,
    whole_freshness,
)
from mt_magic.runtime.refresh.context import MAX_CHANGE_OPTION
from mt_magic.runtime.refresh.incremental.planner import KEYS_COST
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason
from mt_magic.runtime.status import RefreshRecord
from mt_magic.sql.ddl.statements import Freshness, FreshnessUnit
from mt_magic.vocabulary import RefreshKind, RefreshTrigger
from mt_magic.widgets.badges import recommendation_text

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def line(*reasons: FallbackReason, detail: str = "") -> str:
    """A recomputing refresh's strategy line, as refresh.run writes it."""
    return f"full: fallback — {Fallback(reasons, detail).describe()}"


def run(seconds: float, strategy: str, kind: RefreshKind = RefreshKind.FULL, error: str | None = None) -> RefreshRecord:
    return RefreshRecord(
        kind, RefreshTrigger.SCHEDULED, T0, timedelta(seconds=seconds), 1, 1, error=error, strategy=strategy
    )


def test_the_first_reason_of_every_recorded_fallback_line_is_read_back() -> None:
    for reason in FallbackReason:
        assert fallback_reason(line(reason, FallbackReason.LIMIT, detail="c")) is reason
    assert fallback_reason("incremental: merge the aggregated delta") is None
    assert fallback_reason("full") is None


def test_advice_with_an_estimate_from_the_tables_own_measured_runs() -> None:
    records = [
        run(40, line(FallbackReason.NOT_IN_SUBQUERY)),
        run(1, "", RefreshKind.NOOP),
        run(60, line(FallbackReason.NOT_IN_SUBQUERY)),
        run(99, "", error="boom"),
        run(4, "incremental: append the delta", RefreshKind.INCREMENTAL),
        run(50, line(FallbackReason.NOT_IN_SUBQUERY)),
        run(6, "incremental: append the delta", RefreshKind.INCREMENTAL),
    ]
    advice = recommend(records)
    assert advice is not None and advice.reason is FallbackReason.NOT_IN_SUBQUERY
    assert (advice.recomputes, advice.recompute, advice.incremental, advice.incremental_runs) == (
        3,
        timedelta(seconds=50),
        timedelta(seconds=4),
        2,
    )
    assert advice.saving == timedelta(seconds=46)
    assert recommendation_text(advice) == (
        f"recomputes (not in subquery): {ADVICE[FallbackReason.NOT_IN_SUBQUERY]} · estimate: saves about 46s per "
        "refresh (3 recent refreshes recomputed, median 50s; its 2 incremental refreshes, median 4s)"
    )


def test_no_advice_where_the_newest_run_is_incremental_or_the_reason_is_not_the_users() -> None:
    incremental = run(2, "incremental: append the delta", RefreshKind.INCREMENTAL)
    assert recommend([incremental, run(40, line(FallbackReason.ORDER_BY))]) is None
    assert recommend([run(40, line(FallbackReason.DEFINITION_CHANGED))]) is None
    assert recommend([run(40, "full")]) is None
    assert recommend([]) is None
    only = recommend([run(40, line(FallbackReason.ORDER_BY))])
    assert only is not None and only.saving is None
    assert "no incremental refresh of this table measured yet, so no estimate" in recommendation_text(only)


def past_limit(percent: int, limit: int = 30) -> str:
    """The line of a refresh that recomputed because the change was past the limit (planner.cheaper_to_recompute)."""
    return line(FallbackReason.CHEAPER_TO_RECOMPUTE, detail=f"changed {percent}% of mt.t.big, past {limit}%")


def test_a_recurring_large_change_advises_a_freshness_computed_from_the_measured_change() -> None:
    records = [
        run(30, past_limit(43)),
        run(34, past_limit(50)),
        run(2, "incremental: merge the aggregated delta", RefreshKind.INCREMENTAL),
        run(32, past_limit(45)),
        run(28, "full"),
    ]  # three of the five recent refreshes recomputed for it
    assert change_fraction(records[0].strategy) == (0.43, 0.30)
    advice = recommend(records, timedelta(minutes=10))
    assert advice is not None and advice.reason is FallbackReason.CHEAPER_TO_RECOMPUTE
    # 10 minutes × 0.8 headroom × 30 % / 50 % (the largest change measured) = 4.8 minutes, down to whole minutes
    assert "SET FRESHNESS = INTERVAL '4' MINUTE (now 10 minutes" in advice.change
    assert "changed up to 50% of the sources; at the same rate about 20% each" in advice.change
    assert f"raise '{MAX_CHANGE_OPTION}' above 0.50" in advice.change
    assert (advice.recomputes, advice.recompute, advice.refreshes_instead) == (3, timedelta(seconds=32), 3)
    assert advice.saving == timedelta(seconds=26)  # one 32 s recompute against three 2 s incremental refreshes
    assert recommendation_text(advice).startswith(f"recomputes (cheaper to recompute): {advice.change} · ")
    assert recommendation_text(advice).endswith(
        " · estimate: saves about 26s per recompute replaced: 3 incremental refreshes (median 2s, 1 measured) in "
        "place of each recompute (3 recent refreshes recomputed, median 32s)"
    )


def test_more_frequent_refreshes_that_cost_more_together_say_so() -> None:
    records = [run(5, past_limit(90)), run(4, past_limit(90)), run(3, "incremental: x", RefreshKind.INCREMENTAL)]
    advice = recommend(records, timedelta(hours=1))
    assert advice is not None and advice.refreshes_instead == 4  # 60 min × 0.8 × 30/90 = 16 minutes
    assert "SET FRESHNESS = INTERVAL '16' MINUTE" in advice.change
    assert advice.saving == timedelta(seconds=-8)  # the median recompute (4 s, the lower middle) against 4 × 3 s
    assert "no time saved (about 8s more per recompute replaced), a fresher table" in recommendation_text(advice)


def test_a_large_change_that_does_not_recur_or_cannot_be_scaled_gets_no_advice() -> None:
    incremental = run(2, "incremental: merge the aggregated delta", RefreshKind.INCREMENTAL)
    once = [run(30, past_limit(43)), incremental, incremental, run(28, "full")]
    assert recommend(once, timedelta(minutes=10)) is None  # one recompute is not a pattern
    half = [run(30, past_limit(43)), run(30, past_limit(43)), incremental, incremental]
    assert recommend(half, timedelta(minutes=10)) is None  # not most of the recent refreshes
    assert recommend(half[:2], None) is None  # no freshness to scale
    keyed = line(FallbackReason.CHEAPER_TO_RECOMPUTE, detail=KEYS_COST)
    assert change_fraction(keyed) is None
    assert recommend([run(30, keyed), run(30, keyed)], timedelta(minutes=10)) is None  # size is not the cost
    older = [run(30, past_limit(40)) for _ in range(3)]
    assert recommend([incremental, *older], timedelta(minutes=10)) is None  # the newest refresh is incremental


def test_the_advised_freshness_is_a_whole_unit_rounded_down() -> None:
    assert whole_freshness(timedelta(minutes=4.8)) == Freshness(4, FreshnessUnit.MINUTE)
    assert whole_freshness(timedelta(seconds=150)) == Freshness(150, FreshnessUnit.SECOND)
    assert whole_freshness(timedelta(hours=7, minutes=50)) == Freshness(7, FreshnessUnit.HOUR)
    assert whole_freshness(timedelta(milliseconds=10)) == Freshness(1, FreshnessUnit.SECOND)

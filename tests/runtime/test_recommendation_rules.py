"""Recommendations from a table's refreshes, without Spark: which recorded strategy lines carry a reason the user
can change, and the saving estimated from measured durations only (the advice itself is proven on real tables in
tests/integration/test_recommendations.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mt_magic.runtime.inspect.recommendations import ADVICE, fallback_reason, recommend
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason
from mt_magic.runtime.status import RefreshRecord
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

"""The card names a held refresh "held" (issue 49): its row carries the expectation, the rows, a sample and the Fix."""

from __future__ import annotations

from datetime import timedelta

from mt_magic.runtime.refresh.audit import Audit, Counted, held_error
from mt_magic.runtime.status import TableStatus
from mt_magic.vocabulary import JobState, OnViolation, RefreshMode
from mt_magic.widgets.render import detail_rows


def test_a_held_refresh_shows_as_held_with_the_expectation_and_the_fix() -> None:
    counted = Audit((Counted("positive", OnViolation.FAIL_UPDATE, 120, 3, ("id=7, amount=-5",)),))
    error = held_error("mt.default.orders", counted, 11, 12)
    status = TableStatus("mt.default.orders", RefreshMode.CONTINUOUS, timedelta(minutes=5), JobState.RETRYING)
    rows = dict(detail_rows(TableStatus(**{**status.__dict__, "last_error": str(error)})))
    assert "error" not in rows
    assert rows["held"] == (
        "refresh of mt.default.orders held: expectation positive failed on 3 of 120 rows (e.g. id=7, amount=-5). main "
        "stays at snapshot 11; the refresh is staged as snapshot 12 on branch mt_staging. Fix: fix the source rows "
        "(the next refresh tries again), or publish the held snapshot on purpose with ALTER MATERIALIZED TABLE "
        "mt.default.orders REFRESH WITH ('publish' = 'held')."
    )
    failed = dict(detail_rows(TableStatus(**{**status.__dict__, "last_error": "refresh failed: disk full"})))
    assert "held" not in failed and failed["error"] == "refresh failed: disk full"

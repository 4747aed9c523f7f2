"""The card names a held refresh "held" (issue 49) from the status's held state, not from the error's text: its row
carries the expectation, the rows, a sample and the Fix. The sample is the running process's alone: the counts'
snapshot summary and a lineage event never carry a row, and another process shows the SQL that reads them."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from mt_magic.runtime.refresh.audit import Audit, Counted, held_error
from mt_magic.runtime.status import TableStatus
from mt_magic.vocabulary import JobState, OnViolation, RefreshMode
from mt_magic.widgets.render import dashboard_text, detail_rows, title_html


def test_a_held_refresh_shows_as_held_with_the_expectation_and_the_fix() -> None:
    counted = Audit((Counted("positive", OnViolation.FAIL_UPDATE, 120, 3, ("id=7, amount=-5",)),))
    error = held_error("mt.default.orders", counted, 11, 12)
    assert str(error).startswith(
        "refresh of mt.default.orders held: expectation positive failed on 3 of 120 rows (e.g. id=7, amount=-5). main "
        "stays at snapshot 11; the refresh is staged as snapshot 12 on branch mt_staging"
    )
    status = TableStatus("mt.default.orders", RefreshMode.CONTINUOUS, timedelta(minutes=5), JobState.RETRYING)
    held = replace(status, last_error=f"ExpectationsHeldError: {error}", held=error.held)
    rows = dict(detail_rows(held))
    assert "error" not in rows
    assert rows["held"] == (
        "expectation positive failed on 3 of 120 rows (e.g. id=7, amount=-5). main stays at snapshot 11; the refresh "
        "is staged as snapshot 12. Fix: fix the source rows (the next refresh tries again), or publish the held "
        "snapshot on purpose with ALTER MATERIALIZED TABLE mt.default.orders REFRESH WITH ('publish' = 'held')."
    )
    assert 'class="mt-badge mt-held"' in title_html(held) and "HELD: positive" in title_html(held)
    assert "held: expectation positive failed on 3 of 120 rows" in dashboard_text([held])
    # The state, not the text: an error that merely reads like a held one is an error.
    lookalike = dict(detail_rows(replace(status, last_error=str(error))))
    assert "held" not in lookalike and lookalike["error"] == str(error)
    assert "mt-held" not in title_html(replace(status, last_error=str(error)))


def test_the_history_chart_shows_each_expectations_passed_dropped_and_failed_rows() -> None:
    from datetime import datetime, timezone

    from mt_magic.runtime.refresh.audit import Audit
    from mt_magic.runtime.refresh.recorded import expectation_counts
    from mt_magic.runtime.status import RefreshRecord
    from mt_magic.vocabulary import RefreshKind, RefreshTrigger
    from mt_magic.widgets.history_chart import history_svg

    counted = Audit(
        (Counted("keyed", OnViolation.DROP_ROW, 10, 2), Counted("small", OnViolation.KEEP, 8, 1)),
    )
    recorded = expectation_counts(counted.summary())  # as the commit's snapshot summary carries them
    at = datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)
    record = RefreshRecord(RefreshKind.FULL, RefreshTrigger.SCHEDULED, at, timedelta(seconds=2), 8, 1)
    svg = history_svg([replace(record, expectations=recorded)])
    assert "8 rows; keyed: 8 passed, 2 dropped, 0 failed; small: 7 passed, 0 dropped, 1 failed" in svg


def test_the_sample_stays_in_memory_out_of_the_summary_and_the_lineage_event(monkeypatch) -> None:
    import pickle

    from mt_magic.lineage import observer
    from mt_magic.runtime.refresh.audit import EXPECTATIONS_KEY, failing_rows_sql
    from mt_magic.vocabulary import Expectation

    counted = Audit((Counted("positive", OnViolation.FAIL_UPDATE, 120, 3, ("id=7, amount=-987654",)),))
    summary = counted.summary()
    assert "-987654" not in summary[EXPECTATIONS_KEY]  # catalog metadata: names and numbers only
    old = summary[EXPECTATIONS_KEY].replace('"failed":3}', '"failed":3,"sample":["id=7, amount=-987654"]}')
    assert old != summary[EXPECTATIONS_KEY]  # what older versions wrote: read, the sample ignored
    assert Audit.from_summary({EXPECTATIONS_KEY: old}) == Audit((Counted("positive", OnViolation.FAIL_UPDATE, 120, 3),))

    error = held_error("mt.default.orders", counted, 11, 12)
    assert "(e.g. id=7, amount=-987654)" in str(error) and "-987654" not in error.without_rows()
    assert str(pickle.loads(pickle.dumps(error))) == str(error)
    sent: list[str | None] = []

    class Now:  # runs each event's send at once; the client it sends through
        def submit(self, send) -> bool:  # type: ignore[no-untyped-def]
            send()
            return True

        def emit(self, event: object) -> None:
            pass

        def close(self, timeout: float = 0) -> bool:
            return True

    monkeypatch.setattr(observer, "build_event", lambda *args: sent.append(args[-1]))  # the event's error text
    lineage = observer.RefreshLineage(Now(), None, None, Now())  # type: ignore[arg-type]
    lineage.failed(lineage.started("mt.default.orders", "manual", observer._utc_now()), error)
    assert sent[-1] is not None and sent[-1].startswith("ExpectationsHeldError: refresh of mt.default.orders held")
    assert "-987654" not in sent[-1]

    positive = Expectation("positive", "amount >= 0", OnViolation.FAIL_UPDATE)
    sql = failing_rows_sql("mt.default.orders", ["id", "amount", "__mt_key_0", "__MT_KEY_1"], positive, 12)
    assert sql == (
        "SELECT `id`, `amount` FROM `mt`.`default`.`orders` VERSION AS OF 12 WHERE NOT coalesce((amount >= 0), false) "
        "LIMIT 3"
    )
    elsewhere = held_error("mt.default.orders", Audit((Counted("positive", OnViolation.FAIL_UPDATE, 120, 3),)), 11, 12)
    seen = replace(elsewhere.held, expectations=(replace(elsewhere.held.expectations[0], to_see=sql),))
    assert seen.text.startswith(f"expectation positive failed on 3 of 120 rows (see them: {sql}). main stays at")

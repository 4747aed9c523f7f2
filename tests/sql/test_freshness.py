"""resolve_schedule: Flink's defaults, mode inference, FULL-mode divisors and cron strings (checked by croniter
itself: each expression fires exactly every freshness interval)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from croniter import croniter

from mt_magic.sql import (
    FULL_MODE_DIVISORS,
    Freshness,
    FreshnessError,
    FreshnessRules,
    FreshnessUnit,
    RefreshMode,
    parse_cell,
    resolve_schedule,
)

S, M, H, D = FreshnessUnit.SECOND, FreshnessUnit.MINUTE, FreshnessUnit.HOUR, FreshnessUnit.DAY
FULL, CONTINUOUS = RefreshMode.FULL, RefreshMode.CONTINUOUS


def test_everything_omitted_gives_three_minutes_continuous() -> None:
    schedule = resolve_schedule(None, None)
    assert schedule.mode is CONTINUOUS and schedule.freshness == Freshness(3, M)
    assert schedule.mode_inferred and schedule.freshness_defaulted and schedule.cron is None
    assert schedule.reason == (
        "freshness omitted → default 3 minutes for CONTINUOUS; freshness 3 minutes < 30 minutes threshold → CONTINUOUS"
    )
    assert schedule.interval == timedelta(minutes=3)


def test_full_mode_without_freshness_defaults_to_one_hour() -> None:
    schedule = resolve_schedule(None, FULL)
    assert (schedule.mode, schedule.freshness, schedule.cron) == (FULL, Freshness(1, H), "0 */1 * * *")
    assert not schedule.mode_inferred and schedule.freshness_defaulted
    assert schedule.reason == "freshness omitted → default 1 hour for FULL; REFRESH_MODE = FULL declared"


def test_continuous_mode_without_freshness_defaults_to_three_minutes() -> None:
    schedule = resolve_schedule(None, CONTINUOUS)
    assert (schedule.mode, schedule.freshness, schedule.cron) == (CONTINUOUS, Freshness(3, M), None)


@pytest.mark.parametrize(
    ("freshness", "mode", "reason"),
    [
        (Freshness(5, M), CONTINUOUS, "freshness 5 minutes < 30 minutes threshold → CONTINUOUS"),
        (Freshness(29, M), CONTINUOUS, "freshness 29 minutes < 30 minutes threshold → CONTINUOUS"),
        (Freshness(1799, S), CONTINUOUS, "freshness 1799 seconds < 30 minutes threshold → CONTINUOUS"),
        (Freshness(30, M), FULL, "freshness 30 minutes ≥ 30 minutes threshold → FULL"),
        (Freshness(1, H), FULL, "freshness 1 hour ≥ 30 minutes threshold → FULL"),
        (Freshness(1, D), FULL, "freshness 1 day ≥ 30 minutes threshold → FULL"),
    ],
)
def test_mode_is_inferred_from_the_threshold(freshness: Freshness, mode: RefreshMode, reason: str) -> None:
    schedule = resolve_schedule(freshness, None)
    assert (schedule.mode, schedule.mode_inferred, schedule.reason) == (mode, True, reason)
    assert (schedule.cron is None) is (mode is CONTINUOUS)


def test_declared_mode_wins_over_inference() -> None:
    continuous = resolve_schedule(Freshness(1, H), CONTINUOUS)
    assert (continuous.mode, continuous.cron, continuous.mode_inferred) == (CONTINUOUS, None, False)
    assert continuous.reason == "REFRESH_MODE = CONTINUOUS declared"
    full = resolve_schedule(Freshness(10, M), FULL)
    assert (full.mode, full.cron) == (FULL, "*/10 * * * *")


def test_continuous_mode_accepts_any_positive_freshness() -> None:
    for freshness in (Freshness(7, M), Freshness(5, H), Freshness(2, D), Freshness(61, S)):
        assert resolve_schedule(freshness, CONTINUOUS).interval == freshness.to_timedelta()


@pytest.mark.parametrize(
    ("freshness", "cron"),
    [
        (Freshness(5, M), "*/5 * * * *"),
        (Freshness(1, H), "0 */1 * * *"),
        (Freshness(6, H), "0 */6 * * *"),
        (Freshness(1, D), "0 0 * * *"),
        (Freshness(10, S), "* * * * * */10"),
        (Freshness(30, M), "*/30 * * * *"),
    ],
)
def test_cron_strings(freshness: Freshness, cron: str) -> None:
    assert resolve_schedule(freshness, FULL).cron == cron


ALL_FULL = [Freshness(n, unit) for unit, values in FULL_MODE_DIVISORS.items() for n in values]


@pytest.mark.parametrize("freshness", ALL_FULL, ids=str)
def test_every_allowed_full_freshness_fires_exactly_every_interval(freshness: Freshness) -> None:
    cron = resolve_schedule(freshness, FULL).cron
    assert cron is not None and croniter.is_valid(cron)
    start = datetime(2024, 1, 1, 0, 0, 0, tzinfo=timezone.utc)
    it = croniter(cron, start - timedelta(seconds=1))
    fires = [it.get_next(datetime) for _ in range(5)]
    assert fires[0] == start
    assert all(b - a == freshness.to_timedelta() for a, b in zip(fires, fires[1:], strict=False))


def test_full_mode_divisors_are_flinks() -> None:
    assert FULL_MODE_DIVISORS[S] == FULL_MODE_DIVISORS[M] == (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)
    assert FULL_MODE_DIVISORS[H] == (1, 2, 3, 4, 6, 8, 12)
    assert FULL_MODE_DIVISORS[D] == (1,)


NOT_DIVISORS = (
    [Freshness(n, S) for n in (7, 45, 60, 90)]
    + [Freshness(n, M) for n in (7, 9, 40, 60)]
    + [Freshness(n, H) for n in (5, 7, 9, 24)]
    + [Freshness(n, D) for n in (2, 7)]
)


@pytest.mark.parametrize("freshness", NOT_DIVISORS, ids=str)
def test_non_divisors_are_rejected_in_full_mode(freshness: Freshness) -> None:
    with pytest.raises(FreshnessError, match=rf"FRESHNESS = {freshness.sql()} is not allowed in FULL mode"):
        resolve_schedule(freshness, FULL)


def test_non_divisor_message_for_hours_is_flinks_example() -> None:
    with pytest.raises(FreshnessError) as info:
        resolve_schedule(Freshness(5, H), FULL)
    assert info.value.problem == (
        "FRESHNESS = INTERVAL '5' HOUR is not allowed in FULL mode: hours must divide 24 (1, 2, 3, 4, 6, 8, 12)"
    )


def test_inferred_full_mode_says_why_it_is_full() -> None:
    with pytest.raises(FreshnessError, match=r"FULL mode was inferred: freshness 5 hours ≥ 30 minutes threshold"):
        resolve_schedule(Freshness(5, H), None)


def test_rules_are_configurable() -> None:
    rules = FreshnessRules(
        default_continuous=Freshness(10, S), default_full=Freshness(1, D), threshold=timedelta(hours=2)
    )
    assert resolve_schedule(None, None, rules).freshness == Freshness(10, S)
    assert resolve_schedule(None, FULL, rules).cron == "0 0 * * *"
    assert resolve_schedule(Freshness(1, H), None, rules).mode is CONTINUOUS
    assert resolve_schedule(Freshness(2, H), None, rules).mode is FULL
    assert "2 hours threshold" in resolve_schedule(Freshness(1, H), None, rules).reason


def test_default_continuous_above_threshold_infers_full() -> None:
    rules = FreshnessRules(default_continuous=Freshness(1, H))
    schedule = resolve_schedule(None, None, rules)
    assert (schedule.mode, schedule.cron) == (FULL, "0 */1 * * *")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": timedelta(0)}, r"threshold must be positive"),
        ({"default_full": Freshness(5, H)}, r"default_full: FRESHNESS = INTERVAL '5' HOUR is not allowed in FULL mode"),
    ],
)
def test_bad_rules_fail_at_once(kwargs: dict, message: str) -> None:
    with pytest.raises(FreshnessError, match=message):
        FreshnessRules(**kwargs)


def test_rules_and_schedules_are_frozen() -> None:
    schedule = resolve_schedule(None, None)
    with pytest.raises(AttributeError):
        schedule.cron = "* * * * *"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        FreshnessRules().threshold = timedelta(1)  # type: ignore[misc]


@pytest.mark.parametrize("interval", ["INTERVAL '99999999999999999999' SECOND", "INTERVAL '366' DAY"])
def test_a_freshness_longer_than_a_year_is_refused_not_overflowed(interval: str) -> None:
    with pytest.raises(FreshnessError, match=r"is longer than a year.*at most INTERVAL '365' DAY"):
        parse_cell(f"CREATE MATERIALIZED TABLE t FRESHNESS = {interval} REFRESH_MODE = CONTINUOUS AS SELECT 1 AS x")

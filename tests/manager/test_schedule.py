"""Pure scheduling rules: cron and interval times, coalescing, backoff, and the upstream graph."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from manager_helpers import MINUTE, continuous, full

from mt_magic.runtime.graph import ancestors, blocking_ancestors, cascaded_partition, dependents, descendants
from mt_magic.runtime.manager.schedule import (
    CronSchedule,
    IntervalSchedule,
    RetryPolicy,
    schedule_for,
)


def at(text: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-01T{text}+00:00")


def test_five_field_cron_next_is_strictly_after() -> None:
    cron = CronSchedule("*/5 * * * *")
    assert cron.next_after(at("10:00:00")) == at("10:05:00")
    assert cron.next_after(at("10:03:59")) == at("10:05:00")


def test_six_field_cron_has_seconds_last() -> None:
    cron = CronSchedule("* * * * * */10")
    assert cron.next_after(at("10:00:07")) == at("10:00:10")
    assert cron.next_after(at("10:00:10")) == at("10:00:20")


@pytest.mark.parametrize("expression", ["* * * *", "0 0 * * * 0 2025", "61 * * * *", "every minute"])
def test_bad_cron_is_rejected_with_the_expression(expression: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid cron expression '{expression}'")):
        CronSchedule(expression)


def test_cron_coalesces_to_the_latest_missed_fire_inclusive() -> None:
    cron = CronSchedule("*/5 * * * *")
    assert cron.latest_fire(at("10:05:00"), at("10:27:13")) == at("10:25:00")
    assert cron.latest_fire(at("10:05:00"), at("10:25:00")) == at("10:25:00")


def test_interval_counts_from_the_start_and_coalesces_on_its_grid() -> None:
    every = IntervalSchedule(timedelta(seconds=30))
    assert every.next_after(at("10:00:05")) == at("10:00:35")
    assert every.latest_fire(at("10:00:35"), at("10:02:50")) == at("10:02:35")
    assert every.latest_fire(at("10:00:35"), at("10:00:20")) == at("10:00:20")
    assert every.anchor(at("10:01:00"), at("10:00:35")) == at("10:01:00")


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive, got 0:00:00"):
        IntervalSchedule(timedelta(0))


def test_schedule_for_follows_the_mode() -> None:
    assert schedule_for(full("c.db.f", cron="0 * * * *")) == CronSchedule("0 * * * *")
    assert schedule_for(continuous("c.db.c", 3 * MINUTE)) == IntervalSchedule(3 * MINUTE)
    assert schedule_for(full("c.db.nocron", cron=None, freshness=MINUTE)) == IntervalSchedule(MINUTE)


def test_backoff_grows_exponentially_up_to_the_cap_and_gives_up_after_suspend_after() -> None:
    policy = RetryPolicy(
        base=timedelta(seconds=10), factor=2, max_delay=timedelta(seconds=60), jitter=0, suspend_after=5
    )
    assert [policy.backoff(n).total_seconds() for n in range(1, 7)] == [10, 20, 40, 60, 60, 60]
    assert policy.backoff(10_000) == timedelta(seconds=60)
    assert not policy.gives_up(4) and policy.gives_up(5)


@given(failures=st.integers(min_value=1, max_value=40), seed=st.integers(min_value=0, max_value=2**32))
def test_jitter_stays_within_its_fraction(failures: int, seed: int) -> None:
    policy = RetryPolicy(jitter=0.25)
    raw = policy.backoff(failures)
    delay = policy.delay(failures, random.Random(seed))
    assert raw * 0.75 <= delay <= raw * 1.25


def test_jitter_is_deterministic_for_a_seeded_rng_and_actually_varies() -> None:
    policy = RetryPolicy(jitter=0.5)
    first = [policy.delay(2, random.Random(7)) for _ in range(3)]
    assert len(set(first)) == 1
    rng = random.Random(7)
    assert len({policy.delay(2, rng) for _ in range(20)}) > 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("factor", 0.5, "factor must be >= 1, got 0.5"),
        ("jitter", 1.0, r"jitter must be in \[0, 1\), got 1.0"),
        ("suspend_after", 0, "suspend_after must be >= 1, got 0"),
        ("base", timedelta(0), "base=0:00:00"),
    ],
)
def test_retry_policy_rejects_bad_values(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**{field: value})  # type: ignore[arg-type]


def test_ancestors_are_transitive_and_tolerate_cycles() -> None:
    upstream = {"c": ("b",), "b": ("a", "x"), "a": (), "loop1": ("loop2",), "loop2": ("loop1",)}
    assert ancestors("c", upstream) == {"a", "b", "x"}
    assert ancestors("a", upstream) == set()
    assert ancestors("loop1", upstream) == {"loop2"}
    assert dependents("a", upstream) == ["b"]
    assert dependents("b", upstream) == ["c"]
    assert blocking_ancestors("c", upstream) == {"a", "b", "x"}
    assert blocking_ancestors("loop1", upstream) == set()  # a cycle must not deadlock both tables


def test_descendants_are_upstream_first_and_tolerate_cycles() -> None:
    upstream = {"b": ["a"], "c": ["b", "a"], "d": ["a"], "loop1": ["loop2"], "loop2": ["loop1"]}
    assert descendants("a", upstream) == ["b", "d", "c"]
    assert descendants("c", upstream) == []
    assert descendants("loop1", upstream) == ["loop2"]


def test_a_cascaded_partition_reaches_only_tables_partitioned_by_its_columns() -> None:
    part = (("ds", "20250101"),)
    assert cascaded_partition(part, ("ds",)) == part
    assert cascaded_partition(part, ("ds", "hh")) == part
    assert cascaded_partition(part, ("day",)) == ()
    assert cascaded_partition(part, ()) == ()
    assert cascaded_partition((), ("ds",)) == ()

"""Every WITH option mt_magic gives a meaning to is declared once (``mt_magic.options``): the grammar refuses a
bad value of each with its Fix, completion offers exactly the declared keys and values, and the runtime reads it
from there."""

from __future__ import annotations

import pytest

from mt_magic.options import INCREMENTAL, MAX_CHANGE, OPTIONS, SCHEDULER, IncrementalPolicy, option, registered
from mt_magic.vocabulary import WorkflowSchedulerKind

BAD_VALUES = {
    "incremental": "sometimes",
    "incremental.engine": "duck",
    "incremental.max-change-fraction": "1.5",
    "scheduler": "cron",
    "convert-existing-table": "yes",
    "history.expire.max-snapshot-age-ms": "a day",
    "history.expire.min-snapshots-to-keep": "0",
}
"""A bad value of each option that has a check; the others (a baseline's name, a pinned Spark setting) take any
text here and are checked where their meaning is known (the runtime's baselines, Spark)."""


def test_each_option_is_declared_once_with_help() -> None:
    keys = [opt.key.lower() for opt in registered()]
    assert len(keys) == len(set(keys)) == len(OPTIONS)
    assert all(opt.help and "\n" not in opt.help for opt in registered())
    assert option("Incremental") is INCREMENTAL and option("no-such-option") is None


@pytest.mark.parametrize("key", sorted(BAD_VALUES))
def test_a_bad_value_of_each_option_says_what_and_gives_its_fix(key: str) -> None:
    opt = option(key)
    assert opt is not None
    problem = opt.check(BAD_VALUES[key])
    assert problem is not None
    assert str(problem).startswith(f"WITH ('{key}' = '{BAD_VALUES[key]}') ")
    assert "Fix: " in str(problem) and problem.fix
    for value in opt.values:
        assert opt.check(value) is None and opt.check(f" {value.upper()} ") is None


def test_every_option_without_a_bad_value_here_takes_any_text() -> None:
    unchecked = [opt for opt in registered() if opt.key.lower() not in BAD_VALUES]
    assert all(opt.check("anything at all") is None for opt in unchecked)


def test_reads_are_typed_with_the_declared_defaults() -> None:
    assert INCREMENTAL.read({}) is IncrementalPolicy.AUTO
    assert INCREMENTAL.read({"INCREMENTAL": " Strict "}) is IncrementalPolicy.STRICT
    assert SCHEDULER.read({}) is None and SCHEDULER.read({"scheduler": "AIRFLOW"}) is WorkflowSchedulerKind.AIRFLOW
    assert MAX_CHANGE.read({"incremental.max-change-fraction": "0.5"}) == 0.5
    with pytest.raises(ValueError, match=r"must be a fraction in \(0, 1\].*Fix: "):
        MAX_CHANGE.read({"incremental.max-change-fraction": "lots"})

"""Every WITH option mt_magic gives a meaning to is declared once (``mt_magic.options``): the grammar refuses a
bad value of each with its Fix, completion offers exactly the declared keys and values, and the runtime reads it
from there."""

from __future__ import annotations

import pytest

from mt_magic.completion import NameSnapshot, complete
from mt_magic.options import INCREMENTAL, MAX_CHANGE, OPTIONS, SCHEDULER, IncrementalPolicy, option, registered
from mt_magic.sql.ddl.parser import parse_cell
from mt_magic.sql.ddl.statements import CreateMaterializedTable
from mt_magic.sql.errors import UnsupportedOptionError
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


@pytest.mark.parametrize("key", sorted(BAD_VALUES))
def test_the_grammar_refuses_a_bad_value_of_each_option_at_its_key_with_the_fix(key: str) -> None:
    opt = option(key)
    assert opt is not None
    statement = f"CREATE MATERIALIZED TABLE t WITH ('a' = 'b', '{key}' = '{BAD_VALUES[key]}') AS SELECT 1 AS a"
    problem = opt.check(BAD_VALUES[key])
    assert problem is not None
    with pytest.raises(UnsupportedOptionError) as refused:
        parse_cell(statement)
    assert refused.value.position is not None and refused.value.position.column == statement.index(f"'{key}'") + 1
    assert str(refused.value).endswith(f": {problem}")


def test_every_option_the_grammar_gives_a_meaning_to_is_declared() -> None:
    """What the grammar and the runtime name: the grammar's own constants, the runtime's readers."""
    from mt_magic.runtime.refresh import context, retention
    from mt_magic.runtime.spark.baselines import BASELINE_OPTION
    from mt_magic.sql.ddl.options import CONVERT_OPTION

    named = {
        CONVERT_OPTION,
        BASELINE_OPTION,
        context.INCREMENTAL_OPTION,
        context.ENGINE_OPTION,
        context.MAX_CHANGE_OPTION,
        retention.MAX_AGE_MS,
        retention.MIN_TO_KEEP,
        SCHEDULER.key,
    }
    assert all(option(key) is not None for key in named)
    for key in OPTIONS:
        (statement,) = parse_cell(f"CREATE MATERIALIZED TABLE t WITH ('{key}' = '{_good(key)}') AS SELECT 1 AS a")
        assert isinstance(statement, CreateMaterializedTable) and statement.options == ((key, _good(key)),)


def test_completion_offers_exactly_the_registry_keys_and_values() -> None:
    keys = [opt.key for opt in registered()]
    assert at_end("CREATE MATERIALIZED TABLE t WITH (") == [f"'{key}'" for key in keys]
    for opt in registered():
        offered = at_end(f"CREATE MATERIALIZED TABLE t WITH ('{opt.key}' = ")
        assert offered == [f"'{value}'" for value in opt.values], opt.key


def _good(key: str) -> str:
    opt = OPTIONS[key]
    return opt.values[0] if opt.values else {"incremental.max-change-fraction": "0.5"}.get(key, "7")


def at_end(text: str) -> list[str]:
    return complete(text, len(text), NameSnapshot())


def test_the_statement_reference_documents_every_option_of_mt_magic_s_own() -> None:
    from pathlib import Path

    from mt_magic.options.settings import ANSWER_SETTINGS

    page = (Path(__file__).parents[2] / "docs" / "statements.md").read_text(encoding="utf-8")
    own = [opt.key for opt in registered() if opt.key not in ANSWER_SETTINGS]
    assert [key for key in own if key not in page] == []


@pytest.mark.parametrize("key", [opt.key for opt in registered() if not opt.key.startswith("spark.")])
def test_each_option_key_one_letter_off_is_refused_with_the_key_it_meant(key: str) -> None:
    for typo in (key[:-1], key[:3] + key[4:], key + "s"):
        with pytest.raises(UnsupportedOptionError) as refused:
            parse_cell(f"CREATE MATERIALIZED TABLE t WITH ('{typo}' = 'x') AS SELECT * FROM s")
        assert f"WITH ('{typo}' = 'x') is not an option mt_magic declares" in str(refused.value)
        assert f"'{key}'" in refused.value.did_you_mean, (typo, refused.value.did_you_mean)

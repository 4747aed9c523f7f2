"""Which SQL settings belong to a definition: capture, pins in WITH, and RESUME WITH options that would change them."""

from __future__ import annotations

import pytest

from mt_magic.errors import DefinitionError
from mt_magic.runtime.refresh.incremental.attempt import ADAPTIVE, SHUFFLE_PARTITIONS
from mt_magic.runtime.spark.jobs import REFRESH_SESSION_CONF
from mt_magic.runtime.spark.semantics import (
    ANSWER_SETTINGS,
    captured_settings,
    conflicting_options,
    refuse_conflicts,
    split_pinned,
)

TZ = "spark.sql.session.timeZone"


def test_the_products_own_run_settings_are_never_answer_settings() -> None:
    """The table's settings win in a refresh's session: none may silence what the product sets per run."""
    assert not set(ANSWER_SETTINGS) & {*REFRESH_SESSION_CONF, SHUFFLE_PARTITIONS, ADAPTIVE}
    assert all(key.startswith("spark.sql.") and why for key, why in ANSWER_SETTINGS.items())


def test_resume_options_conflict_only_with_a_recorded_key_of_another_value() -> None:
    recorded = {TZ: "America/Los_Angeles", "spark.sql.ansi.enabled": "true"}
    options = {TZ: "UTC", "spark.sql.ansi.enabled": " TRUE ", "spark.sql.shuffle.partitions": "8"}
    assert conflicting_options(recorded, options) == {TZ: "America/Los_Angeles"}
    assert conflicting_options(None, options) == {}  # a table from before settings were recorded
    with pytest.raises(DefinitionError, match=r"RESUME WITH: 'spark\.sql\.session\.timeZone' = 'UTC' \(the "):
        refuse_conflicts("ALTER MATERIALIZED TABLE t RESUME WITH", recorded, options)
    refuse_conflicts("ALTER MATERIALIZED TABLE t RESUME WITH", recorded, {TZ: "America/Los_Angeles"})
    with pytest.raises(DefinitionError) as refused:
        refuse_conflicts("ALTER MATERIALIZED TABLE t RESUME WITH", recorded, {TZ: "UTC"})
    assert refused.value.fix_line().startswith("Fix: to change it, run ALTER MATERIALIZED TABLE … AS <query>")
    assert str(refused.value) == (
        "ALTER MATERIALIZED TABLE t RESUME WITH: 'spark.sql.session.timeZone' = 'UTC' (the definition says "
        "'America/Los_Angeles') would change what the table's query answers, and that setting belongs to the "
        "definition. Nothing changed. Fix: to change it, run ALTER MATERIALIZED TABLE … AS <query> in a session with "
        "the setting (e.g. spark.conf.set(…)) — or CREATE OR ALTER … WITH ('<key>' = '<value>') — so the table is "
        "recomputed under it; or drop the option from RESUME WITH."
    )


def test_with_pins_answer_settings_and_refuses_other_spark_keys() -> None:
    pinned, rest = split_pinned("CREATE MATERIALIZED TABLE t", {TZ: "UTC", "write.format.default": "orc"})
    assert (pinned, rest) == ({TZ: "UTC"}, {"write.format.default": "orc"})
    with pytest.raises(DefinitionError, match=r"'spark\.sql\.shuffle\.partitions' = '4'\) is not a Spark setting"):
        split_pinned("CREATE MATERIALIZED TABLE t", {"spark.sql.shuffle.partitions": "4"})
    with pytest.raises(DefinitionError, match=r"'spark\.sql\.session\.timezone'"):  # names are case-sensitive
        split_pinned("CREATE MATERIALIZED TABLE t", {"spark.sql.session.timezone": "UTC"})


@pytest.mark.spark
def test_capture_writes_out_every_effective_value_and_pins_win(spark) -> None:
    settings = captured_settings(spark, {TZ: "Asia/Tokyo"})
    assert settings[TZ] == "Asia/Tokyo"
    assert settings["spark.sql.ansi.enabled"] == spark.conf.get("spark.sql.ansi.enabled")
    assert set(settings) <= set(ANSWER_SETTINGS) and all(isinstance(v, str) for v in settings.values())
    assert len(settings) >= 30  # every key this Spark knows (a few belong to another Spark line)

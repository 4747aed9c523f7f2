"""SHOW CREATE folds the recorded SQL settings equal to a Spark version's defaults into one baseline, and a CREATE
given the baseline records the same settings again (the round trip on a real session: tests/integration/
test_session_settings.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.errors import DefinitionError
from mt_magic.runtime.inspect.describe import create_statement
from mt_magic.runtime.spark.baselines import BASELINES, folded
from mt_magic.runtime.spark.semantics import split_pinned
from mt_magic.vocabulary import RefreshMode

TZ = "spark.sql.session.timeZone"


@pytest.mark.parametrize("version", sorted(BASELINES))
def test_show_create_writes_a_baseline_and_only_what_differs_and_the_baseline_expands_back(version: str) -> None:
    recorded = {**BASELINES[version], TZ: "Europe/Berlin", "spark.sql.ansi.enabled": "maybe"}
    definition = MaterializedTableDefinition(
        query="SELECT 1 AS one",
        expanded_query="SELECT 1 AS one",
        freshness="INTERVAL '1' MINUTE",
        refresh_mode=RefreshMode.CONTINUOUS,
        interval=timedelta(minutes=1),
        sql_settings=recorded,
    )
    info = TableInfo("mt.s.one", "u", None, (), definition.to_properties(), (("one", "int", True),), (), (), 0)
    assert create_statement(info, definition).text == (
        "CREATE MATERIALIZED TABLE `mt`.`s`.`one`\n"
        "WITH (\n"
        f"  'sql-settings.baseline' = '{version}',\n"
        "  'spark.sql.ansi.enabled' = 'maybe',\n"
        f"  '{TZ}' = 'Europe/Berlin'\n"
        ")\n"
        "FRESHNESS = INTERVAL '1' MINUTE\n"
        "AS SELECT 1 AS one"
    )
    pinned, others = split_pinned(
        "CREATE", {"sql-settings.baseline": version, "spark.sql.ansi.enabled": "maybe", TZ: "Europe/Berlin", "k": "v"}
    )
    assert pinned == recorded and others == {"k": "v"}


def test_no_baseline_fits_settings_of_an_unmeasured_spark_so_all_are_written() -> None:
    some = dict(list(BASELINES["spark-3.5.9"].items())[:5])
    assert folded(some) == (None, some)


def test_an_unknown_baseline_is_refused_with_the_known_ones() -> None:
    with pytest.raises(DefinitionError) as raised:
        split_pinned("CREATE MATERIALIZED TABLE t", {"sql-settings.baseline": "spark-9.9"})
    assert str(raised.value) == (
        "CREATE MATERIALIZED TABLE t: WITH ('sql-settings.baseline' = 'spark-9.9') names no baseline of SQL settings "
        "known here. Nothing changed. Fix: use one of 'spark-3.5.9', 'spark-4.1.4', or write the settings themselves "
        "('spark.sql.…' = '…')."
    )


@pytest.mark.spark
def test_the_installed_spark_s_defaults_are_its_baseline() -> None:
    """The recorded baseline of this Spark version is what a plain session of it says (re-measure with
    scripts/spark_sql_defaults.py when a new Spark line is supported)."""
    import subprocess
    import sys

    from pyspark import __version__

    if f"spark-{__version__}" not in BASELINES:
        pytest.skip(f"no baseline recorded for Spark {__version__}")
    out = subprocess.run(
        [sys.executable, "scripts/spark_sql_defaults.py"], capture_output=True, text=True, check=True, timeout=600
    ).stdout
    assert out.startswith(f'"spark-{__version__}": ')
    import json

    assert json.loads(out.split(": ", 1)[1].rstrip().rstrip(",")) == BASELINES[f"spark-{__version__}"]

"""Live cards and ``%mt`` views on a real shell, Spark, the embedded catalog and the running refresh manager.

The buttons go through the real service, so what they change is checked in the catalog.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from traitlets import TraitError

from mt_magic.vocabulary import JobState, RefreshMode
from mt_magic.widgets.card import TableCard
from mt_magic.widgets.cell_output import StatementOutput
from mt_magic.widgets.dashboard import Dashboard
from mt_magic.widgets.static_views import ConfigView, HistoryView, LineageView

pytestmark = pytest.mark.spark
NAME = "mt.default.live_totals"


def eventually(check: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def shell(spark):  # type: ignore[no-untyped-def]
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.default.live_orders (page STRING, amount INT) USING iceberg")
    spark.sql("INSERT INTO mt.default.live_orders VALUES ('home', 5), ('cart', 7), ('home', 1)")
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


@pytest.fixture(scope="module")
def output(shell) -> StatementOutput:  # type: ignore[no-untyped-def]
    return shell.run_cell_magic(
        "materialized",
        "--wait",
        """
        CREATE MATERIALIZED TABLE live_totals FRESHNESS = INTERVAL '10' MINUTE
        AS SELECT page, sum(amount) AS total FROM live_orders GROUP BY page
    """,
    )


def test_a_create_cell_shows_a_live_card_with_the_newest_rows(output: StatementOutput) -> None:
    [card] = output.cards
    assert isinstance(card, TableCard) and card.name == NAME
    assert "CONTINUOUS · freshness 10 minutes &lt; 30 minutes threshold · incremental (" in card.title.value
    assert "→ CONTINUOUS" not in card.title.value  # the mode is named once
    eventually(lambda: card.preview is not None and card.preview.rows != (), what="preview loaded")
    assert sorted(card.preview.rows) == [("cart", 7), ("home", 6)]  # type: ignore[union-attr]
    assert "Created mt.default.live_totals" in repr(output) and "preview (2 of up to 100 rows)" in repr(output)
    assert card.status.last_refresh is not None and "initial" in card.details.value


def test_the_buttons_act_through_the_service_and_persist(shell, spark, output: StatementOutput) -> None:  # type: ignore[no-untyped-def]
    card = shell.run_line_magic("mt", "status live_totals")
    assert output.cards == [] and card is not None  # the older card was replaced
    catalog = shell._mt_magic_magics.connection.service.workspace.catalog

    card.freshness_value.value, card.freshness_unit.value = 20, "MINUTE"
    card.freshness_button.click()
    assert "freshness is now INTERVAL '20' MINUTE" in html.unescape(card.message.value)
    assert catalog.load_materialized(NAME)[1].freshness == "INTERVAL '20' MINUTE"
    eventually(lambda: "target 20m 00s" in card.details.value, 10, "new target shown")

    card.suspend_button.click()
    assert catalog.load_materialized(NAME)[1].suspended
    eventually(lambda: card.status.state is JobState.SUSPENDED and card.suspend_button.description == "Resume", 10)

    spark.sql("INSERT INTO mt.default.live_orders VALUES ('home', 100)")
    before = card.status.last_refresh
    card.refresh_button.click()  # a manual refresh runs even while suspended
    eventually(lambda: card.status.last_refresh != before, what="manual refresh committed")
    eventually(lambda: card.preview is not None and ("home", 106) in card.preview.rows, what="new preview")

    card.suspend_button.click()
    assert not catalog.load_materialized(NAME)[1].suspended
    eventually(lambda: card.status.state is not JobState.SUSPENDED, 10, "resumed")


def test_history_lineage_and_controls(shell, output: StatementOutput) -> None:  # type: ignore[no-untyped-def]
    history = shell.run_line_magic("mt", "history live_totals")
    assert isinstance(history, HistoryView) and len(history.records) >= 2
    assert history.records[0].staleness_before is not None and history.freshness is not None
    assert "<svg" in history._repr_html_() and "manual" in repr(history)

    lineage = shell.run_line_magic("mt", "lineage live_totals")
    assert isinstance(lineage, LineageView) and lineage.graph.reads == {NAME: ("mt.default.live_orders",)}
    assert 'data-table="mt.default.live_orders" data-level="source"' in lineage._repr_html_()
    with pytest.raises(UsageError, match="mt.default.nowhere is not a materialized table"):
        shell.run_line_magic("mt", "lineage nowhere")

    assert "Refreshing mt.default.live_totals" in repr(shell.run_line_magic("mt", "refresh live_totals"))
    with pytest.raises(UsageError, match=r"%mt status needs one table name"):
        shell.run_line_magic("mt", "status")
    dashboard = shell.run_line_magic("mt", "")
    assert isinstance(dashboard, Dashboard) and NAME in repr(dashboard)


def test_explain_names_what_is_missing_or_explains(shell, output: StatementOutput) -> None:  # type: ignore[no-untyped-def]
    try:
        import mt_magic.runtime.refresh.incremental.explain  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="incremental refresh planner"):
            shell.run_line_magic("mt", "explain live_totals")
    else:
        assert "live_totals" in repr(shell.run_line_magic("mt", "explain live_totals"))
        statement = "CREATE MATERIALIZED TABLE x AS SELECT page, count(*) AS n FROM live_orders GROUP BY page"
        assert "<pre" in shell.run_line_magic("mt", f"explain {statement}")._repr_html_()
        with pytest.raises(UsageError, match="one CREATE MATERIALIZED TABLE statement"):
            shell.run_line_magic("mt", "explain ALTER MATERIALIZED TABLE live_totals SUSPEND")


def test_settings_are_validated_and_reach_the_freshness_rules(shell) -> None:  # type: ignore[no-untyped-def]
    magics = shell._mt_magic_magics
    with pytest.raises(TraitError, match=r"default_freshness_full: FRESHNESS = INTERVAL '7' MINUTE is not allowed"):
        magics.default_freshness_full = "INTERVAL '7' MINUTE"
    with pytest.raises(TraitError, match=r"preview_rows must be at least 1, got 0"):
        magics.preview_rows = 0
    shell.run_line_magic("config", "MaterializedMagics.default_freshness_continuous = \"INTERVAL '4' MINUTE\"")
    shell.run_line_magic("config", "MaterializedMagics.freshness_threshold = \"interval '3' minute\"")
    try:
        assert magics.connection.service.workspace.rules.threshold.total_seconds() == 180
        shell.run_cell_magic(
            "materialized", "", "CREATE MATERIALIZED TABLE live_defaults AS SELECT count(*) AS n FROM live_orders"
        )
        _, definition = magics.connection.service.workspace.catalog.load_materialized("mt.default.live_defaults")
        assert (definition.freshness, definition.refresh_mode) == ("INTERVAL '4' MINUTE", RefreshMode.FULL)
        config = shell.run_line_magic("mt", "config")
        assert isinstance(config, ConfigView)
        assert "MaterializedMagics.freshness_threshold = INTERVAL '3' MINUTE" in repr(config)
    finally:
        shell.run_line_magic("config", "MaterializedMagics.default_freshness_continuous = \"INTERVAL '3' MINUTE\"")
        shell.run_line_magic("config", "MaterializedMagics.freshness_threshold = \"INTERVAL '30' MINUTE\"")
        shell.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE IF EXISTS live_defaults")

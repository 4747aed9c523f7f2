"""``%mt explain ALTER …``, the table handle's ``explain_change`` and ``%mt history t --plot`` on a real shell
(issue 39): the preview is the magic's answer and the API's, nothing changes, and bad input gets the formatter's
message with its Fix line."""

from __future__ import annotations

from datetime import timedelta

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from mt_magic.widgets.history_chart import HistoryChartView
from mt_magic.widgets.static_views import ExplainView

pytestmark = pytest.mark.spark

TABLE = "mt.default.xpl_daily"


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.default.xpl_orders (day STRING, amount INT) USING iceberg")
    spark.sql("INSERT INTO mt.default.xpl_orders VALUES ('d1', 1), ('d2', 5)")
    ip.run_cell_magic(
        "materialized",
        "--wait",
        "CREATE MATERIALIZED TABLE xpl_daily FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT day, sum(amount) AS total FROM xpl_orders GROUP BY day",
    )
    yield ip
    ip.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE IF EXISTS xpl_daily")
    spark.sql("DROP TABLE IF EXISTS mt.default.xpl_orders")
    ip.run_line_magic("unload_ext", "mt_magic")


def test_explain_of_an_alter_previews_it_and_changes_nothing(shell) -> None:
    catalog = shell._mt_magic_magics.connection.service.workspace.catalog
    before = catalog.load(TABLE).iceberg.metadata_location
    view = shell.run_line_magic(
        "mt",
        "explain ALTER MATERIALIZED TABLE xpl_daily AS SELECT day, sum(amount) AS total, count(*) AS n "
        "FROM xpl_orders GROUP BY day",
    )
    assert isinstance(view, ExplainView)
    text = repr(view)
    assert text.startswith(f"ALTER MATERIALIZED TABLE {TABLE} AS: a preview (nothing changed)")
    assert "rows:               rebuilds: the next refresh recomputes the new query" in text
    assert "per hour:" in text and "<pre" in view._repr_html_()
    assert catalog.load(TABLE).iceberg.metadata_location == before
    with pytest.raises(UsageError, match=r"line 1, column \d+: .*Fix: ") as refused:
        shell.run_line_magic("mt", "explain ALTER MATERIALIZED TABLE xpl_daily SET FRESHNESS = INTERVAL '5' FORTNIGHT")
    assert "Traceback" not in str(refused.value)


def test_history_plot_is_the_chart(shell) -> None:
    view = shell.run_line_magic("mt", "history xpl_daily --plot")
    assert isinstance(view, HistoryChartView) and view.table == TABLE
    assert view._repr_html_().count("<svg") == 1 and "full recompute: 1 refresh(es)" in repr(view)


def test_the_handle_previews_each_change_as_explain_does_the_statement(shell) -> None:
    import mt_magic
    from mt_magic.errors import MtMagicError

    catalog = shell._mt_magic_magics.connection.service.workspace.catalog
    before = catalog.load(TABLE).iceberg.metadata_location
    daily = mt_magic.table("xpl_daily")
    query = "SELECT day, sum(amount) AS total, count(*) AS n FROM xpl_orders GROUP BY day"
    previews = {
        f"AS {query}": daily.explain_change(query=query),
        "SET FRESHNESS = INTERVAL '1' HOUR": daily.explain_change(freshness=timedelta(hours=1)),
        "SET REFRESH_MODE = FULL": daily.explain_change(refresh_mode="full"),
        "RESUME WITH ('spark.sql.shuffle.partitions' = '4')": daily.explain_change(
            resume={"spark.sql.shuffle.partitions": 4}
        ),
    }
    for clause, preview in previews.items():
        assert preview == mt_magic.explain(f"ALTER MATERIALIZED TABLE xpl_daily {clause}"), clause
    assert len({p.statement for p in previews.values()}) == 4  # four different previews, each the statement's
    assert previews["SET FRESHNESS = INTERVAL '1' HOUR"].statement.endswith("SET FRESHNESS = INTERVAL '1' HOUR")
    assert daily.explain() == mt_magic.explain("xpl_daily")

    where = r"mt_magic\.table\('mt\.default\.xpl_daily'\)\.explain_change: "
    with pytest.raises(MtMagicError, match=where + r"needs one change to preview, got none\. Fix: pass one of"):
        daily.explain_change()
    with pytest.raises(MtMagicError, match=where + r".*got freshness= and refresh_mode=.*one call per change"):
        daily.explain_change(freshness="1 hour", refresh_mode="FULL")
    assert catalog.load(TABLE).iceberg.metadata_location == before

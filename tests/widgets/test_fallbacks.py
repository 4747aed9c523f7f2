"""Where widgets cannot render, the card and the dashboard still read well: nbconvert HTML and terminal text."""

from __future__ import annotations

import nbformat
from IPython.core.interactiveshell import InteractiveShell
from nbconvert import HTMLExporter
from widget_helpers import NAME

from mt_magic.runtime.results import StatementResult
from mt_magic.widgets.live import LiveViews


def _notebook_with_outputs_of(*objects: object) -> nbformat.NotebookNode:
    formatter = InteractiveShell.instance().display_formatter
    cell = nbformat.v4.new_code_cell("%mt")
    for obj in objects:
        data, metadata = formatter.format(obj)
        cell.outputs.append(nbformat.v4.new_output("display_data", data=data, metadata=metadata))
    return nbformat.v4.new_notebook(cells=[cell])


def test_nbconvert_without_widget_state_shows_the_html_fallbacks(live: LiveViews) -> None:
    live.run_pending()
    output = live.statement_output([StatementResult("created", (NAME,), f"Created {NAME}.")])
    live.run_pending()
    page, _ = HTMLExporter().from_notebook_node(_notebook_with_outputs_of(output, live.dashboard()))
    assert page.count('class="mt-card-static"') == 1 and "✔ Created mt.default.orders_per_day." in page
    assert 'class="mt-dashboard-table"' in page and 'data-level="fresh"' in page
    assert "2024-12-31" in page  # the preview rows


def test_terminal_ipython_prints_the_text_form(live: LiveViews) -> None:
    card = live.card(NAME)
    data, _ = InteractiveShell.instance().display_formatter.format(card)
    assert data["text/plain"].splitlines()[:2] == [
        f"{NAME} — CONTINUOUS · incremental (aggregate merge)",
        "  [fresh · up to date / target 1m 00s]",
    ]
    assert (
        "  job: scheduled" in data["text/plain"]
        and "  next refresh: 2025-01-01 10:01:00 UTC (in 1m 00s)" in data["text/plain"]
    )

"""Where widgets cannot render, the card and the dashboard still read well: nbconvert HTML and terminal text."""

from __future__ import annotations

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output
from nbconvert import HTMLExporter
from widget_helpers import NAME, ManagerActions

from mt_magic.runtime.results import StatementResult
from mt_magic.widgets import saved_output
from mt_magic.widgets.live import LiveViews


def _displayed(*objects: object) -> list[tuple[dict, dict]]:
    """(data, metadata) of what displaying ``objects`` publishes (a view displays itself, with a display id)."""
    InteractiveShell.instance()
    with capture_output() as captured:
        for obj in objects:
            display(obj)
    return [(out.data, out.metadata) for out in captured.outputs]


def _notebook_with_outputs_of(*objects: object) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("%mt")
    for data, metadata in _displayed(*objects):
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
    [(data, _)] = _displayed(card)
    assert data["text/plain"].splitlines()[:2] == [
        f"{NAME} — CONTINUOUS · incremental (aggregate merge)",
        "  [fresh · up to date / target 1m 00s]",
    ]
    assert (
        "  job: scheduled" in data["text/plain"]
        and "  next refresh: 2025-01-01 10:01:00 UTC (in 1m)" in data["text/plain"]
    )


def test_the_saved_output_gets_the_preview_rows_at_the_cells_end_and_each_state_change_after(
    live: LiveViews, actions: ManagerActions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(saved_output, "in_kernel", lambda: True)  # the real kernel: tests/live/test_saved_card_live
    output = live.statement_output([StatementResult("created", (NAME,), f"Created {NAME}.")])
    InteractiveShell.instance()
    with capture_output() as captured:
        display(output)
        live.finish_cell()  # the preview had not loaded yet: the cell's end loads it
        live.tick()  # relative times move: no update
        actions.suspend(NAME)
        live.tick()
    shown, at_end, suspended = captured.outputs
    display_id = shown.transient["display_id"]
    assert not shown.update and at_end.update and suspended.update
    assert at_end.transient["display_id"] == suspended.transient["display_id"] == display_id
    assert "preview: loading" in shown.data["text/html"] and "2024-12-31" not in shown.data["text/plain"]
    assert "2024-12-31" in at_end.data["text/html"] and "    2024-12-31 | 5" in at_end.data["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in at_end.data
    assert "  job: suspended" in suspended.data["text/plain"] and "2024-12-31" in suspended.data["text/html"]

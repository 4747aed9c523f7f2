"""Tab completion in a real JupyterLab, driven by Debian's headless Chromium through Playwright.

A notebook loads the extension, creates a source table and two materialized tables; then, in a new
``%%materialized`` cell, the test types ``ALTER MATERIALIZED TABLE order_`` and presses Tab: JupyterLab asks the
kernel (IPython's completer, where mt_magic answers from its cached catalog names) and its completer popup lists
both table names. Then, in the select list of a CREATE whose FROM comes after the cursor, ``s.`` and Tab: the popup
lists the columns of ``s``'s table and nothing else. Screenshots go to ``test-artifacts/``, and the popups' also to
``$MT_MAGIC_COMPLETION_SCREENSHOT`` and ``$MT_MAGIC_COMPLETION_SELECT_SCREENSHOT`` when set
(``docs/completion.png``, ``docs/completion_select_list.png``). The JupyterLab fixture is the card test's (same
server set-up and stop).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_jupyterlab
from test_jupyterlab import ARTIFACTS, Lab, _wait_for, lab, launch_chromium  # noqa: F401 - lab: fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

NOTEBOOK = "completion.ipynb"
SCREENSHOT_ENV = "MT_MAGIC_COMPLETION_SCREENSHOT"
SELECT_SCREENSHOT_ENV = "MT_MAGIC_COMPLETION_SELECT_SCREENSHOT"
SELECT_LIST = "CREATE MATERIALIZED TABLE order_view AS SELECT s."
AFTER_CURSOR = " FROM shop_orders s"
CELLS = [
    "%load_ext mt_magic",
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession.getActiveSession()\n"
    'spark.sql("CREATE TABLE IF NOT EXISTS mt.default.shop_orders (order_id INT, amount DOUBLE) USING iceberg")\n'
    'spark.sql("INSERT INTO mt.default.shop_orders VALUES (1, 9.5), (2, 20.0)")',
    "%%materialized --wait\n"
    "CREATE MATERIALIZED TABLE order_totals AS SELECT count(*) AS orders, sum(amount) AS revenue FROM shop_orders;\n"
    "CREATE MATERIALIZED TABLE order_sizes AS SELECT amount > 10 AS large, count(*) AS n FROM shop_orders GROUP BY 1",
    'print("tables ready")',
]


LAB_START_S = 300.0
"""How long JupyterLab may take to answer (the card test's 60 s is short on a loaded machine)."""


@pytest.fixture
def patient_lab_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requested before ``lab``: its start waits up to :data:`LAB_START_S` in this test."""
    original = test_jupyterlab._wait_until_up
    monkeypatch.setattr(
        test_jupyterlab, "_wait_until_up", lambda url, process, log: original(url, process, log, LAB_START_S)
    )


def _notebook(path: Path) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
        for source in CELLS
    ]
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path.write_text(
        json.dumps({"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5})
    )


def _tab_popup(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Tab at the cursor until JupyterLab's completer popup shows; the texts it offers (none: no popup)."""
    items = page.locator(".jp-Completer .jp-Completer-item")
    for _ in range(5):  # the kernel's names load in the background; a Tab answers from what it has
        page.keyboard.press("Tab")
        try:
            items.first.wait_for(state="visible", timeout=30_000)
            return page.locator(".jp-Completer .jp-Completer-match").all_inner_texts()
        except Exception:
            page.keyboard.press("Escape")
            page.keyboard.press("Enter")  # back to edit mode, cursor where it was
    return []


def _popup_screenshot(page, cell, name: str, env: str) -> None:  # type: ignore[no-untyped-def]
    """The cell and the popup, to ``test-artifacts/<name>`` and to ``$<env>`` when set (the README's pictures)."""
    box, pop = cell.bounding_box(), page.locator(".jp-Completer").bounding_box()
    assert box is not None and pop is not None
    left, top = min(box["x"], pop["x"]), min(box["y"], pop["y"])
    right = max(box["x"] + box["width"], pop["x"] + pop["width"])
    bottom = max(box["y"] + box["height"], pop["y"] + pop["height"])
    clip = {"x": left, "y": top, "width": right - left, "height": bottom - top + 8}
    page.screenshot(path=str(ARTIFACTS / name), clip=clip)
    if os.environ.get(env):
        page.screenshot(path=os.environ[env], clip=clip)


def test_tab_in_a_materialized_cell_offers_the_catalogs_tables(
    patient_lab_start: None,
    lab: Lab,  # noqa: F811
    tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    _notebook(tmp_path / "root" / NOTEBOOK)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path, width=1200, height=900)
        page = context.new_page()
        try:
            page.set_default_timeout(120_000)  # generous bounds: the machine may be loaded
            page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}", timeout=300_000)
            page.locator(".jp-Notebook").wait_for(state="visible", timeout=300_000)
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=180_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            page.locator(".jp-OutputArea-output", has_text="tables ready").wait_for(
                timeout=600_000
            )  # kernel, Spark, two first refreshes

            last = page.locator(".jp-Notebook .jp-Cell").last
            last.click()
            page.keyboard.press("Escape")  # command mode
            page.keyboard.press("b")  # a new cell below, then edit it
            page.keyboard.press("Enter")
            page.keyboard.type("%%materialized\nALTER MATERIALIZED TABLE order_")
            offered = _tab_popup(page)
            assert "order_totals" in offered and "order_sizes" in offered, offered
            cell = page.locator(".jp-Notebook .jp-Cell").last
            _popup_screenshot(page, cell, "06-completion-popup.png", SCREENSHOT_ENV)

            page.keyboard.press("Enter")  # accept the first suggestion: it lands in the cell
            _wait_for(page, lambda: "ALTER MATERIALIZED TABLE order_" in cell.inner_text(), "the name in the cell", 60)
            text = cell.locator(".cm-content").inner_text()
            assert text.rstrip().endswith(("order_sizes", "order_totals")), text

            page.keyboard.press("Escape")  # a SELECT list whose FROM comes after the cursor
            page.keyboard.press("b")
            page.keyboard.press("Enter")
            page.keyboard.type("%%materialized\n" + SELECT_LIST + AFTER_CURSOR)
            for _ in AFTER_CURSOR:
                page.keyboard.press("ArrowLeft")
            offered = _tab_popup(page)
            assert offered == ["order_id", "amount"], offered  # s's columns, no Python names
            cell = page.locator(".jp-Notebook .jp-Cell").last
            _popup_screenshot(page, cell, "07-completion-select-list.png", SELECT_SCREENSHOT_ENV)
            page.keyboard.press("Enter")
            _wait_for(page, lambda: "s.order_id FROM" in cell.inner_text(), "the column in the cell", 60)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure-completion.png"))
            raise
        finally:
            context.close()

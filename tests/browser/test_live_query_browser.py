"""The live query of ``examples/05_live_query.ipynb`` in a real JupyterLab (headless Chromium, Playwright).

The test runs the notebook up to the cell that appends orders ("Run All Above Selected Cell"), checks that the live
query renders as a widget with its rows, the snapshot it is as of and its Pause control, and screenshots it; then
runs the rest (the append, ``ALTER … REFRESH``) and waits until the rendered rows change — the view re-ran in
the kernel without any cell touching it — and screenshots it again. The pictures go to ``test-artifacts/`` and to
``docs/live_query_before.png`` / ``docs/live_query_after.png``. JupyterLab, its kernel (Spark) and the catalog
are the ``lab`` fixture's (``test_jupyterlab.py``); every wait is bounded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_jupyterlab import ARTIFACTS, REPO, Lab, _wait_for, lab, launch_chromium, scroll_to, snap  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

NOTEBOOK = "05_live_query.ipynb"
VIEW = ".mt-live-query"
DOCS = REPO / "docs"


def _rows(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator(f"{VIEW} >> nth=0").locator("tr.mt-live-row").all_inner_texts()


def _run_menu(page, item: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def _select(page, text: str):  # type: ignore[no-untyped-def]
    """Select the code cell whose source holds ``text`` (a click on its prompt: command mode)."""
    cell = page.locator(".jp-Notebook .jp-CodeCell", has_text=text).first
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").click()
    return cell


def test_the_live_query_renders_and_its_rows_change_after_a_refresh(lab: Lab, tmp_path: Path) -> None:  # noqa: F811
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    DOCS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path)
        try:
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
            page.locator(".jp-Notebook").wait_for(state="visible", timeout=300_000)
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=300_000)

            _select(page, "start=200")
            _run_menu(page, "Run All Above Selected Cell")
            view = page.locator(VIEW).first
            view.wait_for(state="attached", timeout=600_000)  # kernel start, Spark, the first refresh, the query
            _wait_for(page, lambda: len(_rows(page)) == 6, "the live query shows one row per company", 300)
            before = _rows(page)
            header = view.locator(".mt-live-query-head")
            assert "live query" in header.inner_text() and "last run" in header.inner_text()
            assert view.locator(".mt-live-run").get_attribute("data-runs") == "1"
            assert "mt.default.revenue_per_company" in view.locator("tr.mt-as-of").first.inner_text()
            snapshot = view.locator("tr.mt-as-of").first.get_attribute("data-snapshot")
            assert view.locator("button.mt-live-pause").is_visible()
            scroll_to(view)
            snap(view, str(ARTIFACTS / "live_query_before.png"))
            snap(view, str(DOCS / "live_query_before.png"))

            _select(page, "start=200")
            _run_menu(page, "Run Selected Cell and All Below")
            _wait_for(page, lambda: _rows(page) != before, "the rendered rows change after the refresh", 420)
            after = _rows(page)
            assert len(after) == 6 and after != before
            assert view.locator("tr.mt-as-of").first.get_attribute("data-snapshot") != snapshot
            runs = view.locator(".mt-live-run")
            _wait_for(page, lambda: int(runs.get_attribute("data-runs") or 0) > 1, "the header counts the re-run", 120)
            scroll_to(view)
            snap(view, str(ARTIFACTS / "live_query_after.png"))
            snap(view, str(DOCS / "live_query_after.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "live_query_failure.png"))
            raise
        finally:
            context.close()

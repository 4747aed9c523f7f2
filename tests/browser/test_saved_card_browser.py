"""A saved notebook's card seen without a kernel, in headless Chromium: the cell's stored HTML fallback (what
nbconvert and GitHub show) carries the preview rows and the state as of the cell's end.

The notebook runs once in a real kernel through nbclient (its catalog is the ``lab`` fixture's, stopped with it),
is exported by nbconvert without the widgets' state, as a viewer without a kernel has it, and the page is
opened in Chromium; the card is saved to ``test-artifacts/06-saved-card-without-kernel.png``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_jupyterlab import ARTIFACTS, Lab, lab, launch_chromium  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CELLS = [
    "%load_ext mt_magic",
    "from pyspark.sql import SparkSession\n\n"
    "spark = SparkSession.getActiveSession()\n"
    'spark.sql("CREATE TABLE saved_clicks (page STRING, user_id INT) USING iceberg")\n'
    "spark.sql(\"INSERT INTO saved_clicks VALUES ('<home>', 1), ('cart', 2), ('cart', 3)\")",
    "%%materialized --wait\n"
    "CREATE MATERIALIZED TABLE saved_page_views FRESHNESS = INTERVAL '1' HOUR\n"
    "AS SELECT page, count(*) AS views FROM saved_clicks GROUP BY page",
]


def test_a_saved_notebooks_card_shows_its_rows_without_a_kernel(lab: Lab, tmp_path: Path) -> None:  # noqa: F811
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    env = {**os.environ, "MT_MAGIC_HOME": str(lab.home), "MT_MAGIC_SPARK_MASTER": "local[2]"}
    NotebookClient(notebook, kernel_name="python3", timeout=240).execute(env=env, cwd=str(tmp_path))
    notebook.metadata.pop("widgets", None)  # no widget state: the viewer shows the HTML fallback
    page_file = tmp_path / "saved.html"
    page_file.write_text(HTMLExporter().from_notebook_node(notebook)[0])

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path, height=900)
        try:
            page = context.new_page()
            page.goto(page_file.as_uri())
            card = page.locator(".mt-card-static")
            assert card.count() == 1
            card.scroll_into_view_if_needed()
            card.screenshot(path=str(ARTIFACTS / "06-saved-card-without-kernel.png"))
            text = card.inner_text()
            assert "mt.default.saved_page_views" in text and "preview: 2 row(s) of snapshot" in text
            cells = page.locator(".mt-card-static .mt-preview td").all_inner_texts()
            assert sorted(zip(cells[::2], cells[1::2], strict=True)) == [("<home>", "1"), ("cart", "2")]
            assert "scheduled" in page.locator(".mt-card-static .mt-details").inner_text()
        finally:
            context.close()

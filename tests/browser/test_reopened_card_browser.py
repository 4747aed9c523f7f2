"""A saved notebook reopened in JupyterLab after its kernel is gone: the card shows its rows as saved, not "Error
displaying widget: model not found" (issue 38).

JupyterLab does not save widget state by default; mt_magic's package ships a settings override that turns it on
(``pyproject.toml``'s data files put ``jupyter-config/lab/settings/overrides.d/mt_magic.json`` in
``share/jupyter/lab/settings/overrides.d``, where JupyterLab reads every installed package's overrides). The test
gives JupyterLab an application settings directory laid out as that install makes it, runs a notebook with a card,
saves it, shuts its kernel down and opens it again. The saved notebook converted by nbconvert carries the card's
state too: nbconvert then renders the card from that state (with the widgets' HTML manager) instead of the HTML
fallback, and the rows are in it; converted with nbconvert's ClearMetadataPreprocessor (the state dropped) it shows the
HTML fallback with the rows, as a viewer without the widgets' JavaScript needs.
Screenshot: ``test-artifacts/07-reopened-card.png``.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path

import pytest
from test_jupyterlab import ARTIFACTS, REPO, Lab, lab, launch_chromium, scroll_to, snap  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+

NOTEBOOK = "reopened.ipynb"
CELLS = [
    "%load_ext mt_magic",
    "from pyspark.sql import SparkSession\n\n"
    "spark = SparkSession.getActiveSession()\n"
    'spark.sql("CREATE TABLE reopened_clicks (page STRING, user_id INT) USING iceberg")\n'
    "spark.sql(\"INSERT INTO reopened_clicks VALUES ('home', 1), ('cart', 2), ('cart', 3)\")",
    "%%materialized --wait\n"
    "CREATE MATERIALIZED TABLE reopened_views FRESHNESS = INTERVAL '1' HOUR\n"
    "AS SELECT page, count(*) AS views FROM reopened_clicks GROUP BY page",
]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def installed_data_files(prefix: Path) -> None:
    """Copy the package's data files under ``prefix`` as its wheel's install does (tool.setuptools.data-files)."""
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    for directory, sources in data_files.items():
        (prefix / directory).mkdir(parents=True, exist_ok=True)
        for source in sources:
            shutil.copy(REPO / source, prefix / directory)


@pytest.fixture
def app_settings(tmp_path: Path) -> Path:
    """JupyterLab's application settings directory as a wheel install of mt_magic leaves it (requested before
    ``lab``: the fixture's JupyterLab reads its config directory, ``tmp_path/jupyter``)."""
    prefix = tmp_path / "prefix"
    installed_data_files(prefix)
    settings = prefix / "share" / "jupyter" / "lab" / "settings"
    config = tmp_path / "jupyter"
    config.mkdir(exist_ok=True)
    (config / "jupyter_lab_config.json").write_text(json.dumps({"LabApp": {"app_settings_dir": str(settings)}}))
    return settings


def _shut_down_sessions(server: Lab) -> None:
    """Close every notebook's session and its kernel, as File → Shut Down or a server restart leaves them (a kernel
    killed under a live session is another case: JupyterLab's widget manager then skips the saved state)."""
    with urllib.request.urlopen(f"{server.url}/api/sessions?token={server.token}", timeout=10) as response:
        sessions = json.loads(response.read())
    for session in sessions:
        url = f"{server.url}/api/sessions/{session['id']}?token={server.token}"
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=60).close()


def test_a_reopened_notebook_shows_its_card_as_saved_not_model_not_found(
    app_settings: Path,
    lab: Lab,  # noqa: F811
    tmp_path: Path,
) -> None:
    import nbformat
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright
    from traitlets.config import Config

    assert (app_settings / "overrides.d" / "mt_magic.json").exists()
    root = tmp_path / "root"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, root / NOTEBOOK)

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path, height=900)
        page = context.new_page()
        try:
            page.set_default_timeout(30_000)
            page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            page.locator(".mt-card .mt-preview td", has_text="cart").wait_for(timeout=240_000)
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while WIDGET_STATE not in nbformat.read(root / NOTEBOOK, 4).metadata.get("widgets", {}):
                assert time.monotonic() < deadline, "the saved notebook has no widget state"
                page.wait_for_timeout(500)

            _shut_down_sessions(lab)
            page.reload()
            page.locator(".jp-Notebook").wait_for(state="visible", timeout=60_000)
            card = page.locator(".mt-card")
            card.wait_for(state="visible", timeout=60_000)
            scroll_to(card)
            snap(card, str(ARTIFACTS / "07-reopened-card.png"))
            assert "model not found" not in page.locator(".jp-Notebook").inner_text()
            assert "mt.default.reopened_views" in page.locator(".mt-card .mt-title").inner_text()
            cells = page.locator(".mt-card .mt-preview td").all_inner_texts()
            assert sorted(zip(cells[::2], cells[1::2], strict=True)) == [("cart", "2"), ("home", "1")]
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"))
            raise
        finally:
            context.close()

    saved = nbformat.read(root / NOTEBOOK, 4)  # nbconvert renders the card from the saved state, which has the rows
    html = HTMLExporter().from_notebook_node(saved)[0]
    [card_output] = [
        o for o in saved.cells[2].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    model = card_output["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    state = saved.metadata["widgets"][WIDGET_STATE]["state"]
    assert model in state and model in html
    values = " ".join(str(m["state"].get("value", "")) for m in state.values())
    assert "<td>cart</td>" in values.replace(" ", "") or ">cart<" in values
    assert "mt-card-static" not in html  # nbconvert prefers the state: its HTML manager draws the card (online)

    config = Config()  # offline: without the state, nbconvert shows the card's HTML fallback, rows included
    config.ClearMetadataPreprocessor.enabled = True  # `jupyter nbconvert --ClearMetadataPreprocessor.enabled=True`
    fallback = HTMLExporter(config=config).from_notebook_node(saved)[0]
    assert "mt-card-static" in fallback and "cart" in fallback and "preview: 2 row(s) of snapshot" in fallback

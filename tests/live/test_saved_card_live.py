"""A notebook run by nbclient in a real kernel keeps each card's preview rows and state in its saved output.

What nbconvert, GitHub and a notebook reopened without a kernel show is the cell's stored ``text/html`` and
``text/plain``; the card updates that display at the cell's end, once its preview is loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from live_support import KERNEL_NAME, drop_namespace_tables

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

NS = "saved_card"
LABELS = ["<b>north</b> & co", "south"]


@pytest.fixture
def source(iceberg):
    import pyarrow as pa

    iceberg.create_namespace_if_not_exists(NS)
    table = iceberg.create_table((NS, "orders"), schema=pa.schema([("label", pa.string()), ("v", pa.int32())]))
    table.append(pa.table({"label": [*LABELS, "south"], "v": [1, 2, 3]}, schema=table.schema().as_arrow()))
    try:
        yield
    finally:
        drop_namespace_tables(iceberg, NS)


def test_a_saved_notebooks_card_holds_the_preview_rows_and_state_in_html_and_text(
    source, kernel_specs: Path, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    import nbformat
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    create = (
        "%%materialized --wait\n"
        f"CREATE MATERIALIZED TABLE {NS}.per_label FRESHNESS = INTERVAL '1' HOUR\n"
        f"AS SELECT label, count(*) AS n FROM {NS}.orders GROUP BY label"
    )
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%load_ext mt_magic"), nbformat.v4.new_code_cell(create)]
    )
    manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernel_specs]))
    NotebookClient(notebook, km=manager, timeout=240).execute(env=subprocess_env, cwd=str(tmp_path))

    outputs = [o for o in notebook.cells[1].outputs if "text/html" in o.get("data", {})]
    assert len(outputs) == 1, notebook.cells[1].outputs
    saved = outputs[0].data
    html, text = saved["text/html"], saved["text/plain"]
    assert "preview: loading" not in html
    assert "preview: 2 row(s) of snapshot" in html
    assert "&lt;b&gt;north&lt;/b&gt; &amp; co" in html and "<b>north</b>" not in html
    assert "<td" in html and ">south<" in html
    lines = text.splitlines()
    assert "  job: scheduled" in lines and any(line.startswith("  last refresh: full · ") for line in lines)
    assert "    <b>north</b> & co | 1" in lines and "    south | 2" in lines
    notebook.metadata.pop("widgets", None)  # as a viewer without the widgets' state shows it
    page, _ = HTMLExporter().from_notebook_node(notebook)
    assert "&lt;b&gt;north&lt;/b&gt; &amp; co" in page and "preview: loading" not in page

"""The first Tab after ``%load_ext mt_magic`` in a fresh Jupyter kernel offers the catalog's names (issue 51).

The kernel is a real ipykernel; the Tab is its ``complete_request`` (what JupyterLab sends). No cell runs between
``%load_ext`` and the Tabs: completion loads the names on its own, from the moment the extension opens the catalog.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from live_support import Kernel, drop_namespace_tables, running_kernel

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

NS = "tabfirst"
CELL = "%%materialized\nCREATE MATERIALIZED TABLE zeb_totals AS SELECT "


def tab(kernel: Kernel, code: str, cursor: int | None = None) -> list[str]:
    """The kernel's answer to a complete_request at ``cursor`` (default: the end)."""
    msg_id = kernel.client.complete(code, len(code) if cursor is None else cursor)
    while True:
        reply: dict[str, Any] = kernel.client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            return list(reply["content"]["matches"])


def test_the_first_tab_after_load_ext_offers_tables_and_columns(
    iceberg, kernel_specs: Path, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    import pyarrow as pa

    iceberg.create_namespace_if_not_exists(NS)
    iceberg.create_table((NS, "zeb"), schema=pa.schema([("zid", pa.int32()), ("zname", pa.string())]))
    try:
        with running_kernel(kernel_specs, subprocess_env, tmp_path) as kernel:
            kernel.run("%load_ext mt_magic", timeout=180)
            assert tab(kernel, CELL + f"* FROM mt.{NS}.ze") == ["zeb"]
            select = CELL + f" FROM mt.{NS}.zeb"
            assert tab(kernel, select, select.index(" FROM")) == ["zid", "zname", f"mt.{NS}.zeb"]
    finally:
        drop_namespace_tables(iceberg, NS)

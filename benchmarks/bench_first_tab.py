"""How long does a kernel's first Tab in a ``%%materialized`` cell take, and what does it offer?

Starts a real Jupyter kernel (this interpreter, ``jupyter_client``) on a throw-away embedded catalog that already
holds a source table, runs ``%load_ext mt_magic``, and at once sends JupyterLab's ``complete_request`` for the
cursor after ``AS SELECT `` of a statement reading that table; then a second Tab. It prints each round trip (ms)
and what was offered, then Tabs every 0.2 s until the source's columns are offered (the names' first load, in the
background, is done). Then a cell creates a table with ``spark.sql``: a Tab right after it, then every 0.2 s until
the new name is offered (the load after the cell, in the background).

Run: ``.venv/bin/python benchmarks/bench_first_tab.py``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_cell_latency import Kernel

SELECT_CELL = "%%materialized\nCREATE MATERIALIZED TABLE tab_bench AS SELECT  FROM tms_source"
FROM_CELL = "%%materialized\nCREATE MATERIALIZED TABLE tab_bench AS SELECT * FROM tms_"
SPARK_SQL_CELL = (
    "spark = get_ipython()._mt_magic_magics.connection.spark\n"
    "spark.sql('CREATE TABLE mt.default.tms_made_by_spark (k INT) USING iceberg')"
)


def tab(kernel: Kernel, code: str, cursor: int) -> tuple[float, list[str]]:
    """One ``complete_request`` (what JupyterLab sends on Tab): its round trip in ms and the matches."""
    started = time.perf_counter()
    msg_id = kernel.client.complete(code, cursor)
    while True:
        reply: dict[str, Any] = kernel.client.get_shell_msg(timeout=120)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    return (time.perf_counter() - started) * 1000, list(reply["content"]["matches"])


def until_offered(kernel: Kernel, code: str, cursor: int, wanted: str, label: str, limit_s: float = 120) -> None:
    """Tab every 0.2 s until ``wanted`` is offered; prints how long that took and the slowest Tab meanwhile."""
    started, slowest = time.perf_counter(), 0.0
    while time.perf_counter() - started < limit_s:
        ms, matches = tab(kernel, code, cursor)
        slowest = max(slowest, ms)
        if wanted in matches:
            waited = time.perf_counter() - started
            print(f"{label} {waited:.1f} s later (slowest Tab meanwhile {slowest:.0f} ms): {shown(matches)}")
            return
        time.sleep(0.2)
    print(f"{label}: not within {limit_s:.0f} s (slowest Tab {slowest:.0f} ms)")


def shown(matches: list[str]) -> str:
    return f"{len(matches)} offered: {matches[:6]}{' …' if len(matches) > 6 else ''}"


def main() -> None:
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    workdir = Path(tempfile.mkdtemp(prefix="mt_bench_tab_"))
    home = workdir / "home"
    server = ensure_embedded_server(home)
    env = {**os.environ, "MT_MAGIC_HOME": str(home), "MT_MAGIC_SPARK_MASTER": "local[2]"}
    env = {k: v for k, v in env.items() if not k.startswith("PYICEBERG_CATALOG__MT__")}
    catalog = load_catalog("bench", type="rest", uri=server.uri, **({"token": server.token} if server.token else {}))
    catalog.create_namespace_if_not_exists("default")
    schema = pa.schema([("order_id", pa.int32()), ("customer", pa.string()), ("amount", pa.float64())])
    catalog.create_table(("default", "tms_source"), schema)
    kernel = None
    try:
        kernel = Kernel(env, workdir)
        started = time.perf_counter()
        kernel.run("%load_ext mt_magic")
        print(f"%load_ext mt_magic: {(time.perf_counter() - started) * 1000:.0f} ms")
        cursor = SELECT_CELL.index(" FROM")
        for label in ("first Tab after AS SELECT", "second Tab"):
            ms, matches = tab(kernel, SELECT_CELL, cursor)
            print(f"{label}: {ms:.0f} ms, {shown(matches)}")
        until_offered(kernel, SELECT_CELL, cursor, "customer", "the source's columns offered")
        kernel.run(SPARK_SQL_CELL)
        ms, matches = tab(kernel, FROM_CELL, len(FROM_CELL))
        print(f"Tab after FROM tms_, right after a spark.sql CREATE TABLE cell: {ms:.0f} ms, {shown(matches)}")
        until_offered(kernel, FROM_CELL, len(FROM_CELL), "tms_made_by_spark", "the new table offered")
    finally:
        if kernel is not None:
            kernel.close()
        stop_embedded_server(home)


if __name__ == "__main__":
    main()

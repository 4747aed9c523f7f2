"""``python -m mt_magic demo``: run the quickstart notebook headless on the embedded defaults, say what it did.

The demo is the notebook a newcomer opens first (``examples/01_quickstart.ipynb``), executed by a real Jupyter
kernel with nbclient, so the demo and the notebook can never drift apart. Each cell is printed with what it
showed (text, not widgets) and how long it took. The kernel's own log (Spark's) goes to ``demo-kernel.log``
under ``MT_MAGIC_HOME``.

The kernel starts the embedded REST catalog when none is configured. If the demo started it, the demo stops
it at the end, unless ``--keep-catalog`` asks to keep it for the next kernel.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from mt_magic.catalog.embedded import mt_home, read_state, running_server, state_path, stop_embedded_server
from mt_magic.loopback import owner_only, private_dir

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "01_quickstart.ipynb"
SHOWN_LINES = 6
"""Lines of each cell's text output printed (a card's text form is longer)."""
ENGINE_LOG = re.compile(
    r"^(\d\d/\d\d/\d\d )?\d\d:\d\d:\d\d(\.\d+)? (TRACE|DEBUG|INFO|WARN|ERROR) |^\s+at |^\[Stage "
    r"|^Setting default log level|^To adjust logging level"
)
"""Lines Spark's JVM writes to the kernel's stderr, which ipykernel forwards into cell output."""


def _kernel_env() -> dict[str, str]:
    """The kernel imports this very mt_magic (a checkout run with ``python -m`` is not on the kernel's path)."""
    package_root = str(Path(__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}


def _cell_text(cell: Any) -> list[str]:
    """What a cell showed, as text: streams, errors' first lines, results' text/plain."""
    lines: list[str] = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            lines += output.get("text", "").splitlines()
        elif kind == "error":
            lines.append(f"{output.get('ename')}: {output.get('evalue', '').splitlines()[0]}")
        elif kind in ("execute_result", "display_data"):
            lines += str(output.get("data", {}).get("text/plain", "")).splitlines()
    return [line for line in lines if line.strip() and not ENGINE_LOG.search(line)]


def _report(cell: Any, number: int, seconds: float) -> None:
    source = cell.source.strip().splitlines()
    if not source:
        return
    code = [line for line in source if not line.startswith("# NBVAL")] or source
    head = code[0] + (" " + code[1].strip() if code[0].startswith("%%") and len(code) > 1 else "")
    more = " …" if len(code) > (2 if code[0].startswith("%%") else 1) else ""
    print(f"[{number:>2}] {seconds:5.1f}s  {head[:90]}{more}")
    shown = _cell_text(cell)
    for line in shown[:SHOWN_LINES]:
        print(f"            {line[:150]}")
    if len(shown) > SHOWN_LINES:
        print(f"            … ({len(shown) - SHOWN_LINES} more lines)")


def run_notebook(path: Path, log: Path) -> float:
    """Execute ``path`` cell by cell in a fresh kernel, printing each cell; returns the seconds it took.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell failed (the notebook's own checks included).
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    started = time.monotonic()
    with owner_only():  # Spark's log names paths, users and queries: its owner's only, as the home it is in
        kernel_log = open(log, "ab")  # noqa: SIM115 (closed below, after the kernel that writes it)
    os.chmod(log, 0o600)  # a log an older version left open to others
    with kernel_log, client.setup_kernel(env=_kernel_env(), stderr=kernel_log, stdout=kernel_log):
        for number, cell in enumerate(notebook.cells, start=1):
            if cell.cell_type != "code":
                continue
            began = time.monotonic()
            client.execute_cell(cell, number - 1)
            _report(cell, number, time.monotonic() - began)
    return time.monotonic() - started


def run_demo(keep_catalog: bool = False, notebook: Path = QUICKSTART) -> int:
    """Run the quickstart; 0 when every cell (and every check in it) passed."""
    from nbclient.exceptions import CellExecutionError

    if not notebook.exists():
        print(f"error: {notebook} is missing; the demo runs the repository's examples/ notebooks", file=sys.stderr)
        return 1
    home = private_dir(mt_home(None))
    was_running = running_server(home) is not None
    log = home / "demo-kernel.log"
    print(f"mt_magic demo: running {notebook.name} headless in a Jupyter kernel (MT_MAGIC_HOME={home})")
    try:
        seconds = run_notebook(notebook, log)
    except CellExecutionError as exc:
        print(f"error: a cell failed:\n{exc}", file=sys.stderr)
        return 1
    finally:
        _leave_catalog(home, was_running, keep_catalog)
    print(f"demo finished in {seconds:.1f}s; Spark's log: {log}")
    print(f"Open it yourself: jupyter lab {notebook.relative_to(notebook.parent.parent)}")
    return 0


def _leave_catalog(home: Path, was_running: bool, keep: bool) -> None:
    state = read_state(state_path(home))
    if was_running or state is None:
        return
    if keep:
        print(f"The embedded catalog keeps running at {state.uri} (stop it: python -m mt_magic.catalog stop).")
    elif stop_embedded_server(home):
        print("Stopped the embedded catalog the demo started (keep it with: python -m mt_magic demo --keep-catalog).")


def main(keep_catalog: bool = False) -> int:
    return run_demo(keep_catalog)

"""Helpers for the live tests (imported by name: pytest puts this directory on sys.path).

Everything here drives real components — pyiceberg against the embedded REST server, Spark, Jupyter kernels,
subprocesses — and only adds waiting with a deadline and reading results back.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from waiting import wait_until  # noqa: F401 - the live tests import it from here

CATALOG = "mtlive"
"""The live catalog's name in pyiceberg's configuration and in the test process's Spark session."""
KERNEL_NAME = "mt-live-python"
SUBPROCESS_SPARK = {"MT_MAGIC_SPARK_MASTER": "local[2]", "MT_MAGIC_DRIVER_MEMORY": "1g"}
"""Kernels and runners get a small local Spark: the machine has two cores shared with the test process."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


# -- tables through pyiceberg (no Spark job, so sampling does not compete with refreshes) -----------------


def append_batch(catalog: Any, ident: tuple[str, str], batch: int, rows: int = 3) -> datetime:
    """Append ``rows`` rows ``(batch, v)`` with one pyiceberg commit; returns the commit time."""
    import pyarrow as pa

    table = catalog.load_table(ident)
    data = pa.table(
        {
            "batch": pa.array([batch] * rows, pa.int32()),
            "v": pa.array(range(1, rows + 1), pa.int32()),
        }
    )
    table.append(data)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return datetime.fromtimestamp(snapshot.timestamp_ms / 1000, tz=timezone.utc)


def rows_of(catalog: Any, ident: tuple[str, str]) -> list[tuple[Any, ...]]:
    """The table's current rows, sorted (empty before its first snapshot)."""
    arrow = catalog.load_table(ident).scan().to_arrow()
    return sorted(zip(*(arrow.column(i).to_pylist() for i in range(arrow.num_columns)), strict=True))


def current_snapshot_id(catalog: Any, ident: tuple[str, str]) -> int | None:
    snapshot = catalog.load_table(ident).current_snapshot()
    return None if snapshot is None else snapshot.snapshot_id


def drop_namespace_tables(catalog: Any, namespace: str) -> None:
    """Purge every table of ``namespace``, so later modules' managers and runners never see them."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        idents = catalog.list_tables(namespace)
    except NoSuchNamespaceError:
        return
    for ident in idents:
        try:
            catalog.purge_table(ident)
        except NoSuchTableError:
            pass


@dataclass(frozen=True)
class StalenessSample:
    """One observation while a source receives appends."""

    at: datetime
    reported: timedelta | None
    """What the manager says (``TableStatus.staleness``)."""
    actual: timedelta
    """Computed by the test: now minus the commit time of the oldest appended batch the table lacks."""


def actual_staleness(appended: dict[int, datetime], present: set[int], now: datetime) -> timedelta:
    missing = [at for batch, at in appended.items() if batch not in present]
    return max(now - min(missing), timedelta(0)) if missing else timedelta(0)


# -- Jupyter kernels ---------------------------------------------------------------------------------------


def embedded_catalog(prefix: str) -> tuple[Path, Path, dict[str, str], Any, Any]:
    """A throw-away embedded catalog for scripts driving kernels: (work dir, MT_MAGIC_HOME, kernel environment,
    the server, a pyiceberg client of it). Stop it with ``stop_embedded_server(home)``."""
    import tempfile

    from pyiceberg.catalog import load_catalog

    from mt_magic.catalog.embedded import ensure_embedded_server

    work = Path(tempfile.mkdtemp(prefix=prefix))
    home = work / "home"
    server = ensure_embedded_server(home)
    env = {**os.environ, "MT_MAGIC_HOME": str(home), "PYTHONUNBUFFERED": "1", **SUBPROCESS_SPARK}
    catalog = load_catalog("mt", type="rest", uri=server.uri, **({"token": server.token} if server.token else {}))
    return work, home, env, server, catalog


def write_kernel_spec(directory: Path) -> Path:
    """A kernelspec that runs this interpreter (the project's venv), so the kernel imports this checkout."""
    spec_dir = directory / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "mt_magic live tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return directory


class KernelError(AssertionError):
    """A cell failed in the kernel."""


class Kernel:
    """A real ipykernel started through jupyter_client, with helpers to run cells and read their output."""

    def __init__(self, spec_dirs: Path, env: dict[str, str], cwd: Path) -> None:
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager(kernel_dirs=[str(spec_dirs)])
        self.manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
        self.manager.start_kernel(env=env, cwd=str(cwd))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    @property
    def pid(self) -> int:
        return self.manager.provisioner.process.pid  # type: ignore[union-attr]

    def run(self, code: str, timeout: float = 120) -> str:
        """Execute a cell; returns its stdout. Raises KernelError with the traceback if it failed."""
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])

        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=hook)
        content = reply["content"]
        if content["status"] != "ok":
            raise KernelError(
                f"cell failed: {content.get('ename')}: {content.get('evalue')}\n"
                + "\n".join(content.get("traceback", []))
                + "\n--- cell ---\n"
                + code
            )
        return "".join(out)

    def run_json(self, expression: str, timeout: float = 60) -> Any:
        """Evaluate ``expression`` in the kernel and return its value, passed through JSON."""
        text = self.run(f"import json as _j; print(_j.dumps({expression}, default=str))", timeout)
        return json.loads(text.strip().splitlines()[-1])

    def kill(self) -> None:
        """SIGKILL the kernel's whole process group (kernel and its Spark JVM): a crash, no cleanup code runs."""
        try:
            os.killpg(os.getpgid(self.pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.close()

    def close(self) -> None:
        try:
            self.client.stop_channels()
        finally:
            if self.manager.has_kernel:
                self.manager.shutdown_kernel(now=True)
            self.manager.cleanup_resources()


@contextmanager
def running_kernel(spec_dirs: Path, env: dict[str, str], cwd: Path) -> Iterator[Kernel]:
    """A kernel that is shut down (or killed) whatever happens in the block."""
    kernel = Kernel(spec_dirs, env, cwd)
    try:
        yield kernel
    finally:
        if kernel.manager.has_kernel:
            kernel.kill()


def process_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class RunnerOutput:
    """The runner's stdout lines with their arrival times, read on a thread so the pipe never fills."""

    def __init__(self, stream) -> None:
        self.lines: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(stream,), name="runner-stdout", daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._lock:
                self.lines.append((time.monotonic(), line.rstrip("\n")))

    def snapshot(self) -> list[tuple[float, str]]:
        with self._lock:
            return list(self.lines)

    def text(self) -> str:
        return "\n".join(line for _, line in self.snapshot())

    def events(self, table: str, kind: str, after: int = 0) -> list[str]:
        return [line for _, line in self.snapshot()[after:] if kind in line.split() and table in line.split()]

"""``python -m mt_magic.catalog serve`` as a child process, for tests that need a server of their own
(imported by name)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 60.0


def _wait_for_url(proc: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("mt_magic catalog serving"):
                return line.split()[3]
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)
    raise AssertionError(f"serve did not print its URL within {START_TIMEOUT_S}s:\n{log.read_text()}")


@contextmanager
def serving(*args: str, token: str = "", log: Path | None = None) -> Iterator[str]:
    """Run ``serve --port 0 ARGS…`` until the block ends; yields the URL it prints once listening.

    Everything the server prints (stdout and stderr) goes to ``log`` (a temporary file if not given).
    """
    env = {**os.environ, "MT_MAGIC_CATALOG_TOKEN": token}
    env.pop("MT_MAGIC_CATALOG_DATABASE", None)
    own_log = log is None
    log = log or Path(tempfile.mkstemp(prefix="serve_", suffix=".log")[1])
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mt_magic.catalog", "serve", "--port", "0", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        yield _wait_for_url(proc, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        if own_log:
            log.unlink(missing_ok=True)

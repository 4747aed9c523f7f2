"""``python -m mt_magic.catalog serve`` as child processes, for tests that need servers of their own
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


def _start(args: tuple[str, ...], token: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MT_MAGIC_CATALOG_TOKEN": token}
    env.pop("MT_MAGIC_CATALOG_DATABASE", None)
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mt_magic.catalog", "serve", "--port", "0", *args]
            + ([] if token else ["--insecure-no-auth"]),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


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
def serving_many(count: int, *args: str, token: str = "") -> Iterator[list[str]]:
    """Start ``count`` servers with the same ``serve --port 0 ARGS…`` at once; yields their URLs."""
    folder = Path(tempfile.mkdtemp(prefix="serve_"))
    logs = [folder / f"server{i}.log" for i in range(count)]
    procs = [_start(args, token, log) for log in logs]
    try:
        yield [_wait_for_url(proc, log) for proc, log in zip(procs, logs, strict=True)]
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=30)
        for log in logs:
            log.unlink(missing_ok=True)
        folder.rmdir()


@contextmanager
def serving(*args: str, token: str = "", log: Path | None = None) -> Iterator[str]:
    """Run ``serve --port 0 ARGS…`` until the block ends; yields the URL it prints once listening.

    Everything the server prints (stdout and stderr) goes to ``log`` (a temporary file if not given).
    """
    if log is None:
        with serving_many(1, *args, token=token) as [url]:
            yield url
        return
    proc = _start(args, token, log)
    try:
        yield _wait_for_url(proc, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

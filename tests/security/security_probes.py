"""Acting from outside: as a second local user (``runuser``), through the catalog's command line, waiting for a
``serve`` to print its URL (imported by name by the security tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

OTHER_USER = "mtother"


def other_user() -> str:
    """A second local user to try files and ports as (made if missing), or skip with the reason."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second local user (runuser)")
    if not shutil.which("runuser"):
        pytest.skip("needs runuser (util-linux) to act as a second local user")
    if subprocess.run(["id", OTHER_USER], capture_output=True).returncode != 0:
        made = subprocess.run(["useradd", "-M", "-s", "/bin/sh", OTHER_USER], capture_output=True, text=True)
        if made.returncode != 0 and "already exists" not in made.stderr:
            pytest.skip(f"cannot create the second user {OTHER_USER}: {made.stderr.strip()}")
    return OTHER_USER


def readable_by(user: str, paths: list[Path]) -> list[str]:
    """Which of ``paths`` ``user`` can read (``cat``), as that user."""
    script = 'for f in "$@"; do cat -- "$f" >/dev/null 2>&1 && printf "%s\\n" "$f"; done; exit 0'
    run = subprocess.run(
        ["runuser", "-u", user, "--", "sh", "-c", script, "sh", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return run.stdout.splitlines()


def catalog_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "PYICEBERG_"))}
    return subprocess.run(
        [sys.executable, "-m", "mt_magic.catalog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def url_of(proc: subprocess.Popen[bytes], log: Path) -> str:
    waited = threading.Event()
    for _ in range(1200):  # bounded: a minute
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("mt_magic catalog serving"):
                return line.split()[3]
        if proc.poll() is not None:
            break
        waited.wait(0.05)
    raise AssertionError(f"serve did not start (exit {proc.poll()}):\n{log.read_text(errors='replace')}")


def command_lines_holding(secret: str) -> dict[int, str]:
    """Every process whose command line holds ``secret`` (what any local user reads with ``ps``): pid → the line."""
    found = {}
    needle = secret.encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = cmdline.read_bytes()
        except OSError:  # ended meanwhile
            continue
        line = raw.replace(b"\0", b" ")  # arguments joined by spaces, as ps shows them
        if needle in line:
            found[int(cmdline.parent.name)] = line.decode(errors="replace")
    return found

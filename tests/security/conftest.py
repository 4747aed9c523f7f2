"""Fixtures for trying mt_magic from outside: as a second local user, as a web page, as a reader of ``ps``.

The second user (``mtother``) is made here when the tests run as root (as CI and the sessions do; it has no home and
no password); elsewhere the tests that need it skip with the reason. A home under test sits in a 0755 folder, as a
Debian home directory does, so that only the modes mt_magic sets decide what that user reaches.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from security_probes import url_of


@pytest.fixture
def open_parent(tmp_path: Path) -> Path:
    """A 0755 folder (and 0755 folders above it, up to /tmp's), where a home will be made."""
    for folder in [tmp_path, *tmp_path.parents]:
        if folder == Path(folder.anchor) or str(folder) == "/tmp":
            break
        folder.chmod(0o755)
    return tmp_path


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask of most desktops and servers (022): what mt_magic must not rely on."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture
def tokenless_server(tmp_path: Path) -> Iterator[str]:
    """``python -m mt_magic.catalog serve --insecure-no-auth`` (what a web page hopes to find); yields its URL."""
    log = tmp_path / "serve.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "PYICEBERG_"))}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mt_magic.catalog", "serve", "--port", "0", "--insecure-no-auth"]
            + ["--warehouse", str(tmp_path / "wh")],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**clean, "MT_MAGIC_HOME": str(tmp_path / "home")},
        )
    try:
        yield url_of(proc, log)
    finally:
        proc.terminate()
        proc.wait(timeout=30)

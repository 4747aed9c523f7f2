"""Run-wide isolation for every test item, notebooks included (nbval items do not get fixtures).

Each run gets its own ``MT_MAGIC_HOME`` (embedded catalog, warehouse, server state), inherited by the
kernels nbval and the browser test start, so tests never touch the user's ``~/.mt_magic``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_OWN_HOME: list[str] = []


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    home = tempfile.mkdtemp(prefix="mt_home_")
    _OWN_HOME.append(home)
    os.environ["MT_MAGIC_HOME"] = home


def pytest_unconfigure(config) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.catalog.embedded import stop_embedded_server

    for home in _OWN_HOME:
        stop_embedded_server(Path(home))
        shutil.rmtree(home, ignore_errors=True)

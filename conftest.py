"""Run-wide isolation for every test item, notebooks included (nbval items do not get fixtures).

Each run gets its own ``MT_MAGIC_HOME`` (embedded catalog, warehouse, server state), inherited by the
kernels nbval and the browser test start, so tests never touch the user's ``~/.mt_magic``.

``ast.parse`` runs one call at a time: CPython before 3.11.8/3.12.1 (gh-106905) kept the AST converter's recursion
depth in shared state, so two threads parsing at once — pytest rendering a failure's source while a refresh
thread formats a traceback (3.11's traceback module parses each line for its carets) — raise "SystemError: AST
constructor recursion depth mismatch", and pytest stops the whole run with an INTERNALERROR (CI, 2026-11-25).
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

_OWN_HOME: list[str] = []
_PARSING = threading.RLock()


def _serialized_parse(parse):  # type: ignore[no-untyped-def]
    def parse_alone(*args, **kwargs):  # type: ignore[no-untyped-def]
        with _PARSING:
            return parse(*args, **kwargs)

    return parse_alone


if sys.version_info < (3, 12, 1) and not getattr(ast.parse, "_mt_serialized", False):
    ast.parse = _serialized_parse(ast.parse)
    ast.parse._mt_serialized = True  # type: ignore[attr-defined]


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    home = tempfile.mkdtemp(prefix="mt_home_")
    _OWN_HOME.append(home)
    os.environ["MT_MAGIC_HOME"] = home
    if _connect_line().enabled():  # the Spark Connect line: a server for the whole run (tests/spark_connect/line.py)
        _connect_line().start(Path(home))


def pytest_runtest_makereport(item, call) -> None:  # type: ignore[no-untyped-def]
    """Each test's set-up time (its fixtures starting: a Spark session, a catalog server, a kernel) as the junit xml
    property ``setup``, which scripts/test_times.py sums per line."""
    if call.when == "setup":
        item.user_properties.append(("setup", f"{call.duration:.3f}"))


def _connect_line():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("connect_line", Path(__file__).parent / "tests/spark_connect/line.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_unconfigure(config) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.catalog.embedded import stop_embedded_server

    for home in _OWN_HOME:
        if _connect_line().enabled():
            _connect_line().stop(Path(home))
        stop_embedded_server(Path(home))
        shutil.rmtree(home, ignore_errors=True)


_TIERS = {
    "tests/live/": "kernel",
    "tests/test_demo.py": "kernel",
    "examples/": "kernel",
    "tests/cluster/": "cluster",
    "tests/incremental/test_differential": "differential",
    "tests/airflow/": "airflow",
}
"""Markers by location: what each test needs beyond a Spark session (``make test-quick`` and ``make test-spark``
leave them out; see the Makefile)."""


def pytest_collection_modifyitems(items) -> None:  # type: ignore[no-untyped-def]
    import pytest

    root = Path(__file__).parent
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        for prefix, marker in _TIERS.items():
            if where.startswith(prefix):
                item.add_marker(getattr(pytest.mark, marker))
                if marker in ("kernel", "cluster"):
                    item.add_marker(pytest.mark.spark)

"""Live fixtures: one real REST catalog server for the run, its pyiceberg client, and the environment that lets
Jupyter kernels and runner subprocesses reach the same catalog.

Each test module uses its own namespace and purges it when done, so a manager, kernel or runner of one module
never picks up another module's tables.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from live_support import CATALOG, SUBPROCESS_SPARK, write_kernel_spec


@pytest.fixture(scope="session")
def live_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("live_home")


@pytest.fixture(scope="session")
def live_server(live_home: Path):
    """The embedded REST catalog server of ``live_home``, configured for pyiceberg under ``CATALOG``.

    Kernels find it through ``MT_MAGIC_HOME`` (the extension's embedded default, catalog ``mt``); the test
    process and the headless runner through ``PYICEBERG_CATALOG__MTLIVE__*``.
    """
    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    server = ensure_embedded_server(live_home)
    keys = {"URI": server.uri, "TYPE": "rest", **({"TOKEN": server.token} if server.token else {})}
    for key, value in keys.items():
        os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key}"] = value
    try:
        yield server
    finally:
        for key in keys:
            os.environ.pop(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key}", None)
        stop_embedded_server(live_home)


@pytest.fixture(scope="session")
def iceberg(live_server):
    """A pyiceberg client of the live catalog (metadata, appends and scans without Spark jobs)."""
    from pyiceberg.catalog import load_catalog

    # explicit properties: pyiceberg reads PYICEBERG_CATALOG__* once, at its first import in the run
    token = {"token": live_server.token} if live_server.token else {}
    return load_catalog(CATALOG, type="rest", uri=live_server.uri, **token)


@pytest.fixture(scope="session")
def subprocess_env(live_home: Path, live_server) -> dict[str, str]:
    """Environment for kernels and runners: the live home, the live catalog, a small local Spark."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYICEBERG_CATALOG__MT__")}
    env.update({"MT_MAGIC_HOME": str(live_home), "PYTHONUNBUFFERED": "1", **SUBPROCESS_SPARK})
    return env


@pytest.fixture(scope="session")
def kernel_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kernel_spec(tmp_path_factory.mktemp("kernels"))

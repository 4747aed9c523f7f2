"""Integration fixtures: the real embedded REST catalog server on loopback, and services bound to it."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest
from mt_testing import CATALOG

_namespaces = itertools.count()


@pytest.fixture(scope="session")
def catalog_server(tmp_path_factory: pytest.TempPathFactory):
    """One real REST catalog server process for the whole run, found through pyiceberg's env configuration."""
    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    home = tmp_path_factory.mktemp("catalog_home")
    server = ensure_embedded_server(home)
    os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI"] = server.uri
    os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE"] = "rest"
    if server.token:
        os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__TOKEN"] = server.token
    yield server
    stop_embedded_server(home)


@pytest.fixture(scope="session")
def connection(spark, catalog_server):
    """A connection without a manager: refreshes run inline, so tests see each one complete."""
    from mt_magic.runtime.connection import ConnectionSettings, connect

    conn = connect(ConnectionSettings(catalog_name=CATALOG, namespace="it", start_manager=False))
    yield conn
    conn.close()


@pytest.fixture
def mt(connection) -> Iterator:
    """A service whose unqualified names live in a fresh namespace, so tests never see each other's tables."""
    from dataclasses import replace

    from mt_magic.runtime.engine import Engine
    from mt_magic.runtime.service import MaterializedTables

    base = connection.service.workspace
    namespace = f"t{next(_namespaces)}"
    base.catalog.catalog.create_namespace(namespace)
    workspace = replace(base, default_namespace=namespace)
    service = MaterializedTables(Engine(workspace, connection.service.engine.jobs))
    connection.spark.sql(f"USE {CATALOG}.{namespace}")
    yield service

"""Incremental-refresh fixtures: the real REST catalog server and real Spark, refreshes run inline.

Same shape as ``tests/integration``; a catalog of its own name so both directories can run in one session.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest
from incremental_testing import CATALOG

_namespaces = itertools.count()


@pytest.fixture(scope="session")
def catalog_server(tmp_path_factory: pytest.TempPathFactory):
    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    home = tmp_path_factory.mktemp("incremental_catalog_home")
    server = ensure_embedded_server(home)
    os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI"] = server.uri
    os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE"] = "rest"
    if server.token:
        os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__TOKEN"] = server.token
    yield server
    stop_embedded_server(home)


@pytest.fixture(scope="session")
def connection(spark, catalog_server):
    from mt_magic.runtime.connection import ConnectionSettings, connect

    conn = connect(ConnectionSettings(catalog_name=CATALOG, namespace="inc", start_manager=False))
    yield conn
    conn.close()


@pytest.fixture
def mt(connection) -> Iterator:
    """A service whose unqualified names live in a fresh namespace (also made current in the session)."""
    from dataclasses import replace

    from mt_magic.runtime.engine import Engine
    from mt_magic.runtime.service import MaterializedTables

    base = connection.service.workspace
    namespace = f"i{next(_namespaces)}"
    base.catalog.catalog.create_namespace(namespace)
    workspace = replace(base, default_namespace=namespace)
    connection.spark.sql(f"USE {CATALOG}.{namespace}")
    yield MaterializedTables(Engine(workspace, connection.service.engine.jobs))

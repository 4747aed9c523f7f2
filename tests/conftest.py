"""Fixtures shared by every test layer: one real SparkSession with Iceberg per run, and the real embedded
REST catalog server with services bound to it.

Every ``mt`` gets a fresh namespace of the shared test catalog, so tests never see each other's tables.
The run's own MT_MAGIC_HOME is set in the repository's root conftest.py."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from shared_catalog import CATALOG
from spark_connect import line as connect_line

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

_namespaces = itertools.count()


@pytest.fixture(scope="session")
def spark():
    """The one real SparkSession (local[2], Iceberg extensions and jars) shared by all Spark tests."""
    from mt_magic.runtime.spark.session import SparkSettings, get_or_create_session

    if connect_line.enabled():  # a Connect session on the run's server (tests/spark_connect/line.py)
        settings = SparkSettings(remote=os.environ["MT_MAGIC_SPARK_REMOTE"])
    else:
        settings = SparkSettings(master="local[2]", driver_memory="3g")
    session = get_or_create_session(settings)
    yield session
    session.stop()


@pytest.fixture
def hadoop_catalog(spark, tmp_path: Path) -> str:
    """A throw-away Iceberg Hadoop catalog registered on the shared session; returns its name."""
    name = f"h{abs(hash(tmp_path)) % 10**8}"
    spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", str(tmp_path / "warehouse"))
    return name


@pytest.fixture(scope="session")
def catalog_server(tmp_path_factory: pytest.TempPathFactory):
    """One real REST catalog server process for the whole run, on loopback."""
    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    if connect_line.enabled():  # the Connect server has this catalog in its own settings
        yield ensure_embedded_server(connect_line.test_catalog_home(Path(os.environ["MT_MAGIC_HOME"])))
        return
    home = tmp_path_factory.mktemp("catalog_home")
    server = ensure_embedded_server(home)
    yield server
    stop_embedded_server(home)


@pytest.fixture(scope="session")
def connection(spark, catalog_server):
    """A connection without a manager, found through pyiceberg's env configuration: refreshes run inline,
    so tests see each one complete."""
    from mt_magic.runtime.connection import ConnectionSettings, connect

    prefix = f"PYICEBERG_CATALOG__{CATALOG.upper()}__"
    os.environ[prefix + "URI"] = catalog_server.uri
    os.environ[prefix + "TYPE"] = "rest"
    if catalog_server.token:
        os.environ[prefix + "TOKEN"] = catalog_server.token
    conn = connect(ConnectionSettings(catalog_name=CATALOG, namespace="default", start_manager=False))
    yield conn
    conn.close()


@pytest.fixture
def mt(connection) -> Iterator:
    """A service whose unqualified names live in a fresh namespace (also made current in the session)."""
    from dataclasses import replace

    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.service import MaterializedTables

    base = connection.service.workspace
    namespace = f"t{next(_namespaces)}"
    base.catalog.catalog.create_namespace(namespace)
    workspace = replace(base, default_namespace=namespace)
    connection.spark.sql(f"USE {CATALOG}.{namespace}")
    yield MaterializedTables.inline(Engine(workspace, connection.service.engine.jobs))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the Spark session (directly or through another fixture) is a ``spark`` test, so
    ``make test-fast`` (``-m "not spark and not browser"``) never starts a JVM."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)

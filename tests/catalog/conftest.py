"""Fixtures for the catalog layer: one real REST catalog server (a subprocess on loopback) per run."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mt_magic.catalog.client import CatalogConfig, open_catalog, spark_catalog_conf
from mt_magic.catalog.embedded import EmbeddedServer, ensure_embedded_server, stop_embedded_server

TOKEN = "test-token-for-the-catalog"


@pytest.fixture(scope="session")
def catalog_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("catalog_home")


@pytest.fixture(scope="session")
def catalog_server(catalog_home: Path) -> Iterator[EmbeddedServer]:
    """The embedded server of a private home, started the way the extension starts it."""
    server = ensure_embedded_server(catalog_home, token=TOKEN)
    yield server
    stop_embedded_server(catalog_home)


@pytest.fixture(scope="session")
def catalog_config(catalog_server: EmbeddedServer) -> CatalogConfig:
    return CatalogConfig("mt_test", {"uri": catalog_server.uri, "token": TOKEN, "warehouse": catalog_server.warehouse})


@pytest.fixture(scope="session")
def rest(catalog_config: CatalogConfig):  # type: ignore[no-untyped-def]
    """pyiceberg's own RestCatalog against the server."""
    return open_catalog(catalog_config)


@pytest.fixture
def http(catalog_server: EmbeddedServer) -> Iterator[httpx.Client]:
    """Raw HTTP with the token, for checking the wire format itself (bodies declared JSON, as clients send them)."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with httpx.Client(base_url=catalog_server.uri, headers=headers, timeout=30) as client:
        yield client


@pytest.fixture
def ns(rest) -> str:  # type: ignore[no-untyped-def]
    """A fresh namespace per test, so tests never see each other's tables."""
    name = f"ns_{uuid.uuid4().hex[:8]}"
    rest.create_namespace(name)
    return name


@pytest.fixture(scope="session")
def spark_cat(spark, catalog_config: CatalogConfig) -> str:  # type: ignore[no-untyped-def]
    """The server registered in the shared SparkSession under a catalog name of its own."""
    name = "rest_main"
    for key, value in spark_catalog_conf(catalog_config, spark_name=name).items():
        spark.conf.set(key, value)
    return name

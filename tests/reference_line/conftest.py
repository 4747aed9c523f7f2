"""The second catalog line: materialized tables on Iceberg's reference REST catalog server.

``make test`` runs this folder once more with ``MT_TEST_CATALOG=reference``: the integration tests named in
``test_on_reference_catalog.py`` run unchanged, but the run's shared catalog (the ``catalog_server`` fixture,
overridden here) is ``org.apache.iceberg.rest.RESTCatalogServer`` from Iceberg's published test jars
(``tests/reference_catalog.py``), a catalog mt_magic did not write, instead of the embedded server. Without that
variable the folder collects nothing, so the main run does not start a second catalog.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

LINE_ENV = "MT_TEST_CATALOG"
TESTS = Path(__file__).resolve().parents[1]

if os.environ.get(LINE_ENV) != "reference":
    collect_ignore_glob = ["test_*.py"]
else:
    # the integration and catalog tests' modules and helpers, imported by name
    sys.path[:0] = [str(TESTS / "integration"), str(TESTS / "catalog")]


@pytest.fixture(scope="session")
def catalog_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Iceberg's reference REST server on loopback for the whole run, in the embedded server's shape."""
    from reference_catalog import reference_server

    from mt_magic.catalog.embedded import EmbeddedServer

    home = tmp_path_factory.mktemp("reference_catalog")
    with reference_server(home) as url:
        port = int(url.rsplit(":", 1)[1])
        yield EmbeddedServer(url, port, 0, (home / "warehouse").as_uri(), "Iceberg reference server (SQLite)")


@pytest.fixture(scope="session")
def catalog_config(catalog_server):  # type: ignore[no-untyped-def]
    """pyiceberg's configuration of the reference server (the catalog tests' fixture of the same name)."""
    from mt_magic.catalog.client import CatalogConfig

    return CatalogConfig("mt_test", {"uri": catalog_server.uri, "warehouse": catalog_server.warehouse})

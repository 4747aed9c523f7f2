"""A catalog that cannot be reached is a pause, never a shorter list of tables (real server, real client).

Regression: a transient failure while loading one table during rediscovery was swallowed, so the manager
treated the table as dropped — it cancelled its refresh and its card said "removed".
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pyiceberg.exceptions import ServerError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.errors import CatalogUnavailableError
from mt_magic.vocabulary import RefreshMode


class FlakyLoads:
    """The real pyiceberg catalog, except that loading one chosen table fails like an overloaded server."""

    def __init__(self, real: Any, failing: tuple[str, ...]) -> None:
        self._real, self._failing = real, failing

    def load_table(self, identifier: Any) -> Any:
        if tuple(identifier) == self._failing:
            raise ServerError("ServiceUnavailable: 503 backend busy")
        return self._real.load_table(identifier)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.fixture
def catalog(catalog_server) -> Any:
    config = CatalogConfig(
        "reach",
        {
            "type": "rest",
            "uri": catalog_server.uri,
            **({"token": catalog_server.token} if catalog_server.token else {}),
        },
    )
    return open_catalog(config)


def test_a_table_that_fails_to_load_is_unavailable_not_dropped(catalog) -> None:
    namespace = f"reach{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    definition = MaterializedTableDefinition(
        query="SELECT 1 AS x",
        expanded_query="SELECT 1 AS x",
        freshness="INTERVAL '1' MINUTE",
        refresh_mode=RefreshMode.CONTINUOUS,
    )
    schema = Schema(NestedField(1, "x", LongType(), required=False))
    for table in ("a", "b"):
        catalog.create_table((namespace, table), schema, properties=definition.to_properties())

    healthy = MaterializedCatalog(catalog, "mt")
    assert {f"mt.{namespace}.a", f"mt.{namespace}.b"} <= {i.name for i in healthy.list_materialized()}

    flaky = MaterializedCatalog(FlakyLoads(catalog, (namespace, "b")), "mt")  # type: ignore[arg-type]
    with pytest.raises(CatalogUnavailableError, match=r"cannot be reached .*ServerError: ServiceUnavailable"):
        flaky.list_materialized()
    with pytest.raises(CatalogUnavailableError):
        flaky.load(f"mt.{namespace}.b")


def test_a_stopped_server_is_unavailable(tmp_path) -> None:
    from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

    server = ensure_embedded_server(tmp_path)
    config = CatalogConfig(
        "gone", {"type": "rest", "uri": server.uri, **({"token": server.token} if server.token else {})}
    )
    tables = MaterializedCatalog(open_catalog(config), "mt")
    tables.ping()
    stop_embedded_server(tmp_path)
    with pytest.raises(CatalogUnavailableError):
        tables.ping()
    with pytest.raises(CatalogUnavailableError):
        tables.list_materialized()

"""The Iceberg materialized-view proposal (apache/iceberg PR #11041) as mt_magic writes it, read back by clients
that know nothing of mt_magic: the raw REST API, pyiceberg and Spark's Iceberg views.

Alongside materialized table ``t`` the view ``t__mv`` carries the definition; its current version's
``storage-table`` names ``t``; every refresh's ``refresh-state`` records the ``view-version-id`` of the
definition it ran. ALTER … AS makes a new version, RENAME moves and re-points the view, DROP drops it, and the
table itself stays a plain Iceberg table."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from mt_testing import run
from shared_catalog import CATALOG

from mt_magic.catalog.client import open_catalog

pytestmark = pytest.mark.spark


def _rest_view(connection, namespace: str, view: str) -> dict[str, Any] | None:  # type: ignore[no-untyped-def]
    """The view's LoadViewResult over plain HTTP (``None`` on 404)."""
    props = connection.catalog_config.properties
    headers = {"Authorization": f"Bearer {props['token']}"} if props.get("token") else {}
    url = f"{str(props['uri']).rstrip('/')}/v1/namespaces/{namespace}/views/{view}"
    response = requests.get(url, headers=headers, timeout=30)
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.json()


def _current(loaded: dict[str, Any]) -> dict[str, Any]:
    meta = loaded["metadata"]
    return next(v for v in meta["versions"] if v["version-id"] == meta["current-version-id"])


def _refresh_state(connection, namespace: str, table: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """``refresh-state`` of the table's current snapshot, read by a plain pyiceberg client."""
    loaded = open_catalog(connection.catalog_config).load_table(f"{namespace}.{table}")
    return json.loads(loaded.current_snapshot().summary.additional_properties["refresh-state"])


@pytest.fixture
def orders(mt, connection) -> str:  # type: ignore[no-untyped-def]
    namespace = mt.workspace.default_namespace
    connection.spark.sql("CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) USING iceberg")
    connection.spark.sql("INSERT INTO orders VALUES (1, 'ann', 10.0), (2, 'bob', 5.5), (3, 'ann', 2.5)")
    run(
        mt,
        """CREATE MATERIALIZED TABLE revenue FRESHNESS = INTERVAL '1' HOUR
        AS SELECT customer, sum(amount) AS total FROM orders GROUP BY customer""",
    )
    return namespace


def test_create_registers_the_view_and_refreshes_record_its_version(mt, connection, orders) -> None:  # type: ignore[no-untyped-def]
    namespace, spark = orders, connection.spark
    catalog = open_catalog(connection.catalog_config)
    table = catalog.load_table(f"{namespace}.revenue")
    loaded = _rest_view(connection, namespace, "revenue__mv")
    assert loaded is not None
    version = _current(loaded)
    assert version["storage-table"] == {"namespace": [namespace], "name": "revenue"}
    assert version["representations"] == [
        {"type": "sql", "sql": table.properties["mt.expanded-query"], "dialect": "spark"}
    ]
    assert f"`{CATALOG}`.`{namespace}`.`orders`" in version["representations"][0]["sql"]
    assert version["default-namespace"] == [namespace] and version["default-catalog"] == CATALOG
    [schema] = [s for s in loaded["metadata"]["schemas"] if s["schema-id"] == version["schema-id"]]
    assert [f["name"] for f in schema["fields"]] == ["customer", "total"]
    assert loaded["metadata"]["properties"]["mt.storage-table-uuid"] == str(table.metadata.table_uuid)

    state = _refresh_state(connection, namespace, "revenue")
    assert state["view-version-id"] == loaded["metadata"]["current-version-id"] == 1
    assert [s["name"] for s in state["source-states"]] == ["orders"] and state["refresh-start-timestamp-ms"] > 0

    # Clients that know nothing of the proposal: the table is a plain table; the view is an ordinary view.
    assert catalog.view_exists(f"{namespace}.revenue__mv")
    assert sorted(catalog.list_tables(namespace)) == [(namespace, "orders"), (namespace, "revenue")]
    assert sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist()) == [("ann", 12.5), ("bob", 5.5)]
    shown = spark.sql(f"SHOW VIEWS IN {CATALOG}.{namespace}").collect()
    assert [r.viewName for r in shown if not r.isTemporary] == ["revenue__mv"]  # the shared session's temp views
    through_view = spark.table(f"{CATALOG}.{namespace}.revenue__mv").collect()
    assert sorted(tuple(r) for r in through_view) == [("ann", 12.5), ("bob", 5.5)]
    described = {row[0]: row[1] for row in mt.describe(f"{CATALOG}.{namespace}.revenue").listing.rows}
    assert described["# iceberg view"] == f"{CATALOG}.{namespace}.revenue__mv (version 1)"  # all of it kept


def test_alter_as_makes_a_new_version_that_the_next_refresh_records(mt, connection, orders) -> None:  # type: ignore[no-untyped-def]
    namespace = orders
    run(
        mt,
        "ALTER MATERIALIZED TABLE revenue AS SELECT customer, sum(amount) AS total, count(*) AS n "
        "FROM orders GROUP BY customer",
    )
    loaded = _rest_view(connection, namespace, "revenue__mv")
    assert loaded is not None and loaded["metadata"]["current-version-id"] == 2
    version = _current(loaded)
    assert "COUNT(*) AS n" in version["representations"][0]["sql"]
    assert version["summary"]["mt.definition-version"] == "2"
    [schema] = [s for s in loaded["metadata"]["schemas"] if s["schema-id"] == version["schema-id"]]
    assert [f["name"] for f in schema["fields"]] == ["customer", "total", "n"]
    assert _refresh_state(connection, namespace, "revenue")["view-version-id"] == 1  # not refreshed since
    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH")
    assert _refresh_state(connection, namespace, "revenue")["view-version-id"] == 2


def test_rename_moves_and_repoints_the_view_and_drop_drops_it(mt, connection, orders) -> None:  # type: ignore[no-untyped-def]
    namespace = orders
    run(mt, "CREATE MATERIALIZED TABLE top FRESHNESS = INTERVAL '1' HOUR AS SELECT max(total) AS top FROM revenue")
    uuid = _rest_view(connection, namespace, "revenue__mv")["metadata"]["view-uuid"]  # type: ignore[index]
    run(mt, "ALTER MATERIALIZED TABLE revenue RENAME TO income")
    assert _rest_view(connection, namespace, "revenue__mv") is None
    moved = _rest_view(connection, namespace, "income__mv")
    assert moved is not None and moved["metadata"]["view-uuid"] == uuid
    assert _current(moved)["storage-table"] == {"namespace": [namespace], "name": "income"}
    run(mt, "ALTER MATERIALIZED TABLE income REFRESH")
    assert _refresh_state(connection, namespace, "income")["view-version-id"] == moved["metadata"]["current-version-id"]
    reader = _rest_view(connection, namespace, "top__mv")  # the reader's view reads the new name too
    assert reader is not None and reader["metadata"]["current-version-id"] == 2
    assert f"`{namespace}`.`income`" in _current(reader)["representations"][0]["sql"]

    run(mt, "DROP MATERIALIZED TABLE income", cascade=True)
    assert _rest_view(connection, namespace, "income__mv") is None
    assert open_catalog(connection.catalog_config).list_views(namespace) == []


def test_a_failed_table_commit_puts_the_previous_view_version_back(mt, connection, orders, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ALTER … AS writes the view version first; when the table's commit then fails (injected: the catalog goes
    away between the two writes), the previous version is current again and the table is unchanged."""
    from mt_magic.errors import CatalogUnavailableError

    namespace = orders
    before = _rest_view(connection, namespace, "revenue__mv")
    query = open_catalog(connection.catalog_config).load_table(f"{namespace}.revenue").properties["mt.query"]

    def unreachable(*args: object, **kwargs: object) -> None:
        raise CatalogUnavailableError("the catalog cannot be reached (injected)")

    monkeypatch.setattr(mt.workspace.catalog, "update_properties", unreachable)
    with pytest.raises(CatalogUnavailableError, match="injected"):
        run(
            mt,
            "ALTER MATERIALIZED TABLE revenue AS SELECT customer, sum(amount) AS total, 1 AS n "
            "FROM orders GROUP BY customer",
        )
    monkeypatch.undo()
    after = _rest_view(connection, namespace, "revenue__mv")
    assert after is not None and before is not None
    assert len(after["metadata"]["versions"]) == 2  # the new version was written, then set aside
    assert after["metadata"]["current-version-id"] == before["metadata"]["current-version-id"] == 1
    assert open_catalog(connection.catalog_config).load_table(f"{namespace}.revenue").properties["mt.query"] == query


def test_a_failed_view_write_at_create_drops_the_new_table(mt, connection, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.catalog.views import MaterializedViews
    from mt_magic.errors import CatalogUnavailableError

    namespace = mt.workspace.default_namespace

    def unreachable(*args: object, **kwargs: object) -> None:
        raise CatalogUnavailableError("the catalog cannot be reached (injected)")

    monkeypatch.setattr(MaterializedViews, "create", unreachable)
    with pytest.raises(CatalogUnavailableError, match="injected"):
        run(mt, "CREATE MATERIALIZED TABLE one AS SELECT 1 AS x")
    monkeypatch.undo()
    catalog = open_catalog(connection.catalog_config)
    assert catalog.list_tables(namespace) == [] and catalog.list_views(namespace) == []

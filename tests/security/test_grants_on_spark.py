"""Materialized tables obey the catalog's grants (issue 48), on Spark: two principals on one catalog, each a
connection of its own (the admin's, as every Spark test's, the analyst's ``mtana`` with her token) in one Spark session.

The analyst may read ``src`` and create and write in her own namespace. A CREATE in ``src`` is refused before
anything is written, naming the grant and who may give it; a CREATE in her namespace is made and refreshed as her;
once write is revoked her refresh fails with the same kind of error; the audit names her for her changes.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from shared_catalog import CATALOG

from mt_magic.catalog.access import AccessClient, audit_lines
from mt_magic.catalog.errors import NotGrantedError
from mt_magic.errors import MtMagicError
from mt_magic.sql import parse_cell

pytestmark = pytest.mark.spark


def _grant(admin: AccessClient, privilege: str, ns: str, granted: bool = True) -> None:
    body = {"role": "ana_role", "privilege": privilege, "on": {"type": "namespace", "name": [ns]}}
    admin.request("POST", "grants" if granted else "grants/revoke", body)


@pytest.fixture(scope="module")
def team(connection: Any, catalog_server: Any) -> Iterator[dict[str, Any]]:
    from mt_magic.runtime.connection import ConnectionSettings, connect

    suffix = uuid.uuid4().hex[:6]
    src, own = f"src_{suffix}", f"ana_{suffix}"
    spark, admin_catalog = connection.spark, connection.service.workspace.catalog.catalog
    for ns in (src, own):
        admin_catalog.create_namespace(ns)
    spark.sql(f"CREATE TABLE {CATALOG}.{src}.orders (k STRING, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.{src}.orders VALUES ('a', 1), ('a', 2), ('b', 5)")
    admin = AccessClient(admin_catalog)
    name = f"ana{suffix}"
    token = admin.request("POST", "principals", {"name": name})["token"]
    if not _role_exists(admin):
        admin.request("POST", "roles", {"name": "ana_role"})
    admin.request("POST", "roles/ana_role/members", {"principal": name})
    _grant(admin, "read-data", src)
    for privilege in ("create", "write", "drop"):
        _grant(admin, privilege, own)
    prefix = "PYICEBERG_CATALOG__MTANA__"
    os.environ.update({prefix + "URI": catalog_server.uri, prefix + "TYPE": "rest", prefix + "TOKEN": token})
    ana = connect(ConnectionSettings(catalog_name="mtana", namespace=own, start_manager=False))
    try:
        yield {"ana": ana, "admin": admin, "src": src, "own": own, "name": name, "spark": spark}
    finally:
        ana.close()
        for key in ("URI", "TYPE", "TOKEN"):
            os.environ.pop(prefix + key, None)


def run(connection: Any, cell: str) -> Any:
    [statement] = parse_cell(cell)
    result = connection.service.execute(statement)
    if result.refresh is not None:
        result.refresh.result(timeout=300)
    return result


def _role_exists(admin: AccessClient) -> bool:
    return any(r["name"] == "ana_role" for r in admin.request("GET", "roles")["roles"])


def test_each_principal_creates_and_refreshes_only_what_it_may(team: dict[str, Any]) -> None:
    ana, admin, src, own = team["ana"], team["admin"], team["src"], team["own"]
    with pytest.raises(NotGrantedError) as refused:
        run(ana, f"CREATE MATERIALIZED TABLE {src}.copied AS SELECT k FROM {src}.orders")
    message = str(refused.value)
    assert f"lacks create on namespace {src} (to create the table); write on table {src}.copied" in message
    assert "nothing was written" in message and "Fix: ask admin to grant it" in message
    assert not ana.service.workspace.catalog.exists(f"mtana.{src}.copied")

    run(ana, f"CREATE MATERIALIZED TABLE totals AS SELECT k, sum(amount) AS s FROM {src}.orders GROUP BY k")
    rows = team["spark"].sql(f"SELECT k, s FROM {CATALOG}.{own}.totals ORDER BY k").collect()
    assert [tuple(r) for r in rows] == [("a", 3), ("b", 5)]

    _grant(admin, "read-data", own)  # she still reads her table, but may no longer commit to it
    _grant(admin, "write", own, granted=False)
    team["spark"].sql(f"INSERT INTO {CATALOG}.{src}.orders VALUES ('c', 7)")
    try:
        result = ana.service.refresh(f"mtana.{own}.totals", (), False)
        error = result.refresh.exception(timeout=300) if result.refresh is not None else None
    except MtMagicError as exc:
        error = exc
    assert error is not None and f"lacks write on table {own}.totals" in str(error), error
    assert "Fix: ask admin" in str(error)
    _grant(admin, "write", own)

    entries = admin.audit(table=f"{own}.totals", limit=50)
    by = {(e["action"], e["principal"]) for e in entries}
    assert ("create", team["name"]) in by and ("commit", team["name"]) in by, by
    print("\n".join(audit_lines(entries)))  # the closing note's excerpt

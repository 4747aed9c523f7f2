"""A reader's token, from outside, against a real catalog server (issue 48): every change it tries gets 403 and no
table's metadata moves; the audit names who changed what; CREATE MATERIALIZED TABLE's check names the grant missing.

The server is the embedded one (``serve`` in its own process), the clients pyiceberg's REST catalog as any engine
uses it. The reader has read-data on ``dws``; a sandbox namespace is all its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import ForbiddenError
from security_probes import catalog_cli

from mt_magic.catalog.access import AccessClient, check_create
from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import EmbeddedServer, ensure_embedded_server, stop_embedded_server
from mt_magic.catalog.errors import NotGrantedError, not_granted
from mt_magic.catalog.leases import CatalogLeases, Lease, _next_snapshot
from mt_magic.catalog.tables import MaterializedCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@dataclass(frozen=True)
class Team:
    server: EmbeddedServer
    home: Path
    admin: Catalog
    reader: Catalog
    reader_token: str


def _catalog(server: EmbeddedServer, token: str) -> Catalog:
    return open_catalog(CatalogConfig("mt", {"uri": server.uri, "token": token}))


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    home = tmp_path_factory.mktemp("team_home")
    server = ensure_embedded_server(home)
    try:
        assert server.token
        admin = _catalog(server, server.token)
        for ns in ("dws", "sandbox"):
            admin.create_namespace(ns)
        table = admin.create_table("dws.orders", SCHEMA)
        table.append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
        admin.create_table("dws.totals", SCHEMA)
        CatalogLeases(admin, "mt").read()  # the lease table exists
        made = catalog_cli("principals", "create", "ana", "--home", str(home))
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip().splitlines()[-1]
        for args in (
            ("roles", "create", "analysts"),
            ("roles", "add", "analysts", "ana"),
            ("grants", "add", "analysts", "read-data", "--namespace", "dws"),
            ("grants", "add", "analysts", "create", "--namespace", "sandbox"),
            ("grants", "add", "analysts", "write", "--namespace", "sandbox"),
            ("grants", "add", "analysts", "drop", "--namespace", "sandbox"),
        ):
            done = catalog_cli(*args, "--home", str(home))
            assert done.returncode == 0, done.stderr
        yield Team(server, home, admin, _catalog(server, token), token)
    finally:
        stop_embedded_server(home)


def locations(catalog: Catalog) -> dict[tuple[str, ...], str]:
    return {
        ident: catalog.load_table(ident).metadata_location
        for ns in catalog.list_namespaces()
        for ident in catalog.list_tables(ns)
    }


def test_a_readers_changes_all_get_403_and_no_table_moves(team: Team) -> None:
    before = locations(team.admin)
    reader = team.reader
    assert reader.load_table("dws.orders").scan().to_arrow().num_rows == 3  # it reads
    orders = reader.load_table("dws.orders")
    attempts = {
        "create": lambda: reader.create_table("dws.mine", SCHEMA),
        "commit": lambda: orders.append(pa.table({"id": [4]}, schema=SCHEMA)),
        "alter": lambda: orders.transaction().set_properties(owner="ana").commit_transaction(),
        "drop": lambda: reader.drop_table("dws.totals"),
        "purge": lambda: reader.purge_table("dws.totals"),
        "register": lambda: reader.register_table("dws.alias", orders.metadata_location),
        "rename into dws": lambda: (
            reader.create_table("sandbox.moving", SCHEMA),
            reader.rename_table("sandbox.moving", "dws.moved"),
        ),
        "lease": lambda: _take_lease_raw(reader, "mt.dws.orders"),
    }
    for what, attempt in attempts.items():
        with pytest.raises(ForbiddenError, match="Principal 'ana' lacks") as refused:
            attempt()
        assert "Fix: ask admin" in str(refused.value), what
    after = locations(team.admin)
    assert {k: v for k, v in after.items() if k[0] != "sandbox"} == before
    # through mt_magic's own lease client the reader never asks for what it may not take
    store = CatalogLeases(reader, "mt")
    base = store.read()
    now = datetime.now(timezone.utc)
    wanted = {"mt.dws.orders": Lease("mt.dws.orders", "ana", now + timedelta(seconds=30))}
    wanted["mt.sandbox.moving"] = Lease("mt.sandbox.moving", "ana", now + timedelta(seconds=30))
    written = store.write(base, {**base.leases, **wanted})
    assert "mt.dws.orders" not in written.leases and written.leases["mt.sandbox.moving"].holder == "ana"


def _take_lease_raw(catalog: Catalog, name: str) -> None:
    """What a client that ignores mt_magic's lease code would send: a new lease map naming ``name``."""
    from pyiceberg.table.update import AssertRefSnapshotId

    table = catalog.load_table(("mt_magic", "refresh_leases"))
    lease = Lease(name, "intruder", datetime.now(timezone.utc) + timedelta(minutes=5))
    _, updates, _ = _next_snapshot(table, {name: lease})
    requirement = AssertRefSnapshotId(ref="main", snapshot_id=table.metadata.current_snapshot_id)  # type: ignore[call-arg]
    catalog.commit_table(table, (requirement,), updates)


def test_create_materialized_table_is_refused_before_anything_is_written(team: Team) -> None:
    catalog = MaterializedCatalog(team.reader, "mt")
    statement = "CREATE MATERIALIZED TABLE dws.daily"
    with pytest.raises(NotGrantedError) as refused:
        check_create(catalog, statement, "mt.dws.daily", ["mt.dws.orders", "mt.dws.totals"])
    message = str(refused.value)
    assert "lacks create on namespace dws (to create the table); write on table dws.daily (to refresh it)" in message
    assert "nothing was written" in message and "Fix: ask admin" in message and "grants add <role> create" in message
    check_create(catalog, "CREATE MATERIALIZED TABLE sandbox.daily", "mt.sandbox.daily", ["mt.dws.orders"])  # allowed
    with pytest.raises(NotGrantedError, match=r"read-data on table sandbox.secret \(a source of the query\)"):
        team.admin.create_table("sandbox.secret", SCHEMA)
        AccessClient(team.admin).request(
            "POST",
            "grants/revoke",
            {"role": "analysts", "privilege": "write", "on": {"type": "namespace", "name": ["sandbox"]}},
        )
        try:
            check_create(catalog, "CREATE MATERIALIZED TABLE sandbox.d2", "mt.sandbox.d2", ["mt.sandbox.secret"])
        finally:
            AccessClient(team.admin).request(
                "POST",
                "grants",
                {"role": "analysts", "privilege": "write", "on": {"type": "namespace", "name": ["sandbox"]}},
            )
    assert "dws.daily" not in str(locations(team.admin))


def test_a_refused_commit_reads_as_the_same_error_through_spark(team: Team) -> None:
    """How Iceberg's Java client reports the 403 inside a Spark failure: the same error, grant and Fix."""
    with pytest.raises(ForbiddenError) as refused:
        team.reader.load_table("dws.orders").append(pa.table({"id": [9]}, schema=SCHEMA))
    java = (
        "py4j.protocol.Py4JJavaError: An error occurred while calling o123.sql.\n: "
        f"org.apache.iceberg.exceptions.ForbiddenException: Forbidden: {str(refused.value).split(': ', 1)[1]}\n"
        "\tat org.apache.iceberg.rest.ErrorHandlers$DefaultErrorHandler.accept(ErrorHandlers.java:212)"
    )
    error = not_granted(java, "refresh of mt.dws.orders failed")
    assert error is not None
    assert str(error).startswith("refresh of mt.dws.orders failed: Principal 'ana' lacks write on table dws.orders")
    assert "Fix: ask admin to grant it" in str(error)


def test_the_audit_names_every_change_and_its_principal(team: Team) -> None:
    listed = catalog_cli("audit", "--home", str(team.home), "--limit", "200")
    assert listed.returncode == 0, listed.stderr
    text = listed.stdout
    for line in ("principal-create", "role-assign", "grant", "create-namespace"):
        assert line in text
    assert any("admin" in row and " commit " in row and "table dws.orders" in row for row in text.splitlines())
    ana = AccessClient(team.reader).audit(limit=500)
    assert {e["principal"] for e in ana} >= {"admin"}
    assert all(e["object"]["name"][:1] in (["dws"], ["sandbox"]) for e in ana)  # only what ana may read
    assert any(e["action"] == "create" and e["principal"] == "ana" for e in ana)

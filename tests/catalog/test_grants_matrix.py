"""Every endpoint × each privilege alone × where it is granted, as Polaris's ``PolarisAuthzTestBase`` checks its
handlers (issue 48).

For each operation of the catalog's REST API (and mt_magic's own routes) the table below says which single privileges
are enough. The test grants privileges to the probe's role — on the catalog, on the namespace the operation acts in
(``own``) and on another namespace (``other``) — and asserts the operation passes with each privilege that is enough
and whose grant reaches the object (another namespace's never does; a catalog-wide operation needs the catalog's),
gets 403 again once that grant is revoked, and gets ``403 ForbiddenException`` with all the other privileges granted
there at once (grants only add, so what their union is refused each alone is; an operation that needs two
privileges together gets each alone instead). Operations that
need two privileges (a rename: drop the source, create in the destination) pass with neither alone and with both.

In process (the ASGI app, no Spark), on SQLite; the table operations on PostgreSQL too where its binaries are
installed (marked slow).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from access_app import (
    ADMIN_TOKEN,
    SCHEMA,
    VIEW_VERSION,
    as_principal,
    client,
    create_table,
    create_view,
    grant,
    new_principal,
    ok,
)
from postgres_cluster import missing_reason, postgres_cluster
from starlette.testclient import TestClient
from test_rest_protocol import _stage_then_commit

from mt_magic.catalog.privileges import Privilege

ROLE = "probe_role"
READ = frozenset({"read-metadata", "read-data", "write"})
ANY = frozenset(p.value for p in Privilege)
PLACES = {
    "catalog": {"type": "catalog", "name": []},
    "own": {"type": "namespace", "name": ["own"]},
    "other": {"type": "namespace", "name": ["other"]},
}


@dataclass(frozen=True)
class Op:
    """One request of the probe, the single privileges enough for it, and how to set up and undo around it."""

    name: str
    passes: frozenset[str]
    act: Callable[[TestClient, World], Any]
    setup: Callable[[World], None] = lambda w: None
    cleanup: Callable[[World], None] = lambda w: None
    catalog_only: bool = False
    """It acts on the catalog (principals, roles, top-level namespaces): a namespace's grant never reaches it."""
    anyone: bool = False
    """Any authenticated principal may (its answer is filtered to what the principal may see)."""


@dataclass
class World:
    database: str
    admin: TestClient
    probe: TestClient
    dropped_table: str = ""
    dropped_view: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def exists(self, path: str) -> bool:
        return self.admin.head(path).status_code == 204

    def ensure_table(self, ns: str, name: str) -> None:
        if not self.exists(f"/v1/namespaces/{ns}/tables/{name}"):
            create_table(self.admin, ns, name)

    def ensure_view(self, ns: str, name: str) -> None:
        if not self.exists(f"/v1/namespaces/{ns}/views/{name}"):
            create_view(self.admin, ns, name)

    def gone(self, path: str) -> None:
        if self.exists(path):
            ok(self.admin.delete(path))

    def ensure_namespace(self, *levels: str) -> None:
        if self.admin.head(f"/v1/namespaces/{'%1F'.join(levels)}").status_code != 204:
            ok(self.admin.post("/v1/namespaces", json={"namespace": list(levels)}))

    def drop_namespace(self, *levels: str) -> None:
        if self.admin.head(f"/v1/namespaces/{'%1F'.join(levels)}").status_code == 204:
            ok(self.admin.delete(f"/v1/namespaces/{'%1F'.join(levels)}"))


def _staged_create(probe: TestClient, w: World) -> Any:
    commit = _stage_then_commit(w.admin, "own", "cc")  # staged by the admin, committed (created) by the probe
    return probe.post("/v1/namespaces/own/tables/cc", json=commit)


SET_PROPERTY = {"updates": [{"action": "set-properties", "updates": {"touched": "yes"}}]}
GRANT_ON_OWN = {"role": ROLE, "privilege": "read-metadata", "on": {"type": "namespace", "name": ["own", "child"]}}

OPS = [
    Op("config", ANY, lambda p, w: p.get("/v1/config"), anyone=True),
    Op("whoami", ANY, lambda p, w: p.get("/v1/mt/whoami"), anyone=True),
    Op("audit", ANY, lambda p, w: p.get("/v1/mt/audit"), anyone=True),
    Op("list namespaces in own", ANY, lambda p, w: p.get("/v1/namespaces", params={"parent": "own"})),
    Op("load namespace", READ, lambda p, w: p.get("/v1/namespaces/own")),
    Op("namespace exists", ANY, lambda p, w: p.head("/v1/namespaces/own")),
    Op(
        "set namespace properties",
        frozenset({"write"}),
        lambda p, w: p.post("/v1/namespaces/own/properties", json={"updates": {"k": "v"}}),
    ),
    Op(
        "create namespace in own",
        frozenset({"create"}),
        lambda p, w: p.post("/v1/namespaces", json={"namespace": ["own", "child"]}),
        cleanup=lambda w: w.drop_namespace("own", "child"),
    ),
    Op(
        "create top-level namespace",
        frozenset({"create"}),
        lambda p, w: p.post("/v1/namespaces", json={"namespace": ["top"]}),
        cleanup=lambda w: w.drop_namespace("top"),
        catalog_only=True,
    ),
    Op(
        "drop namespace",
        frozenset({"drop", "purge"}),
        lambda p, w: p.delete("/v1/namespaces/own%1Fempty"),
        setup=lambda w: w.ensure_namespace("own", "empty"),
    ),
    Op("list tables", ANY, lambda p, w: p.get("/v1/namespaces/own/tables")),
    Op("table etags", ANY, lambda p, w: p.get("/v1/mt/table-etags", params={"namespace": "own"})),
    Op(
        "create table",
        frozenset({"create"}),
        lambda p, w: p.post("/v1/namespaces/own/tables", json={"name": "new", "schema": SCHEMA}),
        cleanup=lambda w: w.gone("/v1/namespaces/own/tables/new"),
    ),
    Op(
        "stage-create table",
        frozenset({"create"}),
        lambda p, w: p.post("/v1/namespaces/own/tables", json={"name": "st", "schema": SCHEMA, "stage-create": True}),
    ),
    Op(
        "create table by commit",
        frozenset({"create"}),
        _staged_create,
        cleanup=lambda w: w.gone("/v1/namespaces/own/tables/cc"),
    ),
    Op("load table", READ, lambda p, w: p.get("/v1/namespaces/own/tables/t")),
    Op("table exists", READ, lambda p, w: p.head("/v1/namespaces/own/tables/t")),
    Op(
        "load table for its data",
        frozenset({"read-data", "write"}),
        lambda p, w: p.get(
            "/v1/namespaces/own/tables/t", headers={"X-Iceberg-Access-Delegation": "vended-credentials"}
        ),
    ),
    Op(
        "load credentials",
        frozenset({"read-data", "write"}),
        lambda p, w: p.get("/v1/namespaces/own/tables/t/credentials"),
    ),
    Op(
        "report metrics",
        READ,
        lambda p, w: p.post("/v1/namespaces/own/tables/t/metrics", json={"report-type": "scan-report"}),
    ),
    Op("commit", frozenset({"write"}), lambda p, w: p.post("/v1/namespaces/own/tables/t", json=SET_PROPERTY)),
    Op(
        "commit a transaction",
        frozenset({"write"}),
        lambda p, w: p.post(
            "/v1/transactions/commit",
            json={"table-changes": [{**SET_PROPERTY, "identifier": {"namespace": ["own"], "name": "t"}}]},
        ),
    ),
    Op(
        "drop table",
        frozenset({"drop", "purge"}),
        lambda p, w: p.delete("/v1/namespaces/own/tables/d"),
        setup=lambda w: w.ensure_table("own", "d"),
    ),
    Op(
        "purge table",
        frozenset({"purge"}),
        lambda p, w: p.delete("/v1/namespaces/own/tables/d", params={"purgeRequested": "true"}),
        setup=lambda w: w.ensure_table("own", "d"),
    ),
    Op(
        "register table",
        frozenset({"create"}),
        lambda p, w: p.post("/v1/namespaces/own/register", json={"name": "reg", "metadata-location": w.dropped_table}),
        cleanup=lambda w: w.gone("/v1/namespaces/own/tables/reg"),
    ),
    Op(
        "rename table",
        frozenset(),
        lambda p, w: p.post(
            "/v1/tables/rename",
            json={"source": {"namespace": ["own"], "name": "r1"}, "destination": {"namespace": ["own"], "name": "r2"}},
        ),
        setup=lambda w: (w.gone("/v1/namespaces/own/tables/r2"), w.ensure_table("own", "r1")) and None,
    ),
    Op("list views", ANY, lambda p, w: p.get("/v1/namespaces/own/views")),
    Op(
        "create view",
        frozenset({"create"}),
        lambda p, w: p.post(
            "/v1/namespaces/own/views",
            json={"name": "nv", "schema": {**SCHEMA, "schema-id": 0}, "view-version": VIEW_VERSION},
        ),
        cleanup=lambda w: w.gone("/v1/namespaces/own/views/nv"),
    ),
    Op("load view", READ, lambda p, w: p.get("/v1/namespaces/own/views/v")),
    Op("view exists", READ, lambda p, w: p.head("/v1/namespaces/own/views/v")),
    Op(
        "replace view",
        frozenset({"write"}),
        lambda p, w: p.post(
            "/v1/namespaces/own/views/v", json={"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
        ),
    ),
    Op(
        "drop view",
        frozenset({"drop", "purge"}),
        lambda p, w: p.delete("/v1/namespaces/own/views/dv"),
        setup=lambda w: w.ensure_view("own", "dv"),
    ),
    Op(
        "register view",
        frozenset({"create"}),
        lambda p, w: p.post(
            "/v1/namespaces/own/register-view", json={"name": "rv", "metadata-location": w.dropped_view}
        ),
        cleanup=lambda w: w.gone("/v1/namespaces/own/views/rv"),
    ),
    Op(
        "rename view",
        frozenset(),
        lambda p, w: p.post(
            "/v1/views/rename",
            json={"source": {"namespace": ["own"], "name": "v1"}, "destination": {"namespace": ["own"], "name": "v2"}},
        ),
        setup=lambda w: (w.gone("/v1/namespaces/own/views/v2"), w.ensure_view("own", "v1")) and None,
    ),
    Op("grant on own", frozenset({"manage-grants"}), lambda p, w: p.post("/v1/mt/grants", json=GRANT_ON_OWN)),
    Op("list principals", frozenset({"manage-grants"}), lambda p, w: p.get("/v1/mt/principals"), catalog_only=True),
    Op(
        "create principal",
        frozenset({"manage-grants"}),
        lambda p, w: p.post("/v1/mt/principals", json={"name": f"made{len(w.extra)}"}),
        setup=lambda w: w.extra.update({str(len(w.extra)): ""}),
        catalog_only=True,
    ),
    Op(
        "revoke a principal",
        frozenset({"manage-grants"}),
        lambda p, w: p.post("/v1/mt/principals/bystander/revoke", json={}),
        catalog_only=True,
    ),
    Op(
        "rotate another's token",
        frozenset({"manage-grants"}),
        lambda p, w: p.post("/v1/mt/principals/bystander/rotate", json={}),
        catalog_only=True,
    ),
    Op("list roles", frozenset({"manage-grants"}), lambda p, w: p.get("/v1/mt/roles"), catalog_only=True),
    Op(
        "create role",
        frozenset({"manage-grants"}),
        lambda p, w: p.post("/v1/mt/roles", json={"name": "made_role"}),
        cleanup=lambda w: w.admin.delete("/v1/mt/roles/made_role") and None,
        catalog_only=True,
    ),
    Op(
        "give a role",
        frozenset({"manage-grants"}),
        lambda p, w: p.post("/v1/mt/roles/other_role/members", json={"principal": "bystander"}),
        cleanup=lambda w: ok(
            w.admin.post("/v1/mt/roles/other_role/members", json={"principal": "bystander", "member": False})
        ),
        catalog_only=True,
    ),
]


def _databases() -> list[Any]:
    reason = missing_reason()
    return [
        "sqlite",
        pytest.param(
            "postgresql", marks=[pytest.mark.slow, pytest.mark.skipif(reason is not None, reason=reason or "")]
        ),
    ]


@pytest.fixture(scope="module", params=_databases())
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp(f"matrix_{request.param}")
    with _database(request.param, folder) as url:
        admin = client(url, folder / "warehouse")
        for levels in (["own"], ["other"]):
            ok(admin.post("/v1/namespaces", json={"namespace": levels}))
        for ns in ("own", "other"):
            create_table(admin, ns, "t")
        create_view(admin, "own", "v")
        source = create_table(admin, "own", "src")
        ok(admin.delete("/v1/namespaces/own/tables/src"))  # its metadata is no other table's: registrable
        view = create_view(admin, "own", "srcv")
        ok(admin.delete("/v1/namespaces/own/views/srcv"))
        probe = new_principal(admin, "probe", ROLE)
        new_principal(admin, "bystander", "other_role")
        yield World(request.param, admin, probe, source["metadata-location"], view["metadata-location"])


def _database(kind: str, folder: Path) -> Any:
    from contextlib import nullcontext

    return postgres_cluster() if kind == "postgresql" else nullcontext(f"sqlite:///{folder}/catalog.db")


def _expected(op: Op, privilege: str, place: str) -> bool:
    if op.anyone:
        return True
    if privilege not in op.passes or place == "other":
        return False
    return place == "catalog" or not op.catalog_only


def _attempt(op: Op, w: World) -> int:
    op.setup(w)
    try:
        return int(op.act(w.probe, w).status_code)
    finally:
        op.cleanup(w)


ON_POSTGRES = frozenset(
    {"load table", "commit", "commit a transaction", "create table", "drop table", "purge table", "register table"}
)
"""The operations the PostgreSQL run repeats (the database's rows and transactions; the rules are the same code)."""


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_each_privilege_alone(world: World, op: Op) -> None:
    w = world
    if w.database == "postgresql" and op.name not in ON_POSTGRES:
        pytest.skip("the whole matrix runs on SQLite; on PostgreSQL the table operations")
    before = _attempt(op, w)
    assert (before < 300) if op.anyone else before == 403, f"{op.name} without any grant: {before}"
    for place, on in PLACES.items():
        # each sufficient privilege alone; the insufficient ones all at once (grants only ever add, so if their
        # union is refused, each alone is): every privilege is tried, in fewer requests
        enough = sorted(p for p in ANY if _expected(op, p, place))
        rounds = [[p] for p in enough] + ([sorted(ANY - set(enough))] if len(enough) < len(ANY) else [])
        if not op.passes and not op.anyone:  # it needs two together (a rename): each alone, never their union
            rounds = [[p] for p in sorted(ANY)]
        for privileges in rounds:
            for privilege in privileges:
                grant(w.admin, ROLE, privilege, on)
            try:
                status = _attempt(op, w)
                expected = any(_expected(op, privilege, place) for privilege in privileges)
                assert (status < 300) if expected else status == 403, (
                    f"{op.name} with {privileges} on {place}: {status}"
                )
            finally:
                for privilege in privileges:
                    grant(w.admin, ROLE, privilege, on, granted=False)
            if expected and not op.anyone:
                assert _attempt(op, w) == 403, f"{op.name} after {privileges} on {place} was revoked"


@pytest.mark.parametrize("kind", ["tables", "views"])
def test_a_rename_needs_drop_on_the_source_and_create_in_the_destination(world: World, kind: str) -> None:
    op = next(op for op in OPS if op.name == f"rename {kind[:-1]}")
    grant(world.admin, ROLE, "drop", PLACES["own"])
    grant(world.admin, ROLE, "create", PLACES["other"])
    try:
        assert _attempt(op, world) == 403  # create on another namespace is not create here
        grant(world.admin, ROLE, "create", PLACES["own"])
        assert _attempt(op, world) < 300
    finally:
        for privilege, place in (("drop", "own"), ("create", "other"), ("create", "own")):
            grant(world.admin, ROLE, privilege, PLACES[place], granted=False)
    assert _attempt(op, world) == 403


def test_a_refusal_names_the_grant_and_who_may_give_it(world: World) -> None:
    ok(world.admin.post("/v1/mt/roles", json={"name": "stewards"}))
    steward = new_principal(world.admin, "steward", "steward_role")
    ok(world.admin.post("/v1/mt/roles/stewards/members", json={"principal": "steward"}))
    grant(world.admin, "stewards", "manage-grants", PLACES["own"])
    answer = world.probe.delete("/v1/namespaces/own/tables/t", params={"purgeRequested": "true"})
    assert answer.status_code == 403
    message = answer.json()["error"]["message"]
    assert "Principal 'probe' lacks purge on table own.t" in message
    assert "Fix: ask steward or admin" in message and "grants add <role> purge --table own.t" in message
    # and the steward may give it, on its namespace only
    ok(
        steward.post(
            "/v1/mt/grants", json={"role": ROLE, "privilege": "purge", "on": {"type": "table", "name": ["own", "t"]}}
        )
    )
    assert steward.post("/v1/mt/grants", json={**GRANT_ON_OWN, "on": PLACES["other"]}).status_code == 403
    ok(
        steward.post(
            "/v1/mt/grants/revoke",
            json={"role": ROLE, "privilege": "purge", "on": {"type": "table", "name": ["own", "t"]}},
        )
    )


def test_a_token_revoked_or_rotated_stops_working_at_once(world: World) -> None:
    grant(world.admin, ROLE, "read-metadata", PLACES["own"])
    try:
        assert world.probe.get("/v1/namespaces/own/tables/t").status_code == 200
        new = ok(world.admin.post("/v1/mt/principals/probe/rotate", json={}))["token"]
        assert world.probe.get("/v1/namespaces/own/tables/t").status_code == 401
        rotated = as_principal(world.admin, new)
        assert rotated.get("/v1/namespaces/own/tables/t").status_code == 200
        ok(world.admin.post("/v1/mt/principals/probe/revoke", json={}))
        assert rotated.get("/v1/namespaces/own/tables/t").status_code == 401
        world.probe.headers["Authorization"] = (
            "Bearer " + ok(world.admin.post("/v1/mt/principals/probe/rotate", json={}))["token"]
        )
    finally:
        grant(world.admin, ROLE, "read-metadata", PLACES["own"], granted=False)
    assert ADMIN_TOKEN not in str(ok(world.admin.get("/v1/mt/principals")))

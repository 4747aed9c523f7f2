"""mt_magic's own routes (not in the Iceberg REST spec) for who may do what, and the audit log.

``/v1/mt/principals`` (create, list, rotate, revoke), ``/v1/mt/roles`` (create, list, drop, members),
``/v1/mt/grants`` (list, grant, revoke), ``/v1/mt/whoami``, ``/v1/mt/privileges`` (what the caller lacks of a list
of needs, and who may grant each: CREATE MATERIALIZED TABLE asks before it writes anything) and ``/v1/mt/audit``.
What each needs is in :data:`~mt_magic.catalog.server.authz.RULES`; ``python -m mt_magic.catalog principals|roles|
grants|audit`` is their client.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, Field

from mt_magic.catalog.privileges import Privilege, Securable, parse_privilege
from mt_magic.catalog.server import audit
from mt_magic.catalog.server.access_snapshot import Grant, grants_of
from mt_magic.catalog.server.authz import Authorized, Caller, Need, authorize
from mt_magic.catalog.server.errors_http import BadRequest
from mt_magic.catalog.server.service import CatalogService, raw_body, service
from mt_magic.catalog.server.wire import parse_body

router = APIRouter(prefix="/v1/mt", dependencies=[Depends(authorize)])
Svc = Annotated[CatalogService, Depends(service)]
Body = Annotated[bytes, Depends(raw_body)]


class PrincipalBody(BaseModel):
    name: str
    kind: str = "person"


class RoleBody(BaseModel):
    name: str


class MemberBody(BaseModel):
    principal: str
    member: bool = True


class GrantBody(BaseModel):
    role: str
    privilege: str
    on: dict[str, Any]


class NeedBody(BaseModel):
    privilege: str
    on: dict[str, Any]


class PrivilegesBody(BaseModel):
    needs: list[NeedBody] = Field(default_factory=list)


def _grant(body: GrantBody) -> Grant:
    try:
        return Grant(body.role, parse_privilege(body.privilege), Securable.from_json(body.on))
    except ValueError as exc:
        raise BadRequest(f"Invalid grant: {exc}") from None


@router.get("/whoami")
def whoami(caller: Authorized) -> dict[str, Any]:
    snapshot = caller.snapshot
    roles = sorted(snapshot.roles_of.get(caller.principal, ())) if snapshot is not None else []
    return {"principal": caller.principal, "admin": caller.admin, "roles": roles}


@router.post("/privileges")
def privileges(svc: Svc, caller: Authorized, raw: Body) -> dict[str, Any]:
    """Which of the needs the caller lacks, each with who may grant it (the admin: none)."""
    body = parse_body(raw, PrivilegesBody)
    try:
        needs = [Need(parse_privilege(n.privilege), Securable.from_json(n.on)) for n in body.needs]
    except ValueError as exc:
        raise BadRequest(f"Invalid privilege check: {exc}") from None
    snapshot = caller.snapshot or svc.access.snapshot()
    missing = [
        {"privilege": str(n.privilege), "on": n.on.to_json(), "grantors": snapshot.grantors(n.on)}
        for n in needs
        if not caller.allowed(n)
    ]
    return {"principal": caller.principal, "missing": missing}


@router.get("/principals")
def list_principals(svc: Svc) -> dict[str, Any]:
    return {"principals": svc.access.list_principals()}


@router.post("/principals")
def create_principal(svc: Svc, raw: Body) -> dict[str, Any]:
    body = parse_body(raw, PrincipalBody)
    return {"name": body.name, "kind": body.kind, "token": svc.access.create_principal(body.name, body.kind)}


@router.post("/principals/{name}/rotate")
def rotate_principal(svc: Svc, name: str) -> dict[str, Any]:
    return {"name": name, "token": svc.access.rotate(name)}


@router.post("/principals/{name}/revoke", status_code=204)
def revoke_principal(svc: Svc, name: str) -> Response:
    svc.access.revoke(name)
    return Response(status_code=204)


@router.get("/roles")
def list_roles(svc: Svc) -> dict[str, Any]:
    snapshot = svc.access.snapshot()
    members: dict[str, list[str]] = {role: [] for role in snapshot.roles}
    for principal, roles in snapshot.roles_of.items():
        for role in roles:
            members.setdefault(role, []).append(principal)
    return {"roles": [{"name": role, "principals": sorted(members[role])} for role in sorted(members)]}


@router.post("/roles", status_code=204)
def create_role(svc: Svc, raw: Body) -> Response:
    svc.access.create_role(parse_body(raw, RoleBody).name)
    return Response(status_code=204)


@router.delete("/roles/{name}", status_code=204)
def drop_role(svc: Svc, name: str) -> Response:
    svc.access.drop_role(name)
    return Response(status_code=204)


@router.post("/roles/{name}/members", status_code=204)
def role_members(svc: Svc, name: str, raw: Body) -> Response:
    body = parse_body(raw, MemberBody)
    svc.access.assign(name, body.principal, body.member)
    return Response(status_code=204)


def _manages(caller: Caller, on: Securable) -> bool:
    return caller.holds(Privilege.MANAGE_GRANTS, on)


@router.get("/grants")
def list_grants(svc: Svc, caller: Authorized, role: Annotated[str | None, Query()] = None) -> dict[str, Any]:
    """The grants the caller manages, and those of its own roles."""
    snapshot = caller.snapshot or svc.access.snapshot()
    own = snapshot.roles_of.get(caller.principal, frozenset())
    shown = [
        g.to_json()
        for g in grants_of(snapshot, None if role is None else [role])
        if caller.admin or g.role in own or _manages(caller, g.on)
    ]
    return {"grants": shown}


@router.post("/grants", status_code=204)
def add_grant(svc: Svc, raw: Body) -> Response:
    svc.access.grant(_grant(parse_body(raw, GrantBody)), True)
    return Response(status_code=204)


@router.post("/grants/revoke", status_code=204)
def revoke_grant(svc: Svc, raw: Body) -> Response:
    svc.access.grant(_grant(parse_body(raw, GrantBody)), False)
    return Response(status_code=204)


def _shown(caller: Caller, entry: audit.AuditEntry) -> bool:
    if caller.admin:
        return True
    if entry.action in audit.ACCESS_ACTIONS:
        return entry.principal == caller.principal or _manages(caller, entry.on)
    return caller.holds(Privilege.READ_METADATA, entry.on)


@router.get("/audit")
def read_audit(
    svc: Svc,
    caller: Authorized,
    after_id: Annotated[int, Query(alias="after-id")] = 0,
    since_ms: Annotated[int, Query(alias="since-ms")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    principal: Annotated[str | None, Query()] = None,
    table: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    """The newest changes the caller may know of (changes to objects it may read; grants it manages), newest first;
    ``principal`` and ``table`` (dotted, a namespace or a table) narrow them."""
    shown: list[dict[str, Any]] = []
    before_id: int | None = None
    while len(shown) < limit:
        batch = audit.read(svc.catalog.engine, after_id=after_id, since_ms=since_ms, limit=500, before_id=before_id)
        for entry in batch:
            if principal is not None and entry.principal != principal:
                continue
            if table is not None and ".".join(entry.on.parts) != table and not _under(entry.on, table):
                continue
            if _shown(caller, entry):
                shown.append(entry.to_json())
                if len(shown) == limit:
                    break
        if len(batch) < 500:
            break
        before_id = batch[-1].id
    return {"entries": shown}


def _under(on: Securable, dotted: str) -> bool:
    return ".".join(on.parts).startswith(dotted + ".")

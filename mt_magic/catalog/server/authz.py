"""The one authorizer: who the caller is, and whether it may do what the route it reached does.

Every route depends on :func:`authorize` (routers and the config route declare it; a test walks the app's routes
and fails on one without it or without a rule). :data:`RULES` maps each route (method and path template) to what it
needs — privileges on objects, read from the path, the query and, where the object is named there, the body. A
route listing things needs only to *see* the place it lists (hold something on it, above it or inside it) and shows
only what the caller may read. The server's own token is the admin (:data:`~mt_magic.catalog.privileges.ADMIN`),
allowed everything without a database read; a principal's token is checked against the access snapshot
(:class:`~mt_magic.catalog.server.access_store.AccessStore`).

A refusal is ``403 ForbiddenException`` naming the principal, the privilege missing, the object, and who may grant
it, as ``… Fix: …`` so clients show it as mt_magic's errors read.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from mt_magic.catalog.privileges import ADMIN, CATALOG, Privilege, Securable, either, grant_command, namespace, table
from mt_magic.catalog.server import lease_rules
from mt_magic.catalog.server.access_snapshot import AccessSnapshot
from mt_magic.catalog.server.audit import Actor, current_actor
from mt_magic.catalog.server.edge import parse_json
from mt_magic.catalog.server.errors_http import RestError
from mt_magic.catalog.server.service import CatalogService, raw_body
from mt_magic.catalog.server.storage_credentials import delegation_wanted
from mt_magic.catalog.server.wire import check_namespace, identifier, namespace_from_path

SEE = None
"""In a :class:`Need`: hold anything on the object, above it or inside it (what a listing needs)."""


@dataclass(frozen=True)
class Need:
    """A privilege (or :data:`SEE`) the request needs on an object."""

    privilege: Privilege | None
    on: Securable

    def __str__(self) -> str:
        return f"{self.privilege.value if self.privilege else 'any privilege'} on {self.on}"


@dataclass(frozen=True)
class Caller:
    """The authenticated principal of a request, the snapshot it was decided on, and where it came from."""

    principal: str
    snapshot: AccessSnapshot | None
    actor: Actor

    @property
    def admin(self) -> bool:
        return self.principal == ADMIN

    def holds(self, privilege: Privilege, on: Securable) -> bool:
        return self.admin or (self.snapshot is not None and self.snapshot.holds(self.principal, privilege, on))

    def sees(self, on: Securable) -> bool:
        return self.admin or (self.snapshot is not None and self.snapshot.sees(self.principal, on))

    def reads(self, ident: tuple[str, ...]) -> bool:
        """Whether a listing shows this table or view: read-metadata on it (the lease table: to everyone)."""
        return ident == lease_rules.LEASES or self.holds(Privilege.READ_METADATA, table(*ident))

    def allowed(self, need: Need) -> bool:
        return self.sees(need.on) if need.privilege is SEE else self.holds(need.privilege, need.on)


class Facts:
    """What a rule reads of a request: path and query parameters, headers, the body (parsed on first use) and the
    catalog (for the lease table's current map)."""

    def __init__(self, request: Request, raw: bytes, svc: CatalogService, caller: Caller) -> None:
        self.caller = caller
        self.principal = caller.principal
        self.path: Mapping[str, str] = request.path_params
        self.query = request.query_params
        self.headers = request.headers
        self.raw = raw
        self.svc = svc
        self._body: Any = None

    def body(self) -> dict[str, Any]:
        if self._body is None:
            parsed = parse_json(self.raw)
            self._body = parsed if isinstance(parsed, dict) else {}
        return self._body

    def namespace(self) -> tuple[str, ...]:
        return namespace_from_path(self.path["namespace"])

    def object(self, key: str = "table") -> tuple[str, ...]:
        return identifier(self.namespace(), self.path[key])


Rule = Callable[[Facts], Sequence[Need]]


def _anyone(_: Facts) -> Sequence[Need]:
    return ()


def _on_namespace(privilege: Privilege | None) -> Rule:
    return lambda f: [Need(privilege, namespace(*f.namespace()))]


def _on_object(privilege: Privilege | None, key: str = "table") -> Rule:
    return lambda f: [Need(privilege, table(*f.object(key)))]


def _list_namespaces(f: Facts) -> Sequence[Need]:
    parent = f.query.get("parent")
    return [Need(SEE, namespace(*namespace_from_path(parent)) if parent else CATALOG)]


def _parent(ns: tuple[str, ...]) -> Securable:
    return namespace(*ns[:-1]) if len(ns) > 1 else CATALOG


def _create_namespace(f: Facts) -> Sequence[Need]:
    body = f.body()
    ns = check_namespace(body.get("namespace"))
    if ns == (lease_rules.LEASES[0],) and not body.get("properties"):
        return ()
    if f.caller.sees(namespace(*ns)) and f.svc.namespaces.exists(ns):
        return ()  # the route answers 409: what "create if not exists" expects of a namespace it may use
    return [Need(Privilege.CREATE, _parent(ns))]


def _create_table(f: Facts) -> Sequence[Need]:
    body = f.body()
    ident = identifier(f.namespace(), str(body.get("name", "")))
    if ident == lease_rules.LEASES and lease_rules.is_plain_lease_table(body):
        return ()
    needs = [Need(Privilege.CREATE, namespace(*ident[:-1]))]
    if f.svc.vendor is not None and delegation_wanted(f.headers.get("x-iceberg-access-delegation")):
        needs.append(Need(Privilege.READ_DATA, table(*ident)))  # the credentials it asks for read the new table
    return needs


def _load_table(f: Facts) -> Sequence[Need]:
    ident = f.object()
    if ident == lease_rules.LEASES:
        return ()
    delegated = "x-iceberg-access-delegation" in f.headers
    return [Need(Privilege.READ_DATA if delegated else Privilege.READ_METADATA, table(*ident))]


def _asserts_create(change: Mapping[str, Any]) -> bool:
    requirements = change.get("requirements") or []
    return isinstance(requirements, list) and any(
        isinstance(r, dict) and r.get("type") == "assert-create" for r in requirements
    )


def _change_needs(ident: tuple[str, ...], change: Mapping[str, Any], f: Facts) -> list[Need]:
    if _asserts_create(change):
        return [Need(Privilege.CREATE, namespace(*ident[:-1]))]
    if ident == lease_rules.LEASES:
        _, metadata = f.svc.tables.load(ident)
        return [Need(Privilege.WRITE, on) for on in lease_rules.commit_needs(change, metadata)]
    return [Need(Privilege.WRITE, table(*ident))]


def _commit_table(f: Facts) -> Sequence[Need]:
    ident = f.object()
    if ident != lease_rules.LEASES and b"assert-create" not in f.raw:  # most commits: no need to parse the body
        return [Need(Privilege.WRITE, table(*ident))]
    return _change_needs(ident, f.body(), f)


def _commit_transaction(f: Facts) -> Sequence[Need]:
    changes = f.body().get("table-changes")
    needs: list[Need] = []
    for change in changes if isinstance(changes, list) else []:
        wire = change.get("identifier") if isinstance(change, dict) else None
        if not isinstance(wire, dict):
            continue  # refused by the route's own validation (400)
        ident = identifier(tuple(wire.get("namespace") or ()), str(wire.get("name", "")))
        if ident == lease_rules.LEASES:
            needs.append(Need(Privilege.WRITE, lease_rules.LEASE_TABLE_OBJECT))
        else:
            needs.extend(_change_needs(ident, change, f))
    return needs


def _drop_table(f: Facts) -> Sequence[Need]:
    purge = f.query.get("purgeRequested", "false").lower() in ("true", "1", "yes", "on")
    return [Need(Privilege.PURGE if purge else Privilege.DROP, table(*f.object()))]


def _register(f: Facts) -> Sequence[Need]:
    body = f.body()
    ident = identifier(f.namespace(), str(body.get("name", "")))
    needs = [Need(Privilege.CREATE, namespace(*ident[:-1]))]
    if body.get("overwrite") is True:
        needs.append(Need(Privilege.WRITE, table(*ident)))
    return needs


def _rename(f: Facts) -> Sequence[Need]:
    body = f.body()
    source, destination = body.get("source"), body.get("destination")
    if not isinstance(source, dict) or not isinstance(destination, dict):
        return [Need(Privilege.DROP, CATALOG)]  # malformed: only the admin gets as far as the route's 400
    src = identifier(tuple(source.get("namespace") or ()), str(source.get("name", "")))
    dst = identifier(tuple(destination.get("namespace") or ()), str(destination.get("name", "")))
    return [Need(Privilege.DROP, table(*src)), Need(Privilege.CREATE, namespace(*dst[:-1]))]


def _table_etags(f: Facts) -> Sequence[Need]:
    wanted = f.query.get("namespace")
    return [Need(SEE, namespace(*namespace_from_path(wanted)) if wanted is not None else CATALOG)]


def _own_or_manager(f: Facts) -> Sequence[Need]:
    """A principal rotates its own token; anyone else's needs manage-grants on the catalog."""
    return () if f.path.get("name") == f.principal else _MANAGE


def _grant(f: Facts) -> Sequence[Need]:
    try:
        on = Securable.from_json(f.body().get("on"))
    except ValueError as exc:
        raise RestError(400, "BadRequestException", f"Invalid grant: {exc}") from None
    return [Need(Privilege.MANAGE_GRANTS, on)]


_MANAGE = [Need(Privilege.MANAGE_GRANTS, CATALOG)]
TABLE = "/v1/namespaces/{namespace:path}/tables/{table:path}"
VIEW = "/v1/namespaces/{namespace:path}/views/{view:path}"
NS = "/v1/namespaces/{namespace:path}"

RULES: dict[tuple[str, str], Rule] = {
    ("GET", "/v1/config"): _anyone,
    ("GET", "/v1/namespaces"): _list_namespaces,
    ("POST", "/v1/namespaces"): _create_namespace,
    ("GET", NS): _on_namespace(Privilege.READ_METADATA),
    ("HEAD", NS): _on_namespace(SEE),
    ("DELETE", NS): _on_namespace(Privilege.DROP),
    ("POST", NS + "/properties"): _on_namespace(Privilege.WRITE),
    ("GET", NS + "/tables"): _on_namespace(SEE),
    ("POST", NS + "/tables"): _create_table,
    ("GET", TABLE): _load_table,
    ("HEAD", TABLE): _load_table,
    ("POST", TABLE): _commit_table,
    ("DELETE", TABLE): _drop_table,
    ("POST", TABLE + "/metrics"): _load_table,
    ("GET", TABLE + "/credentials"): _on_object(Privilege.READ_DATA),
    ("POST", NS + "/register"): _register,
    ("POST", "/v1/tables/rename"): _rename,
    ("POST", "/v1/transactions/commit"): _commit_transaction,
    ("GET", "/v1/mt/table-etags"): _table_etags,
    ("GET", NS + "/views"): _on_namespace(SEE),
    ("POST", NS + "/views"): _on_namespace(Privilege.CREATE),
    ("GET", VIEW): _on_object(Privilege.READ_METADATA, "view"),
    ("HEAD", VIEW): _on_object(Privilege.READ_METADATA, "view"),
    ("POST", VIEW): _on_object(Privilege.WRITE, "view"),
    ("DELETE", VIEW): _on_object(Privilege.DROP, "view"),
    ("POST", "/v1/views/rename"): _rename,
    ("POST", NS + "/register-view"): _on_namespace(Privilege.CREATE),
    ("GET", "/v1/mt/whoami"): _anyone,
    ("POST", "/v1/mt/privileges"): _anyone,
    ("GET", "/v1/mt/audit"): _anyone,
    ("GET", "/v1/mt/grants"): _anyone,
    ("POST", "/v1/mt/grants"): _grant,
    ("POST", "/v1/mt/grants/revoke"): _grant,
    ("GET", "/v1/mt/principals"): lambda f: _MANAGE,
    ("POST", "/v1/mt/principals"): lambda f: _MANAGE,
    ("POST", "/v1/mt/principals/{name}/rotate"): _own_or_manager,
    ("POST", "/v1/mt/principals/{name}/revoke"): lambda f: _MANAGE,
    ("GET", "/v1/mt/roles"): lambda f: _MANAGE,
    ("POST", "/v1/mt/roles"): lambda f: _MANAGE,
    ("DELETE", "/v1/mt/roles/{name}"): lambda f: _MANAGE,
    ("POST", "/v1/mt/roles/{name}/members"): lambda f: _MANAGE,
}
"""Route (method, path template) -> what it needs. Listings (``SEE``) show only what the caller may read."""


def refusal(principal: str, missing: Sequence[Need], snapshot: AccessSnapshot | None) -> RestError:
    """The 403 for the first missing need: the principal, what it lacks on what, who may grant it, the command."""
    need = missing[0]
    grantors = snapshot.grantors(need.on) if snapshot is not None else [ADMIN]
    above = [str(s) for s in reversed(need.on.chain()[:-1])]
    inherited = f" (or on {either(above)})" if above else ""
    more = f"; it lacks {len(missing) - 1} more grant(s) for this request" if len(missing) > 1 else ""
    command = grant_command(need.privilege or Privilege.READ_METADATA, need.on)
    message = (
        f"Principal {principal!r} lacks {need}{inherited}{more}. "
        f"Fix: ask {either(grantors)} to grant it to one of its roles ({command})."
    )
    return RestError(403, "ForbiddenException", message)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header or not header.lower().startswith("bearer "):
        return None
    return header[7:].strip() or None


NOT_AUTHENTICATED = "Not authorized: send the catalog token as 'Authorization: Bearer <token>'"


def authenticate(request: Request) -> tuple[str, AccessSnapshot | None]:
    """The caller's principal (and the access snapshot, when it needed one).

    Raises:
        RestError: 401 without a valid token. A server without a token of its own (``--insecure-no-auth``)
            authenticates nobody: a request is the admin's unless it carries a principal's token (a client's own
            token, e.g. a shared environment's, is no reason to refuse it, as it was not before principals).
    """
    svc: CatalogService = request.app.state.service
    admin_token: str | None = request.app.state.admin_token
    token = _bearer(request)
    if token is not None and admin_token and hmac.compare_digest(token.encode(), admin_token.encode()):
        return ADMIN, None
    if token is None and not admin_token:
        return ADMIN, None
    snapshot = svc.access.snapshot()
    principal = snapshot.principal_of(token) if token is not None else None
    if principal is None and not admin_token:
        return ADMIN, None
    if principal is None:
        raise RestError(401, "NotAuthorizedException", NOT_AUTHENTICATED)
    return principal, snapshot


def decide(request: Request, raw: Annotated[bytes, Depends(raw_body)]) -> Caller:
    """FastAPI dependency (run in the thread pool: it may read the database): the caller, authorized for the route.

    Raises:
        RestError: 401 (no valid token), 403 (a need not held, or a route without a rule: closed by default).
    """
    route = request.scope.get("route")
    rule = RULES.get((request.method, getattr(route, "path", "")))
    if rule is None:
        raise RestError(403, "ForbiddenException", f"No authorization rule for {request.method} {request.url.path}")
    principal, snapshot = authenticate(request)
    client = request.client
    actor = Actor(principal, f"{client.host}:{client.port}" if client else "", request.headers.get("user-agent", ""))
    caller = Caller(principal, snapshot, actor)
    if caller.admin:
        return caller
    needs = rule(Facts(request, raw, request.app.state.service, caller))
    missing = [need for need in needs if not caller.allowed(need)]
    if missing:
        raise refusal(principal, missing, snapshot)
    return caller


async def authorize(caller: Annotated[Caller, Depends(decide)]) -> None:
    """The dependency every route declares: :func:`decide`, then the actor its changes are audited under."""
    current_actor.set(caller.actor)


Authorized = Annotated[Caller, Depends(decide)]
"""A route parameter for the caller (the same one :func:`authorize` decided: FastAPI solves a dependency once)."""

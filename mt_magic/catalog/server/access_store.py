"""Principals, roles and grants in the catalog's database; the snapshot requests are decided on is loaded here.

* A **principal** (a person or a service) has one token at a time (:mod:`.access_snapshot`), shown once when it
  is created or rotated.
* A **role** holds grants (:class:`~mt_magic.catalog.privileges.Privilege` on a
  :class:`~mt_magic.catalog.privileges.Securable`); principals are given roles.
* Every change bumps one version number in the same transaction, and writes its audit row there too. A request
  reads that number (one indexed row) unless it was read in the last :data:`REVALIDATE_SECONDS`, and the snapshot
  is reloaded only when it moved: a change made through this server holds from its next request, one made through
  another server process on the same database within :data:`REVALIDATE_SECONDS`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, delete, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from mt_magic.catalog.privileges import ADMIN, CATALOG, Kind, Privilege, Securable, check_name
from mt_magic.catalog.server import audit
from mt_magic.catalog.server.access_snapshot import AccessSnapshot, Grant, new_token
from mt_magic.catalog.server.errors_http import RestError

_META = MetaData()
PRINCIPALS = Table(
    "mt_principals",
    _META,
    Column("name", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("key_id", String(32), nullable=True, unique=True),
    Column("token_sha256", String(64), nullable=True),
    Column("created_ms", BigInteger, nullable=False),
    Column("rotated_ms", BigInteger, nullable=True),
    Column("revoked_ms", BigInteger, nullable=True),
)
ROLES = Table("mt_roles", _META, Column("name", String(64), primary_key=True), Column("created_ms", BigInteger))
MEMBERS = Table(
    "mt_role_members",
    _META,
    Column("role", String(64), primary_key=True),
    Column("principal", String(64), primary_key=True),
)
GRANTS = Table(
    "mt_grants",
    _META,
    Column("role", String(64), primary_key=True),
    Column("privilege", String(32), primary_key=True),
    Column("object_type", String(16), primary_key=True),
    Column("object", String(1000), primary_key=True),
)
VERSION = Table("mt_access_version", _META, Column("id", Integer, primary_key=True), Column("version", BigInteger))

REVALIDATE_SECONDS = 0.5
"""How long a principal's requests trust the access version read last (a refresh makes a burst of requests)."""
PRINCIPAL_KINDS = ("person", "service")


def _object_key(on: Securable) -> str:
    return json.dumps(list(on.parts))


def _not_found(message: str) -> RestError:
    return RestError(404, "NotFoundException", message)


def _conflict(message: str) -> RestError:
    return RestError(409, "AlreadyExistsException", message)


class AccessStore:
    """The principals, roles and grants of one catalog database; writes are audited (:mod:`.audit`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._snapshot: AccessSnapshot | None = None
        self._checked = 0.0
        """When the version was last read (monotonic)."""

    def create_tables(self) -> None:
        """Create the tables (and the audit's) unless they exist, with the version row."""
        _META.create_all(self.engine)
        audit.create_audit_table(self.engine)
        with self.engine.connect() as conn:
            if conn.execute(select(VERSION.c.version).where(VERSION.c.id == 1)).first() is not None:
                return
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(VERSION).values(id=1, version=0))
        except IntegrityError:  # another server process inserted it at the same moment
            pass

    # -- reading -------------------------------------------------------------------------------------
    def snapshot(self) -> AccessSnapshot:
        """The current snapshot: at most one small query per :data:`REVALIDATE_SECONDS`, and a reload only when
        something changed."""
        current, now = self._snapshot, time.monotonic()
        if current is not None and now - self._checked < REVALIDATE_SECONDS:
            return current
        with self.engine.connect() as conn:
            version = conn.execute(select(VERSION.c.version).where(VERSION.c.id == 1)).scalar_one()
        self._checked = now
        if current is not None and current.version == version:
            return current
        with self._lock:
            if self._snapshot is None or self._snapshot.version != version:
                self._snapshot = self._load()
            return self._snapshot

    def _load(self) -> AccessSnapshot:
        with self.engine.connect() as conn:
            version = conn.execute(select(VERSION.c.version).where(VERSION.c.id == 1)).scalar_one()
            principals = {row.name: dict(row._mapping) for row in conn.execute(select(PRINCIPALS))}
            roles = frozenset(conn.execute(select(ROLES.c.name)).scalars())
            members: dict[str, set[str]] = {}
            for row in conn.execute(select(MEMBERS)):
                members.setdefault(row.principal, set()).add(row.role)
            grants = tuple(
                Grant(row.role, Privilege(row.privilege), _securable(row.object_type, row.object))
                for row in conn.execute(select(GRANTS))
            )
        keys = {
            p["key_id"]: (name, p["token_sha256"])
            for name, p in principals.items()
            if p["key_id"] and p["token_sha256"] and p["revoked_ms"] is None
        }
        roles_of = {name: frozenset(held) for name, held in members.items()}
        return AccessSnapshot(version, keys, principals, roles, roles_of, grants)

    def list_principals(self) -> list[dict[str, Any]]:
        snap = self.snapshot()
        return [
            {
                "name": name,
                "kind": p["kind"],
                "created-ms": p["created_ms"],
                "rotated-ms": p["rotated_ms"],
                "revoked-ms": p["revoked_ms"],
                "roles": sorted(snap.roles_of.get(name, ())),
            }
            for name, p in sorted(snap.principals.items())
        ]

    # -- writing -------------------------------------------------------------------------------------
    def _bump(self, conn: Connection) -> None:
        """Inside a change's transaction: a new version (read by this server's next request, once committed)."""
        conn.execute(update(VERSION).where(VERSION.c.id == 1).values(version=VERSION.c.version + 1))

    @contextmanager
    def _change(self) -> Iterator[Connection]:
        """A transaction of principals, roles or grants: a new version with it, read again at the next request."""
        with self.engine.begin() as conn:
            yield conn
            self._bump(conn)
        self._checked = 0.0

    def _principal(self, conn: Connection, name: str) -> Any:
        row = conn.execute(select(PRINCIPALS).where(PRINCIPALS.c.name == name)).first()
        if row is None:
            raise _not_found(f"No principal named {name!r} (python -m mt_magic.catalog principals list)")
        return row

    def _role(self, conn: Connection, name: str) -> None:
        if conn.execute(select(ROLES.c.name).where(ROLES.c.name == name)).first() is None:
            raise _not_found(f"No role named {name!r} (python -m mt_magic.catalog roles list)")

    def create_principal(self, name: str, kind: str) -> str:
        """A new principal; returns its token (kept nowhere else)."""
        name = _checked(name, "principal")
        if name == ADMIN:
            raise _conflict(f"{ADMIN!r} is the catalog's own principal (the server's token); choose another name")
        if kind not in PRINCIPAL_KINDS:
            raise RestError(400, "BadRequestException", f"Invalid principal kind {kind!r}: person or service")
        token, key_id, digest = new_token()
        now = _now_ms()
        with self._change() as conn:
            if conn.execute(select(PRINCIPALS.c.name).where(PRINCIPALS.c.name == name)).first() is not None:
                raise _conflict(f"Principal {name!r} exists already (rotate gives it a new token)")
            conn.execute(
                insert(PRINCIPALS).values(
                    name=name, kind=kind, key_id=key_id, token_sha256=digest, created_ms=now, rotated_ms=None
                )
            )
            audit.record(conn, "principal-create", CATALOG, principal=name, kind=kind)
        return token

    def rotate(self, name: str) -> str:
        """A new token for the principal (a revoked one is enabled again); the old token stops working at once."""
        token, key_id, digest = new_token()
        with self._change() as conn:
            self._principal(conn, name)
            conn.execute(
                update(PRINCIPALS)
                .where(PRINCIPALS.c.name == name)
                .values(key_id=key_id, token_sha256=digest, rotated_ms=_now_ms(), revoked_ms=None)
            )
            audit.record(conn, "principal-rotate", CATALOG, principal=name)
        return token

    def revoke(self, name: str) -> None:
        """The principal's token stops working at once; its roles stay (``rotate`` enables it again)."""
        with self._change() as conn:
            self._principal(conn, name)
            conn.execute(
                update(PRINCIPALS)
                .where(PRINCIPALS.c.name == name)
                .values(key_id=None, token_sha256=None, revoked_ms=_now_ms())
            )
            audit.record(conn, "principal-revoke", CATALOG, principal=name)

    def create_role(self, name: str) -> None:
        name = _checked(name, "role")
        with self._change() as conn:
            if conn.execute(select(ROLES.c.name).where(ROLES.c.name == name)).first() is not None:
                raise _conflict(f"Role {name!r} exists already")
            conn.execute(insert(ROLES).values(name=name, created_ms=_now_ms()))
            audit.record(conn, "role-create", CATALOG, role=name)

    def drop_role(self, name: str) -> None:
        """Drop a role with its grants and memberships."""
        with self._change() as conn:
            self._role(conn, name)
            for table, column in ((GRANTS, GRANTS.c.role), (MEMBERS, MEMBERS.c.role), (ROLES, ROLES.c.name)):
                conn.execute(delete(table).where(column == name))
            audit.record(conn, "role-drop", CATALOG, role=name)

    def assign(self, role: str, principal: str, member: bool) -> None:
        """Give the role to the principal (``member``) or take it back."""
        with self._change() as conn:
            self._role(conn, role)
            self._principal(conn, principal)
            where = (MEMBERS.c.role == role, MEMBERS.c.principal == principal)
            present = conn.execute(select(MEMBERS.c.role).where(*where)).first() is not None
            if member and not present:
                conn.execute(insert(MEMBERS).values(role=role, principal=principal))
            elif not member and present:
                conn.execute(delete(MEMBERS).where(*where))
            else:
                return
            audit.record(conn, "role-assign" if member else "role-unassign", CATALOG, role=role, principal=principal)

    def grant(self, grant: Grant, granted: bool) -> None:
        """Add the grant (``granted``) or remove it; unchanged when it already is so."""
        key = (grant.role, grant.privilege.value, grant.on.kind.value, _object_key(grant.on))
        with self._change() as conn:
            self._role(conn, grant.role)
            where = (
                GRANTS.c.role == key[0],
                GRANTS.c.privilege == key[1],
                GRANTS.c.object_type == key[2],
                GRANTS.c.object == key[3],
            )
            present = conn.execute(select(GRANTS.c.role).where(*where)).first() is not None
            if granted and not present:
                conn.execute(insert(GRANTS).values(role=key[0], privilege=key[1], object_type=key[2], object=key[3]))
            elif not granted and present:
                conn.execute(delete(GRANTS).where(*where))
            else:
                return
            audit.record(
                conn, "grant" if granted else "revoke", grant.on, role=grant.role, privilege=grant.privilege.value
            )

    def forget_object(self, conn: Connection, on: Securable, renamed: Securable | None = None) -> None:
        """Inside a drop's (``renamed``: a rename's) transaction: the grants on a table or view that is gone go
        with it (a later table of the same name starts without them); a renamed one's follow it."""
        where = (GRANTS.c.object_type == on.kind.value, GRANTS.c.object == _object_key(on))
        if conn.execute(select(GRANTS.c.role).where(*where).limit(1)).first() is None:
            return
        if renamed is None:
            conn.execute(delete(GRANTS).where(*where))
        else:
            conn.execute(update(GRANTS).where(*where).values(object=_object_key(renamed)))
        self._bump(conn)


def _securable(kind: str, key: str) -> Securable:
    return Securable(Kind(kind), tuple(json.loads(key)))


def _checked(name: str, what: str) -> str:
    try:
        return check_name(name, what)
    except ValueError as exc:
        raise RestError(400, "BadRequestException", str(exc)) from None


def _now_ms() -> int:
    return int(time.time() * 1000)

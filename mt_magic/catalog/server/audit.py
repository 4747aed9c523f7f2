"""The audit log: every change to the catalog — who, what, when, from where — in the catalog's own database.

A row is written in the same SQL transaction as the change it records wherever the server holds that transaction
(table and view commits, creates, drops, renames, registers, grants, principals), so a change is never without its
row; namespace changes go through pyiceberg's ``SqlCatalog`` and are recorded right after. Who and from where come
from the request (:data:`current_actor`, set by the authorizer): the principal, the client's address and its
``User-Agent``.

Actions (``action``): ``commit`` (a new snapshot; ``before``/``after`` snapshot ids), ``alter`` (a commit without a
new snapshot: schema, properties, spec), ``create``, ``register``, ``drop``, ``purge``, ``rename``, ``lease-taken``
(``from``: the holder that lost it, if any), ``lease-released``, ``create-namespace``, ``alter-namespace``,
``drop-namespace``, ``create-view``, ``replace-view``, ``drop-view``, ``rename-view``, ``register-view``, ``grant``,
``revoke``, ``principal-create``, ``principal-rotate``, ``principal-revoke``, ``role-create``, ``role-drop``,
``role-assign``, ``role-unassign``; and ``credentials-vended`` (not a change: scoped storage credentials handed out:
``access`` ``read`` or ``write``, ``prefix``, ``expires_at_ms``). Lease renewals are not recorded (one every few
seconds per kernel).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, Text, insert, select
from sqlalchemy.engine import Connection, Engine

from mt_magic.catalog.privileges import Securable

_META = MetaData()
AUDIT = Table(
    "mt_audit",
    _META,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_ms", BigInteger, nullable=False, index=True),
    Column("principal", String(255), nullable=False),
    Column("address", String(255), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("action", String(64), nullable=False),
    Column("object_type", String(16), nullable=False),
    Column("object", String(1000), nullable=False),
    Column("details", Text, nullable=False),
)
ACCESS_ACTIONS = frozenset(
    {
        "grant",
        "revoke",
        "principal-create",
        "principal-rotate",
        "principal-revoke",
        "role-create",
        "role-drop",
        "role-assign",
        "role-unassign",
    }
)
"""Actions on who may do what (shown to those who manage grants on their object); the rest change the catalog."""


@dataclass(frozen=True)
class Actor:
    """Who makes the changes of one request, and from where."""

    principal: str
    address: str = ""
    agent: str = ""


current_actor: ContextVar[Actor | None] = ContextVar("mt_magic_catalog_actor", default=None)
"""The request's actor: set by the authorizer before a route runs (routes run in a copy of its context)."""
SERVER = Actor("server")
"""The actor of a change made outside a request."""


@dataclass(frozen=True)
class AuditEntry:
    """One recorded change."""

    id: int
    at_ms: int
    principal: str
    address: str
    agent: str
    action: str
    on: Securable
    details: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at-ms": self.at_ms,
            "principal": self.principal,
            "address": self.address,
            "agent": self.agent,
            "action": self.action,
            "object": self.on.to_json(),
            "details": self.details,
        }


def create_audit_table(engine: Engine) -> None:
    _META.create_all(engine)


def record(conn: Connection, action: str, on: Securable, **details: Any) -> None:
    """Add one row for the current request's actor, inside the caller's transaction ``conn``."""
    actor = current_actor.get() or SERVER
    conn.execute(
        insert(AUDIT).values(
            at_ms=int(time.time() * 1000),
            principal=actor.principal[:255],
            address=actor.address[:255],
            agent=actor.agent[:255],
            action=action,
            object_type=on.kind.value,
            object=json.dumps(list(on.parts)),
            details=json.dumps(details, sort_keys=True, default=str),
        )
    )


def record_now(engine: Engine, action: str, on: Securable, **details: Any) -> None:
    """:func:`record` in a transaction of its own (after a change made through pyiceberg's ``SqlCatalog``)."""
    with engine.begin() as conn:
        record(conn, action, on, **details)


def read(
    engine: Engine, *, after_id: int = 0, since_ms: int = 0, limit: int = 1000, before_id: int | None = None
) -> Sequence[AuditEntry]:
    """Rows with an id above ``after_id`` (and below ``before_id``) and a time from ``since_ms``, newest first, at
    most ``limit``."""
    stmt = select(AUDIT).where(AUDIT.c.id > after_id, AUDIT.c.at_ms >= since_ms)
    if before_id is not None:
        stmt = stmt.where(AUDIT.c.id < before_id)
    stmt = stmt.order_by(AUDIT.c.id.desc()).limit(limit)
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
    return [
        AuditEntry(
            id=row.id,
            at_ms=row.at_ms,
            principal=row.principal,
            address=row.address,
            agent=row.agent,
            action=row.action,
            on=Securable.from_json({"type": row.object_type, "name": json.loads(row.object)}),
            details=json.loads(row.details),
        )
        for row in rows
    ]

"""What every request is decided on: tokens, grants and the in-memory snapshot of principals, roles and grants.

A token is ``mtp_<key id>_<secret>``; the database keeps the key id and the SHA-256 of the secret (256 random bits,
so a plain digest is as strong as a slow one and costs a microsecond), compared in constant time. The snapshot is
immutable but for a per-principal cache of what it holds; :class:`~.access_store.AccessStore` loads it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mt_magic.catalog.privileges import ADMIN, Privilege, Securable, implied

TOKEN_PREFIX = "mtp"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_token() -> tuple[str, str, str]:
    """(the token to hand out once, its key id, the digest kept)."""
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    return f"{TOKEN_PREFIX}_{key_id}_{secret}", key_id, _digest(secret)


def _split(token: str) -> tuple[str, str] | None:
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


@dataclass(frozen=True)
class Grant:
    """One privilege on one object, held by one role."""

    role: str
    privilege: Privilege
    on: Securable

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "privilege": self.privilege.value, "on": self.on.to_json()}


@dataclass(frozen=True)
class AccessSnapshot:
    """Principals, roles and grants as of one version; answers every authorization question without I/O."""

    version: int
    keys: Mapping[str, tuple[str, str]]
    """key id -> (principal, digest of its secret)."""
    principals: Mapping[str, Mapping[str, Any]]
    roles: frozenset[str]
    roles_of: Mapping[str, frozenset[str]]
    grants: tuple[Grant, ...]
    _granted: dict[str, dict[Securable, frozenset[Privilege]]] = field(default_factory=dict, compare=False)

    def principal_of(self, token: str) -> str | None:
        """The principal whose current token this is (constant-time digest comparison), ``None`` if none."""
        split = _split(token)
        if split is None:
            return None
        found = self.keys.get(split[0])
        if found is None:
            return None
        return found[0] if hmac.compare_digest(_digest(split[1]), found[1]) else None

    def granted(self, principal: str) -> Mapping[Securable, frozenset[Privilege]]:
        """Every privilege the principal holds through its roles, by object (implied ones included)."""
        cached = self._granted.get(principal)
        if cached is not None:
            return cached
        roles = self.roles_of.get(principal, frozenset())
        out: dict[Securable, set[Privilege]] = {}
        for grant in self.grants:
            if grant.role in roles:
                out.setdefault(grant.on, set()).update(implied(grant.privilege))
        frozen = {on: frozenset(privileges) for on, privileges in out.items()}
        self._granted[principal] = frozen
        return frozen

    def holds(self, principal: str, privilege: Privilege, on: Securable) -> bool:
        """Whether the principal holds ``privilege`` on ``on``, granted there or on an object above it."""
        if principal == ADMIN:
            return True
        granted = self.granted(principal)
        if not granted:
            return False
        return any(privilege in granted.get(above, ()) for above in on.chain())

    def sees(self, principal: str, on: Securable) -> bool:
        """Whether the principal holds anything on ``on``, above it or inside it (it may list its way there)."""
        if principal == ADMIN:
            return True
        granted = self.granted(principal)
        return any(held.contains(on) or on.contains(held) for held in granted)

    def grantors(self, on: Securable) -> list[str]:
        """Who may grant privileges on ``on``: the principals holding manage-grants on it or above, then the admin."""
        chain = set(on.chain())
        roles = {g.role for g in self.grants if g.privilege is Privilege.MANAGE_GRANTS and g.on in chain}
        active = {name for name, _ in self.keys.values()}  # a revoked principal grants nothing
        return [*sorted(p for p, held in self.roles_of.items() if held & roles and p in active), ADMIN]


def grants_of(snapshot: AccessSnapshot, roles: Iterable[str] | None = None) -> list[Grant]:
    """The snapshot's grants (of ``roles`` only, when given), sorted."""
    wanted = None if roles is None else set(roles)
    return sorted(
        (g for g in snapshot.grants if wanted is None or g.role in wanted),
        key=lambda g: (g.role, g.on, g.privilege.value),
    )

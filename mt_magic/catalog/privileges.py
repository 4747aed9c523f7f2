"""What a principal may do in a team's catalog: privileges, the objects they are granted on, and their words.

Polaris's model, simplified: privileges are granted on the catalog, a namespace (inherited by every namespace, table
and view below it) or one table or view, to *roles*; roles are given to *principals* (a person or a service, each
with a token of its own). The server's authorizer (:mod:`mt_magic.catalog.server.authz`) decides every request with
these; the client side (``python -m mt_magic.catalog grants``, CREATE MATERIALIZED TABLE's check) names them the
same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

ADMIN = "admin"
"""The principal of the server's own token ($MT_MAGIC_CATALOG_TOKEN / ``--token-file``): may do everything. The
embedded single-user catalog's owner is this one admin, with no set-up."""

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
"""Principal and role names: a letter or digit, then letters, digits, ``_ . @ -``; at most 64 characters."""


class Privilege(str, Enum):
    """What a grant allows on its object and everything below it.

    Members:
        READ_METADATA: list, load and check tables, views and namespaces (a load hands out the file locations; see
            the README for what that means on a shared file system).
        READ_DATA: read rows — what a materialized table's sources need, and a load asking for storage
            credentials (``X-Iceberg-Access-Delegation``). Includes READ_METADATA.
        WRITE: commit to a table or view (a refresh, an ALTER, a schema change), set a namespace's properties,
            take a table's refresh lease. Includes READ_DATA.
        CREATE: create or register tables, views and namespaces inside the object (and rename one into it).
        DROP: drop tables, views and namespaces (and rename one away).
        PURGE: drop a table and delete its files. Includes DROP.
        MANAGE_GRANTS: grant and revoke privileges on the object; on the catalog, manage principals and roles too.
    """

    READ_METADATA = "read-metadata"
    READ_DATA = "read-data"
    WRITE = "write"
    CREATE = "create"
    DROP = "drop"
    PURGE = "purge"
    MANAGE_GRANTS = "manage-grants"

    def __str__(self) -> str:
        return self.value


IMPLIES: dict[Privilege, frozenset[Privilege]] = {
    Privilege.READ_DATA: frozenset({Privilege.READ_METADATA}),
    Privilege.WRITE: frozenset({Privilege.READ_DATA, Privilege.READ_METADATA}),
    Privilege.PURGE: frozenset({Privilege.DROP}),
}


def implied(privilege: Privilege) -> frozenset[Privilege]:
    """The privilege and every privilege it includes."""
    return frozenset({privilege}) | IMPLIES.get(privilege, frozenset())


def parse_privilege(text: str) -> Privilege:
    """``read-data`` (or ``READ_DATA``) as a :class:`Privilege`.

    Raises:
        ValueError: not a privilege; the message lists them.
    """
    wanted = text.strip().lower().replace("_", "-")
    for privilege in Privilege:
        if privilege.value == wanted:
            return privilege
    raise ValueError(f"unknown privilege {text!r}: one of {', '.join(p.value for p in Privilege)}")


class Kind(str, Enum):
    """What a grant is on.

    Members:
        CATALOG: the whole catalog.
        NAMESPACE: a namespace and everything inside it, nested namespaces included.
        TABLE: one table or view (a view and a table never share a name).
    """

    CATALOG = "catalog"
    NAMESPACE = "namespace"
    TABLE = "table"


@dataclass(frozen=True, order=True)
class Securable:
    """An object privileges are granted on: its kind and its name's parts (none for the catalog)."""

    kind: Kind
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        want = {Kind.CATALOG: (0, 0), Kind.NAMESPACE: (1, 1 << 16), Kind.TABLE: (2, 1 << 16)}[self.kind]
        if not want[0] <= len(self.parts) <= want[1] or not all(isinstance(p, str) and p for p in self.parts):
            raise ValueError(f"invalid {self.kind.value} name {list(self.parts)!r}")

    def chain(self) -> tuple[Securable, ...]:
        """This object and every object above it whose grants it inherits, the catalog first."""
        namespace = self.parts if self.kind is Kind.NAMESPACE else self.parts[:-1]
        above = [CATALOG] + [Securable(Kind.NAMESPACE, namespace[:i]) for i in range(1, len(namespace) + 1)]
        return (*above, self) if self.kind is Kind.TABLE else tuple(above)

    def contains(self, other: Securable) -> bool:
        """Whether ``other`` is this object or inside it."""
        return self in other.chain()

    def __str__(self) -> str:
        return "the catalog" if self.kind is Kind.CATALOG else f"{self.kind.value} {'.'.join(self.parts)}"

    def to_json(self) -> dict[str, object]:
        return {"type": self.kind.value, "name": list(self.parts)}

    @classmethod
    def from_json(cls, data: object) -> Securable:
        """Raises ValueError: not ``{"type": …, "name": [...]}`` naming a valid object."""
        if not isinstance(data, dict) or not isinstance(data.get("name", []), list):
            raise ValueError(f"invalid object {data!r}: expected {{'type': 'namespace', 'name': ['dws']}}")
        try:
            kind = Kind(data.get("type"))
        except ValueError:
            raise ValueError(f"invalid object type {data.get('type')!r}: catalog, namespace or table") from None
        return cls(kind, tuple(data.get("name", [])))


CATALOG = Securable(Kind.CATALOG)


def namespace(*parts: str) -> Securable:
    return Securable(Kind.NAMESPACE, tuple(parts))


def table(*parts: str) -> Securable:
    return Securable(Kind.TABLE, tuple(parts))


def check_name(name: str, what: str) -> str:
    """A principal's or role's name, checked against :data:`NAME_PATTERN`.

    Raises:
        ValueError: naming the value and the rule.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"invalid {what} name {name!r}: 1 to 64 letters, digits or _ . @ -, starting with a letter or digit"
        )
    return name


def grant_command(privilege: Privilege, on: Securable) -> str:
    """The command line that grants ``privilege`` on ``on`` (to a role still to be named)."""
    where = "--catalog" if on.kind is Kind.CATALOG else f"--{on.kind.value} {'.'.join(on.parts)}"
    return f"python -m mt_magic.catalog grants add <role> {privilege.value} {where}"


def either(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)

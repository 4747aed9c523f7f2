"""One refresher per table: this manager's turn at the catalog's lease map (see :mod:`mt_magic.catalog.leases`).

Each pass reads the map; :func:`plan_leases` decides, without I/O, what this manager's map should be — take what
it wants and nobody live holds, renew what it holds, hand over what another process asked for once idle, release
what it no longer wants; :class:`LeaseKeeper` writes that as one compare-and-set and, when another process
changed the map meanwhile, reads and decides again. The manager starts runs only for tables it holds.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from mt_magic.catalog.leases import Lease, LeaseConflictError, LeaseMap
from mt_magic.errors import CatalogError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

DEFAULT_LEASE_TTL = timedelta(seconds=30)
WRITE_ATTEMPTS = 4
"""Compare-and-set attempts per pass; a manager that loses them all tries again at its next pass."""


class LeaseStore(Protocol):
    """The lease map's storage: a read, and a write that succeeds only on the version read."""

    def read(self) -> LeaseMap:
        """Raises CatalogUnavailableError: the catalog cannot be reached."""
        ...

    def write(self, base: LeaseMap, leases: Mapping[str, Lease]) -> LeaseMap:
        """Raises LeaseConflictError (the map changed since ``base``) or CatalogUnavailableError."""
        ...


def holder_id(role: str, principal: str | None = None) -> str:
    """A unique, readable holder name: ``kernel pid 4242 on host as ana (3f9a1c)``; ``principal`` is whose token the
    process's catalog client uses (:func:`catalog_principal`): the card's and ``%mt``'s "refreshed by" name it."""
    who = f" as {principal}" if principal else ""
    return f"{role} pid {os.getpid()} on {socket.gethostname()}{who} ({secrets.token_hex(3)})"


def catalog_principal(catalog: Catalog) -> str | None:
    """The principal the catalog client's token maps to (the server's ``/v1/mt/whoami``); ``None`` for a catalog
    that is not mt_magic's or does not say (its refreshes are then shown by process alone)."""
    from mt_magic.catalog.access import AccessClient

    try:
        principal = AccessClient(catalog).whoami().get("principal")
    except (CatalogError, OSError, ValueError):  # another catalog (Iceberg's reference server), or none answers
        return None
    return str(principal) if principal else None


@dataclass(frozen=True)
class LeaseWishes:
    """What this manager wants from the lease map at one pass."""

    wanted: frozenset[str]
    """Tables it would refresh (tracked and not suspended; an inline manager: only those with a run waiting)."""
    urgent: frozenset[str] = frozenset()
    """Tables with a manual refresh waiting: if another process holds one, ask it to hand the lease over."""
    busy: frozenset[str] = frozenset()
    """Tables it refreshes right now: renewed, never handed over or released mid-run."""


def plan_leases(
    current: Mapping[str, Lease], holder: str, wishes: LeaseWishes, now: datetime, ttl: timedelta
) -> dict[str, Lease]:
    """The lease map after this manager's turn (pure).

    Its own leases are renewed when less than two thirds of ``ttl`` is left (so a map that needs nothing is
    left unwritten), handed to ``wanted_by`` when idle, released when no longer wanted; expired leases of
    others are taken when wanted, else removed; live leases of others are left alone except for a request.
    """
    out = dict(current)
    renew_before = now + ttl * 2 / 3
    keep = wishes.wanted | wishes.urgent | wishes.busy
    for name, lease in current.items():
        if lease.holder == holder:
            if name not in keep:
                del out[name]
            elif lease.wanted_by and lease.wanted_by != holder and name not in wishes.busy:
                out[name] = Lease(name, lease.wanted_by, now + ttl)
            elif lease.expires_at < renew_before:
                out[name] = replace(lease, expires_at=now + ttl)
        elif not lease.live(now) and name not in keep:
            del out[name]
    for name in sorted(keep):
        found = out.get(name)
        if found is None or not found.live(now):
            out[name] = Lease(name, holder, now + ttl)
        elif found.holder != holder and name in wishes.urgent and not found.wanted_by:
            out[name] = replace(found, wanted_by=holder)
    return out


class LeaseKeeper:
    """This manager's side of the lease map: its holder name, the latest map, and the compare-and-set loop.

    Args:
        store: the catalog's lease map.
        holder: this manager's unique name (:func:`holder_id`).
        ttl: how long a lease lasts without renewal (how long a dead holder's tables wait); renewed every third.
    """

    def __init__(self, store: LeaseStore, holder: str, ttl: timedelta = DEFAULT_LEASE_TTL) -> None:
        self.store = store
        self.holder = holder
        self.ttl = ttl
        self.leases: Mapping[str, Lease] = {}
        """The map as last read or written."""
        self.conflicts = 0
        """Compare-and-set attempts lost to another process (for the trials' figures)."""

    def sync(self, wishes: LeaseWishes, now: datetime) -> Mapping[str, Lease]:
        """Read the map, write this manager's plan if it changes anything, retrying lost compare-and-sets.

        Returns:
            The map as this pass leaves it (the latest read when every attempt was lost).

        Raises:
            CatalogUnavailableError: the catalog cannot be reached.
        """
        for _ in range(WRITE_ATTEMPTS):
            base = self.store.read()
            self.leases = base.leases
            planned = plan_leases(base.leases, self.holder, wishes, now, self.ttl)
            if planned == dict(base.leases):
                return self.leases
            try:
                self.leases = self.store.write(base, planned).leases
                return self.leases
            except LeaseConflictError:
                self.conflicts += 1
        return self.leases

    def holds(self, name: str, now: datetime) -> bool:
        """Whether this manager may start a refresh of ``name`` now: its live lease, not asked for by another."""
        lease = self.leases.get(name)
        if lease is None or lease.holder != self.holder or not lease.live(now):
            return False
        return not lease.wanted_by or lease.wanted_by == self.holder

    def holder_of(self, name: str, now: datetime) -> str | None:
        """Who holds a live lease on ``name`` (as last read), ``None`` when nobody does."""
        lease = self.leases.get(name)
        return lease.holder if lease is not None and lease.live(now) else None

    def release_all(self) -> None:
        """Give every lease of this manager back (stop): others take the tables at once, not after expiry."""
        for _ in range(WRITE_ATTEMPTS):
            base = self.store.read()
            kept = {name: lease for name, lease in base.leases.items() if lease.holder != self.holder}
            if kept == dict(base.leases):
                return
            try:
                self.leases = self.store.write(base, kept).leases
                return
            except LeaseConflictError:
                self.conflicts += 1

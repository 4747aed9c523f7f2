"""The catalog's names and columns for completion, cached: a keypress reads the cache and never the catalog.

:class:`CatalogNames` answers at once with what it last loaded and reloads it on a thread of its own — one load at
a time (an invalidation during a load runs one more after it), started on demand, never at import: at
``%load_ext`` (before Spark starts, so the first Tab finds the names), after a cell runs, when what it holds is older
than ``max_age``, once after a failed load, and once for each Tab that asked for a name it does not hold
(:meth:`CatalogNames.missing`: a table another process made). A failed load keeps the previous names.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from mt_magic.runtime.spark.quoting import identifier

if TYPE_CHECKING:
    from mt_magic.catalog.tables import MaterializedCatalog

log = logging.getLogger(__name__)

MAX_AGE_S = 30.0
"""How old the cached names may be before a completion asks for a reload (in the background)."""
RETRY_AFTER_S = 2.0
"""How soon a completion asks again after a failed load (the catalog server starting, a dropped connection)."""
MISSES_KEPT = 256
"""Tabs that asked for names the cache lacks, remembered so each reloads once (forgotten at the next reload)."""


@dataclass(frozen=True)
class NameSnapshot:
    """Table names as a user types them (short in the default namespace) and each table's columns."""

    materialized: tuple[str, ...] = ()
    plain: tuple[str, ...] = ()
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Lower-cased ``name``, ``namespace.name`` and ``catalog.namespace.name`` → the table's columns in order."""
    materialized_paths: tuple[tuple[str, ...], ...] = ()
    """Each materialized table's full name as parts (catalog, namespace…, table), for ``mt.`` and ``mt.ns.``."""
    plain_paths: tuple[tuple[str, ...], ...] = ()

    def columns_of(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        return self.columns.get(".".join(parts).lower(), ())


@dataclass(frozen=True)
class AskedNames(NameSnapshot):
    """A snapshot that notes the tables a completion asked the columns of and found none (``unknown``)."""

    unknown: list[tuple[str, ...]] = field(default_factory=list)

    @classmethod
    def of(cls, snapshot: NameSnapshot) -> AskedNames:
        return cls(**{f.name: getattr(snapshot, f.name) for f in fields(NameSnapshot)})

    def columns_of(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        found = super().columns_of(parts)
        if not found:
            self.unknown.append(parts)
        return found


def shown_part(part: str) -> str:
    """One name part as a user types it: bare when it is an identifier, else in backquotes."""
    return part if part.isidentifier() else identifier(part)


class CatalogNames:
    """A cache of :class:`NameSnapshot`, reloaded in the background.

    Args:
        load: reads the catalog (slow; runs on the cache's own thread).
        max_age: seconds after which :meth:`current` starts a reload.
    """

    def __init__(self, load: Callable[[], NameSnapshot], max_age: float = MAX_AGE_S) -> None:
        self._load = load
        self._max_age = max_age
        self._lock = threading.Lock()
        self._snapshot = NameSnapshot()
        self._loaded_at: float | None = None
        self._thread: threading.Thread | None = None
        self._again = False
        self._failed = False
        self._missed: set[str] = set()
        self.loads = 0
        """How many loads finished (tests wait on it)."""

    def current(self) -> NameSnapshot:
        """What was loaded last, at once; starts a reload when it is missing or older than ``max_age`` (than
        :data:`RETRY_AFTER_S` after a failed load)."""
        with self._lock:
            age = None if self._loaded_at is None else time.monotonic() - self._loaded_at
            stale = age is None or age > (RETRY_AFTER_S if self._failed else self._max_age)
            snapshot = self._snapshot
            if stale:
                self._missed.clear()
        if stale:
            self.reload()
        return snapshot

    def invalidate(self) -> None:
        """The names may have changed (a cell ran): load them again in the background, once more after a load
        that is running now (it may have listed the catalog before the change)."""
        with self._lock:
            self._loaded_at = None
            self._again = self._thread is not None
            self._missed.clear()
        self.reload()

    def missing(self, asked: str) -> None:
        """A completion at ``asked`` (the text before the cursor) needed names the cache lacks: load them again in
        the background, once per ``asked`` until the next reload for another reason (a Tab repeated on a name
        that does not exist costs one load, not one per Tab)."""
        with self._lock:
            if asked in self._missed:
                return
            if len(self._missed) >= MISSES_KEPT:
                self._missed.clear()
            self._missed.add(asked)
            self._again = self._thread is not None  # the running load may have listed the catalog before
        self.reload()

    def reload(self) -> None:
        """Start one background load unless one is running."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="mt-completion-names", daemon=True)
            self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Wait for the running loads to end (tests); True when none runs any more."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _run(self) -> None:
        while True:
            self._load_once()
            with self._lock:
                if not self._again:
                    self._thread = None
                    return
                self._again = False

    def _load_once(self) -> None:
        try:
            snapshot = self._load()
        except Exception:  # the catalog away or a table dropped mid-listing: keep what we had, try again soon
            log.debug("loading names for completion failed", exc_info=True)
            with self._lock:
                self._loaded_at, self._failed = time.monotonic(), True
            return
        with self._lock:
            self._snapshot, self._loaded_at, self._failed = snapshot, time.monotonic(), False
            self.loads += 1


def catalog_snapshot(catalog: MaterializedCatalog, default_namespace: str) -> NameSnapshot:
    """Every table of ``catalog`` (all namespaces), materialized and plain, with its columns; names in
    ``default_namespace`` as the user types them, without it."""
    from mt_magic.catalog.leases import LEASE_NAMESPACE, LEASE_TABLE

    materialized: list[str] = []
    plain: list[str] = []
    paths: dict[bool, list[tuple[str, ...]]] = {True: [], False: []}
    columns: dict[str, tuple[str, ...]] = {}
    for namespace in _namespaces(catalog.catalog.list_namespaces):
        for ident in catalog.catalog.list_tables(namespace):
            if tuple(ident) == (LEASE_NAMESPACE, LEASE_TABLE):  # mt_magic's own bookkeeping, not a user's table
                continue
            name = ".".join((catalog.spark_name, *ident))
            try:
                info = catalog.load(name, reuse_unchanged=True)  # a repeated read: ETag, 304 when unchanged
            except Exception:  # dropped between list and load
                continue
            parts = tuple(ident)
            shown = parts[-1:] if ".".join(parts[:-1]) == default_namespace else parts
            is_materialized = info.definition is not None
            (materialized if is_materialized else plain).append(".".join(shown_part(p) for p in shown))
            paths[is_materialized].append((catalog.spark_name, *parts))
            cols = tuple(c for c, _, _ in info.columns)
            for key in (parts[-1:], (".".join(parts[:-1]), parts[-1]), (catalog.spark_name, *parts)):
                columns.setdefault(".".join(key).lower(), cols)
    return NameSnapshot(
        tuple(sorted(materialized)),
        tuple(sorted(plain)),
        columns,
        tuple(sorted(paths[True])),
        tuple(sorted(paths[False])),
    )


def _namespaces(list_namespaces: Callable[..., list[tuple[str, ...]]], parent: tuple[str, ...] = ()) -> list:
    found: list[tuple[str, ...]] = []
    for ns in list_namespaces(parent):
        found.append(tuple(ns))
        found.extend(_namespaces(list_namespaces, tuple(ns)))
    return found

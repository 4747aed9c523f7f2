"""A consumer of Iceberg materialized views written from the spec text alone: apache/iceberg PR #11041 as voted
(``format/view-spec.md``, its latest revision, stored at 00fb39221f), "Materialized Views", "Storage table
metadata", "Freshness", "Refresh state", "Consumer: Evaluating Refresh State", "Source state", Appendix B. It
imports nothing of mt_magic: pyiceberg's REST catalog for tables, plain HTTP for views (pyiceberg loads no views).

What it reads, as the text says:

* The materialized view is a view whose current version has ``storage-table`` (``namespace``, ``name``; the storage
  table is in the view's catalog).
* ``refresh-state`` is an *optional* snapshot-summary property of a storage table snapshot, a JSON string with
  ``view-version-id``, ``source-states`` and ``refresh-start-timestamp-ms`` (all required: "Producers must record
  ``view-version-id`` and ``refresh-start-timestamp-ms``"). A storage table with no snapshot carrying it was never
  refreshed. A snapshot without it that follows a refresh and rewrites no data (operation ``replace``: compaction)
  leaves that refresh's state in force; one that changes data does not (the stored rows are no longer a refresh's
  result).
* Freshness: "any storage-table snapshot recorded at a prior ``view-version-id`` is invalid and should not be
  consumed until refreshed": a recorded ``view-version-id`` other than the view's current ``version-id`` makes the
  storage table **invalid**; so does a record without the required fields, or no record. Otherwise the table is
  **stale** when a recorded source is no longer at its recorded state (table: ``uuid`` and the ``snapshot-id`` of
  its ``ref``, ``main`` by default; view: ``uuid`` and ``version-id``), and **fresh** when all are. An upstream
  materialized view "may be recorded as a ``view`` entry referencing its view metadata and one or more ``table``
  entries referencing its storage table". "Optionally recursive verification for upstream materialized views
  recorded by their storage tables": with ``recursive=True`` a recorded table that is a storage table (it has a
  refresh state) must be fresh too.

:func:`violations` checks a record against the field tables of "Refresh state" and "Source state" (what a writer
must write and may write, nothing else): the writer's conformance, apart from the consumer's verdict.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests

REQUIRED = {"view-version-id": int, "source-states": list, "refresh-start-timestamp-ms": int}
NO_SNAPSHOT = -1
"""The table spec's ``current-snapshot-id`` of a table without a snapshot."""
REWRITES = {"replace"}
"""Snapshot operations that change no data (the table spec: "replace: data and delete files were added and removed
without changing table data")."""


class State(enum.Enum):
    FRESH = "fresh"
    STALE = "stale"
    INVALID = "invalid"


@dataclass(frozen=True)
class SpecReader:
    """One REST catalog, as any client is given it: ``uri`` and ``token``."""

    uri: str
    token: str | None = None

    @property
    def catalog(self) -> Any:
        from pyiceberg.catalog import load_catalog

        return load_catalog("spec_reader", type="rest", uri=self.uri, **({"token": self.token} if self.token else {}))

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def view(self, namespace: Sequence[str], name: str) -> dict[str, Any] | None:
        """``LoadViewResult.metadata`` of a view, ``None`` when there is none."""
        base = self.uri.rstrip("/")
        config = requests.get(f"{base}/v1/config", headers=self._headers(), timeout=30).json()
        prefix = config.get("overrides", {}).get("prefix")
        root = f"{base}/v1/{prefix}" if prefix else f"{base}/v1"
        response = requests.get(
            f"{root}/namespaces/{chr(0x1F).join(namespace)}/views/{name}", headers=self._headers(), timeout=30
        )
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return dict(response.json()["metadata"])

    def refresh_state(self, namespace: Sequence[str], name: str) -> dict[str, Any] | None:
        """The refresh state in force for a storage table, ``None`` when there is none (never refreshed, or data
        changed since the last refresh)."""
        table = self.catalog.load_table((*namespace, name))
        snapshot = table.current_snapshot()
        while snapshot is not None:
            summary = snapshot.summary.additional_properties if snapshot.summary is not None else {}
            if "refresh-state" in summary:
                return dict(json.loads(summary["refresh-state"]))
            operation = snapshot.summary.operation.value if snapshot.summary is not None else ""
            if operation not in REWRITES:
                return None
            parent = snapshot.parent_snapshot_id
            snapshot = table.snapshot_by_id(parent) if parent is not None else None
        return None

    def state(self, namespace: Sequence[str], view: str, recursive: bool = False) -> State:
        """Fresh, stale or invalid: the materialized view ``namespace.view``.

        Raises:
            LookupError: no such view, or a common view.
        """
        meta = self.view(namespace, view)
        if meta is None:
            raise LookupError(f"no view {'.'.join(namespace)}.{view}")
        current = next(v for v in meta["versions"] if v["version-id"] == meta["current-version-id"])
        pointer = current.get("storage-table")
        if pointer is None:
            raise LookupError(f"{view} is a common view")
        record = self.refresh_state(pointer["namespace"], pointer["name"])
        if record is None or not _well_formed(record):
            return State.INVALID
        if record["view-version-id"] != meta["current-version-id"]:
            return State.INVALID
        return self._sources(record["source-states"], recursive, {(tuple(pointer["namespace"]), pointer["name"])})

    def _sources(self, entries: Sequence[Mapping[str, Any]], recursive: bool, seen: set[Any]) -> State:
        for entry in entries:
            namespace, name = tuple(entry["namespace"]), entry["name"]
            if entry["type"] == "view":
                meta = self.view(namespace, name)
                if meta is None or (meta["view-uuid"], meta["current-version-id"]) != (
                    entry["uuid"],
                    entry["version-id"],
                ):
                    return State.STALE
                continue
            table = self.catalog.load_table((*namespace, name))
            ref = table.metadata.refs.get(entry.get("ref") or "main")
            at = NO_SNAPSHOT if ref is None else ref.snapshot_id
            if (str(table.metadata.table_uuid), at) != (entry["uuid"], entry["snapshot-id"]):
                return State.STALE
            if recursive and (namespace, name) not in seen and self._upstream(namespace, name, seen) is not State.FRESH:
                return State.STALE
        return State.FRESH

    def _upstream(self, namespace: tuple[str, ...], name: str, seen: set[Any]) -> State:
        """A recorded table that is a source materialized view's storage table must be fresh itself, its view
        version included (the view is found by its ``storage-table`` pointer: the spec has no pointer back)."""
        upstream = self.refresh_state(namespace, name)
        if upstream is None:
            return State.FRESH  # a plain table: its recorded snapshot was all there was to check
        for view in self.views(namespace):
            meta = self.view(namespace, view)
            current = next(v for v in meta["versions"] if v["version-id"] == meta["current-version-id"]) if meta else {}
            pointer = current.get("storage-table") or {}
            if (tuple(pointer.get("namespace", ())), pointer.get("name")) == (namespace, name):
                if upstream.get("view-version-id") != meta["current-version-id"] or not _well_formed(upstream):  # type: ignore[index]
                    return State.INVALID
        if not _well_formed(upstream):
            return State.INVALID
        return self._sources(upstream["source-states"], True, seen | {(namespace, name)})

    def views(self, namespace: Sequence[str]) -> list[str]:
        """The names of a namespace's views (``ListViews``, every page)."""
        base = self.uri.rstrip("/")
        config = requests.get(f"{base}/v1/config", headers=self._headers(), timeout=30).json()
        prefix = config.get("overrides", {}).get("prefix")
        root = f"{base}/v1/{prefix}" if prefix else f"{base}/v1"
        names: list[str] = []
        token: str | None = None
        while True:
            params = {"pageToken": token} if token else {}
            response = requests.get(
                f"{root}/namespaces/{chr(0x1F).join(namespace)}/views",
                headers=self._headers(),
                params=params,
                timeout=30,
            )
            response.raise_for_status()
            body = response.json()
            names += [ident["name"] for ident in body.get("identifiers", [])]
            token = body.get("next-page-token")
            if not token:
                return names


ENTRY_FIELDS = {
    "table": ({"type", "name", "namespace", "uuid", "snapshot-id"}, {"catalog", "ref"}),
    "view": ({"type", "name", "namespace", "uuid", "version-id"}, {"catalog"}),
}
"""Each source-state type's required and optional fields ("Source table state", "Source view state")."""


def violations(record: Mapping[str, Any]) -> list[str]:
    """What in a ``refresh-state`` record is not the spec's: a missing or mistyped required field, a field the
    spec does not define, a source entry of an unknown type or with a field of the wrong type."""
    found = [f"{key} is {record.get(key)!r}" for key, kind in REQUIRED.items() if not _is(record.get(key), kind)]
    found += [f"{key} is not a refresh-state field" for key in set(record) - set(REQUIRED)]
    for entry in record.get("source-states") or []:
        kind = entry.get("type")
        if kind not in ENTRY_FIELDS:
            found.append(f"source type {kind!r} is neither table nor view")
            continue
        required, optional = ENTRY_FIELDS[kind]
        found += [f"{kind} {entry.get('name')!r} lacks {key}" for key in required - set(entry)]
        found += [f"{kind} {entry.get('name')!r} has {key}" for key in set(entry) - required - optional]
        counter = "snapshot-id" if kind == "table" else "version-id"
        checks = {
            "name": lambda v: isinstance(v, str) and v != "",
            "uuid": lambda v: isinstance(v, str) and v != "",
            "namespace": lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v),
            "catalog": lambda v: isinstance(v, str) and v != "",
            "ref": lambda v: isinstance(v, str) and v != "",
            counter: lambda v: _is(v, int),
        }
        found += [
            f"{kind} {entry.get('name')!r} has {key} = {entry[key]!r}"
            for key, check in checks.items()
            if key in entry and not check(entry[key])
        ]
    return found


def _is(value: object, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def _well_formed(record: Mapping[str, Any]) -> bool:
    """The three required fields, each source entry with its type's required fields."""
    if not all(isinstance(record.get(k), t) and not isinstance(record.get(k), bool) for k, t in REQUIRED.items()):
        return False
    required = {
        "table": ("name", "namespace", "uuid", "snapshot-id"),
        "view": ("name", "namespace", "uuid", "version-id"),
    }
    for entry in record["source-states"]:
        counter = "snapshot-id" if entry.get("type") == "table" else "version-id"
        if entry.get("type") not in required or any(entry.get(k) is None for k in required[entry["type"]]):
            return False
        if not isinstance(entry[counter], int):
            return False
    return True

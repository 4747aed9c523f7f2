"""The Iceberg view registered alongside each materialized table, as the materialized-view proposal describes it
(apache/iceberg PR #11041, still open; mt_magic follows its text of September 2026, in which ``storage-table`` has
only ``namespace`` and ``name``: the storage table is in the view's own catalog).

The materialized table keeps its name and stays a plain Iceberg table, so clients that know nothing of the
proposal keep reading it as before; it is the proposal's *storage table*. Next to it, in the same namespace, the
view ``<table>__mv`` carries the definition: each view version holds the expanded query (dialect ``spark``), the
table's schema, the default catalog and namespace, and ``storage-table`` (``{"namespace", "name"}``) pointing at
the table. Each refresh records the id of the view version whose definition it ran as ``view-version-id`` in its
``refresh-state`` (:meth:`ViewInfo.version_for`, written by the one refresh commit).

mt_magic's own marks: the view property ``mt.storage-table-uuid`` (the table's uuid: a view is this table's only
if it carries it, so a user's view of the same name is never touched) and ``mt.definition-version`` in each
version's summary (which definition a version holds, so a refresh of an older definition records the older
version). pyiceberg has no view-writing API, so the REST view endpoints are called here through pyiceberg's own
authenticated session; transport failures are classified by :func:`~mt_magic.catalog.tables.reaching`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.definitions import (
    REFRESH_STATE_KEY,
    MaterializedTableDefinition,
    RefreshState,
    ViewState,
    expectations_from_json,
    expectations_json,
)
from mt_magic.catalog.tables import MaterializedCatalog, SnapshotInfo, reaching
from mt_magic.errors import CatalogError, DefinitionError
from mt_magic.vocabulary import Expectation, is_hidden_column

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.schema import Schema

log = logging.getLogger(__name__)

VIEW_SUFFIX = "__mv"
"""The view of materialized table ``t`` is ``t__mv``, in the same namespace."""
STORAGE_TABLE = "storage-table"
"""The proposal's view-version field naming the storage table."""
TABLE_UUID_PROPERTY = "mt.storage-table-uuid"
"""View property: the uuid of the materialized table the view belongs to."""
DEFINITION_VERSION = "mt.definition-version"
"""View-version summary entry: the ``mt.definition-version`` of the definition that version holds."""
EXPECTATIONS = "mt.expectations"
"""View-version summary entry of a table with expectations: the definition's, as the table's property holds them
(the version's SQL is the stored query, ``DROP ROW`` conditions already in it)."""
DROPPED_PROPERTY = "mt.catalog-drops"
"""View property: what the catalog did not keep of the versions mt_magic wrote (``storage-table``, ``summary``)."""
DIALECT = "spark"
VIEWS = "namespaces/{namespace}/views"
VIEW = "namespaces/{namespace}/views/{view}"
CREATE_VIEW_ENDPOINT = "POST /v1/{prefix}/namespaces/{namespace}/views"


def predates_view_versions(summary: Mapping[str, str]) -> bool:
    """Whether a refresh commit's ``refresh-state`` is the older record without ``view-version-id`` (releases
    before the draft's shape). mt_magic still reads its sources, but the voted text requires the field and calls a
    storage table whose state names no current view version invalid until refreshed, so mt_magic calls such a table
    behind since that refresh, and its next refresh is never skipped as a no-op: it writes the voted record."""
    raw = summary.get(REFRESH_STATE_KEY)
    if raw is None:
        return False
    try:
        return "view-version-id" not in json.loads(raw)
    except ValueError:
        return True


def invalid_since(
    state: RefreshState, summary: Mapping[str, str], refreshed_at: datetime, view: ViewInfo | None
) -> datetime | None:
    """When a storage table's last refresh (``state``, committed at ``refreshed_at``) stopped being valid by the
    voted text, ``None`` while it is valid: a ``refresh-state`` without ``view-version-id`` (older releases) since
    that refresh; one naming another version than the view's current (an ALTER … AS, or another engine's version)
    since that version was made current, never before the refresh. Without a view there is nothing to check."""
    if predates_view_versions(summary):
        return refreshed_at
    if view is None or state.view_version_id is None or state.view_version_id == view.current_version_id:
        return None
    return max(refreshed_at, view.current_since())


@dataclass(frozen=True)
class ForeignVersion:
    """The view's current version is another engine's (its query, namespace or ``storage-table`` not the table's
    definition) and a refresh could not record it, so the table would stay invalid: the fact the runtime refuses a
    refresh for (``runtime.refresh.run.refused``)."""

    table: str
    view: str
    version_id: int
    engine: str
    """The version's ``engine-name``, empty when its writer named none."""


def foreign_version(table: str, view: ViewInfo | None, definition_version: int) -> ForeignVersion | None:
    """Why a refresh of ``table`` (invalid: see :func:`invalid_since`) running ``definition_version`` must not run:
    it could not record the view's current version (:meth:`ViewInfo.version_for`). ``None``: the refresh makes it
    valid."""
    if view is None or view.version_for(definition_version) == view.current_version_id:
        return None
    return ForeignVersion(table, view.name, view.current.version_id, view.current.engine)


def view_name(table: str) -> str:
    """The qualified name of the view registered alongside ``table``."""
    return table + VIEW_SUFFIX


@dataclass(frozen=True)
class ViewVersionInfo:
    """One version of a view, as mt_magic reads it."""

    version_id: int
    sql: str
    """The ``spark`` representation (empty when there is none)."""
    storage_table: tuple[str, ...] | None
    """The ``storage-table`` pointer as namespace parts and name; ``None``: a common view version."""
    definition_version: int | None
    schema_id: int
    default_namespace: tuple[str, ...] = ()
    timestamp_ms: int = 0
    expectations: tuple[Expectation, ...] = ()
    """What the version's summary says of the definition's expectations (:data:`EXPECTATIONS`)."""
    engine: str = ""
    """The summary's ``engine-name`` (``mt_magic``, ``trino``, …; empty when the writer named none)."""


@dataclass(frozen=True)
class ViewInfo:
    """A view's metadata: uuid, properties, versions and the current one, and its schemas as JSON."""

    name: str
    uuid: str
    current_version_id: int
    versions: tuple[ViewVersionInfo, ...]
    properties: Mapping[str, str]
    schemas: tuple[Mapping[str, Any], ...] = ()
    version_log: tuple[tuple[int, int], ...] = ()
    """``version-log``: (``version-id``, ``timestamp-ms``) for each change of the current version, oldest first."""

    @property
    def dropped(self) -> tuple[str, ...]:
        """What mt_magic wrote into the current version and the catalog did not keep: ``storage-table`` (the
        proposal's pointer; Iceberg 1.10's own view model has no such field) and the version summary."""
        current = self.current
        missing = [STORAGE_TABLE] if current.storage_table is None else []
        return (*missing, *(["summary"] if current.definition_version is None else []))

    def same_version(self, version: ViewVersionInfo) -> int | None:
        """The id of a version the catalog would take for ``version`` (Java's ``sameViewVersion``: same query,
        schema, namespace and summary), so it adds none; ``storage-table`` counts only where the catalog keeps
        it (Iceberg's reference server ignores it, and then reuses the version)."""
        keeps_pointer = STORAGE_TABLE not in self.properties.get(DROPPED_PROPERTY, "")

        def key(v: ViewVersionInfo) -> tuple[object, ...]:
            pointer = v.storage_table if keeps_pointer else None
            return (v.sql, v.schema_id, v.definition_version, v.default_namespace, pointer)

        return next((v.version_id for v in self.versions if key(v) == key(version)), None)

    def schema_id_of(self, schema: Mapping[str, Any]) -> int | None:
        """The id of a schema of the view equal to ``schema`` (ids aside), as Java's builder reuses one."""

        def key(s: Mapping[str, Any]) -> tuple[Any, Any]:  # Java leaves out an empty identifier-field-ids
            return (s.get("fields"), sorted(s.get("identifier-field-ids") or []))

        for existing in self.schemas:
            if key(existing) == key(schema):
                return int(existing["schema-id"])
        return None

    @property
    def current(self) -> ViewVersionInfo:
        return next(v for v in self.versions if v.version_id == self.current_version_id)

    def version_for(self, definition_version: int) -> int | None:
        """The id of the version holding ``definition_version``: the current one if it does (another engine's
        version counts when it keeps the same query, namespace and ``storage-table``, e.g. adding a dialect),
        else the newest that does (a refresh recording it leaves the table invalid: the view now says otherwise).
        """
        holding = [v for v in self.versions if v.definition_version == definition_version]
        current = self.current
        if current in holding:
            return self.current_version_id
        newest = max(holding, key=lambda v: v.version_id, default=None)
        if newest is None:
            return None
        same = (current.sql, current.default_namespace, current.storage_table) == (
            newest.sql,
            newest.default_namespace,
            newest.storage_table,
        )
        return self.current_version_id if same and current.definition_version is None else newest.version_id

    def current_since(self) -> datetime:
        """When the current version was made current (its last ``version-log`` entry, else its creation)."""
        logged = [ms for version_id, ms in self.version_log if version_id == self.current_version_id]
        return datetime.fromtimestamp((logged[-1] if logged else self.current.timestamp_ms) / 1000, tz=timezone.utc)


def _read_version(data: Mapping[str, Any]) -> ViewVersionInfo:
    sql = next((r.get("sql", "") for r in data.get("representations", []) if r.get("dialect") == DIALECT), "")
    pointer = data.get(STORAGE_TABLE)
    defined = data.get("summary", {}).get(DEFINITION_VERSION)
    expected = expectations_from_json(data.get("summary", {}).get(EXPECTATIONS, "[]"))
    return ViewVersionInfo(
        expectations=expected,
        engine=str(data.get("summary", {}).get("engine-name", "")),
        version_id=int(data["version-id"]),
        sql=sql,
        storage_table=None if pointer is None else (*pointer.get("namespace", []), pointer["name"]),
        definition_version=None if defined is None else int(defined),
        schema_id=int(data["schema-id"]),
        default_namespace=tuple(data.get("default-namespace", [])),
        timestamp_ms=int(data.get("timestamp-ms", 0)),
    )


def _info(name: str, loaded: Mapping[str, Any]) -> ViewInfo:
    meta = loaded["metadata"]
    return ViewInfo(
        name=name,
        uuid=str(meta["view-uuid"]),
        current_version_id=int(meta["current-version-id"]),
        versions=tuple(_read_version(v) for v in meta.get("versions", [])),
        properties=dict(meta.get("properties", {})),
        schemas=tuple(meta.get("schemas", [])),
        version_log=tuple((int(e["version-id"]), int(e["timestamp-ms"])) for e in meta.get("version-log", [])),
    )


class MaterializedViews:
    """The views registered alongside the materialized tables of one catalog.

    Args:
        tables: the catalog's materialized tables (its pyiceberg REST catalog is used for the requests).
    """

    def __init__(self, tables: MaterializedCatalog) -> None:
        self.tables = tables

    # --- REST ------------------------------------------------------------------------------------------------

    def _path(self, name: str) -> dict[str, str]:
        """The view's ``namespace`` and ``view`` path parameters, encoded as pyiceberg encodes a table's (the
        catalog's separator; 0.12 also percent-encodes each level)."""
        from pyiceberg.catalog.rest import IdentifierKind

        rest = self.tables.catalog
        if not hasattr(rest, "_split_identifier_for_path"):
            raise CatalogError(f"{name}: views need an Iceberg REST catalog; {type(rest).__name__} is not one.")
        return dict(rest._split_identifier_for_path(self.tables.identifier(name), IdentifierKind.VIEW))

    def _wire(self, name: str) -> dict[str, Any]:
        ident = self.tables.identifier(name)
        return {"namespace": list(ident[:-1]), "name": ident[-1]}

    def _call(
        self,
        name: str,
        method: str,
        endpoint: str,
        body: object = None,
        path: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        prefixed: bool = True,
    ) -> dict[str, Any]:
        """One request; a non-2xx answer raises pyiceberg's exception for it (404: ``NoSuchViewError``)."""
        from pyiceberg.catalog.rest.response import _handle_non_200_response
        from pyiceberg.exceptions import NoSuchViewError
        from requests import HTTPError

        rest = self.tables.catalog
        if not hasattr(rest, "_session"):
            raise CatalogError(f"{name}: views need an Iceberg REST catalog; {type(rest).__name__} is not one.")
        url = rest.url(endpoint, prefixed=prefixed, **(path or {}))  # type: ignore[attr-defined]
        with reaching(name):
            data = None if body is None else json.dumps(body)
            response = rest._session.request(method, url, data=data, params=params)
            try:
                response.raise_for_status()
            except HTTPError as exc:
                _handle_non_200_response(exc, {404: NoSuchViewError})
        return response.json() if response.content else {}

    def load(self, name: str) -> ViewInfo | None:
        """The view ``name`` (qualified), ``None`` when there is none."""
        from pyiceberg.exceptions import NoSuchViewError

        try:
            return _info(name, self._call(name, "GET", VIEW, path=self._path(name)))
        except NoSuchViewError:
            return None

    def of_table(self, table: str, table_uuid: str) -> ViewInfo | None:
        """The view registered alongside ``table`` (``None``: none, or a view of that name that is not ours)."""
        view = self.load(view_name(table))
        return view if view is not None and view.properties.get(TABLE_UUID_PROPERTY) == table_uuid else None

    def invalid_since(self, table: str, uuid: str, last: tuple[SnapshotInfo, RefreshState]) -> datetime | None:
        """:func:`invalid_since` for ``table``'s last refresh, its view loaded only when that refresh named one."""
        return self._checked(table, uuid, last)[0]

    def _checked(
        self, table: str, uuid: str, last: tuple[SnapshotInfo, RefreshState]
    ) -> tuple[datetime | None, ViewInfo | None]:
        snapshot, state = last
        view = self.of_table(table, uuid) if state.view_version_id is not None else None
        return invalid_since(state, snapshot.summary, snapshot.committed_at, view), view

    def valid_for_refresh(
        self, table: str, uuid: str, definition_version: int, last: tuple[SnapshotInfo, RefreshState]
    ) -> tuple[bool, ForeignVersion | None]:
        """Whether ``table``'s last refresh is still valid (:meth:`invalid_since`), for a refresh about to start (an
        invalid table is refreshed, never skipped), and the view's current version when it is one the refresh cannot
        record (:func:`foreign_version`; ``None`` otherwise), which the refresh is refused for."""
        since, view = self._checked(table, uuid, last)
        return since is None, None if since is None else foreign_version(table, view, definition_version)

    def upstream_views(self, state: RefreshState) -> tuple[ViewState, ...]:
        """The spec's ``view`` entries for the sources of ``state`` that are materialized tables of this catalog:
        each one's view at its current version."""
        found = []
        for source in state.source_states:
            if source.catalog != self.tables.spark_name:
                continue
            view = self.of_table(source.qualified_name, source.uuid)
            if view is not None:
                *namespace, name = self.tables.identifier(view.name)
                found.append(ViewState(tuple(namespace), name, view.uuid, view.current_version_id, source.catalog))
        return tuple(found)

    # --- what statements do -------------------------------------------------------------------------------------

    def check_free(self, label: str, table: str) -> None:
        """Refuse a name whose view name is taken (by a view or a table), before anything is written.

        Raises:
            DefinitionError: the view name is taken; the message names it.
        """
        name = view_name(table)
        if self.load(name) is not None or self.tables.exists(name):
            raise DefinitionError(
                f"{label}: {name} already exists; mt_magic registers the materialized table's Iceberg view under "
                f"that name (the table name + '{VIEW_SUFFIX}')",
                fix="drop or rename it, or choose another table name",
            )

    def _new_version(
        self, table: str, definition: MaterializedTableDefinition, version_id: int, schema_id: int
    ) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            engine_version = version("mt_magic")
        except PackageNotFoundError:  # a source checkout that was never installed
            engine_version = "unknown"
        ident = self.tables.identifier(table)
        return {
            "version-id": version_id,
            "timestamp-ms": int(time.time() * 1000),
            "schema-id": schema_id,
            "summary": {
                "engine-name": "mt_magic",
                "engine-version": engine_version,
                DEFINITION_VERSION: str(definition.definition_version),
                **({EXPECTATIONS: expectations_json(definition.expectations)} if definition.expectations else {}),
            },
            "representations": [{"type": "sql", "sql": definition.expanded_query, "dialect": DIALECT}],
            "default-catalog": self.tables.spark_name,
            "default-namespace": list(ident[:-1]),
            STORAGE_TABLE: {"namespace": list(ident[:-1]), "name": ident[-1]},
        }

    def _schema(self, table: str, appended: pa.Schema | None = None) -> Schema:
        """The table's schema, with ``appended`` columns as the table will have them once they are committed,
        less its hidden key columns (the view's query does not select them)."""
        loaded = self.tables.iceberg_table(table)
        if appended is None or not len(appended):
            schema = loaded.schema()
        else:
            schema = loaded.update_schema().union_by_name(appended)._apply()
        if not any(is_hidden_column(f.name) for f in schema.fields):
            return schema
        from pyiceberg.schema import Schema

        fields = [f for f in schema.fields if not is_hidden_column(f.name)]
        return Schema(*fields, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids)

    def supported(self) -> bool:
        """Whether the catalog serves views: its ``/v1/config`` lists the create-view endpoint (or, listing no
        endpoints, sets ``view-endpoints-supported``), as Java's REST client decides."""
        warehouse = self.tables.catalog.properties.get("warehouse")
        params = {"warehouse": str(warehouse)} if warehouse else None
        config = self._call(f"catalog {self.tables.spark_name}", "GET", "config", params=params, prefixed=False)
        endpoints = config.get("endpoints")
        if endpoints is None:
            return str(config.get("defaults", {}).get("view-endpoints-supported", "")).lower() == "true"
        return CREATE_VIEW_ENDPOINT in endpoints

    def create(self, table: str, definition: MaterializedTableDefinition) -> ViewInfo | None:
        """Register the view of a new materialized table (its schema is the table's); ``None`` when the catalog
        serves no views (the table is then only a plain table, as before views were registered).

        A catalog that rebuilds the created view from its query alone (Iceberg's reference server keeps neither
        ``storage-table`` nor the summary) gets the version again as a replace, which keeps what it can (the
        summary, so refreshes record their ``view-version-id``); what it still drops is recorded in the view
        property :data:`DROPPED_PROPERTY` and shown by :attr:`ViewInfo.dropped`.
        """
        if not self.supported():
            return None
        info = self.tables.load(table)
        name = view_name(table)
        body = {
            "name": self.tables.identifier(name)[-1],
            "schema": json.loads(self._schema(table).model_dump_json()),
            "view-version": self._new_version(table, definition, 1, 0),
            "properties": {TABLE_UUID_PROPERTY: info.uuid},
        }
        path = self._path(name)
        view = _info(name, self._call(name, "POST", VIEWS, body, {"namespace": path["namespace"]}))
        if not view.dropped:
            return view
        repaired = self.add_version(view, table, definition)
        if repaired.dropped:
            dropped = ", ".join(repaired.dropped)
            log.warning("catalog %s does not keep the %s of view %s", self.tables.spark_name, dropped, name)
            repaired = self._commit(repaired, [{"action": "set-properties", "updates": {DROPPED_PROPERTY: dropped}}])
        return repaired

    def _commit(self, view: ViewInfo, updates: list[dict[str, Any]]) -> ViewInfo:
        body = {
            "identifier": self._wire(view.name),
            "requirements": [{"type": "assert-view-uuid", "uuid": view.uuid}],
            "updates": updates,
        }
        return _info(view.name, self._call(view.name, "POST", VIEW, body, self._path(view.name)))

    def add_version(
        self, view: ViewInfo, table: str, definition: MaterializedTableDefinition, appended: pa.Schema | None = None
    ) -> ViewInfo:
        """A new current version: ``definition`` over the table's schema (plus ``appended``), pointing at ``table``.

        Sent as Java's client sends it: the version carries the next version id (the highest + 1), and reuses an
        equal schema of the view, else adds the schema and refers to it as ``-1`` (the last added). Iceberg
        1.10's reference server fails a version sent with an id it already has ("Cannot set current version to
        unknown version").
        """
        schema = json.loads(self._schema(table, appended).model_dump_json())
        schema_id = view.schema_id_of(schema)
        adds = [] if schema_id is not None else [{"action": "add-schema", "schema": schema}]
        next_id = max((v.version_id for v in view.versions), default=0) + 1
        version = self._new_version(table, definition, next_id, -1 if schema_id is None else schema_id)
        same = None if schema_id is None else view.same_version(_read_version(version))
        if same is not None:  # the catalog would reuse it: make it current, as Java's client does
            if same == view.current_version_id:
                return view
            return self._commit(view, [{"action": "set-current-view-version", "view-version-id": same}])
        return self._commit(
            view,
            [
                *adds,
                {"action": "add-view-version", "view-version": version},
                {"action": "set-current-view-version", "view-version-id": -1},
            ],
        )

    def set_current(self, view: ViewInfo, version_id: int) -> ViewInfo:
        """Make an existing version current again (undoing :meth:`add_version`)."""
        return self._commit(view, [{"action": "set-current-view-version", "view-version-id": version_id}])

    def drop(self, view: ViewInfo) -> None:
        self._call(view.name, "DELETE", VIEW, path=self._path(view.name))

    def rename(self, view: ViewInfo, new_name: str) -> ViewInfo:
        """Rename the view (same view: uuid, versions and properties stay)."""
        body = {"source": self._wire(view.name), "destination": self._wire(new_name)}
        self._call(view.name, "POST", "views/rename", body)
        renamed = self.load(new_name)
        if renamed is None:
            raise CatalogError(f"the catalog renamed view {view.name} to {new_name} but cannot load it")
        return renamed

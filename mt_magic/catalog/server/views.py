"""Iceberg view metadata (spec format v1) and how view commits change it; pure, no I/O.

pyiceberg has no view metadata model, so this module defines the spec's ``ViewMetadata``, ``ViewVersion``,
the view updates and the ``assert-view-uuid`` requirement, reusing pyiceberg's ``Schema`` and the table
update models that views share (assign-uuid, add-schema, set-location, set/remove-properties).
Java's rules are mirrored: an equal schema or an equivalent version is reused, ``-1`` means "last added".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.table import TableIdentifier
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    UpgradeFormatVersionUpdate,
)
from pyiceberg.typedef import IcebergBaseModel

from mt_magic.catalog.server.errors_http import BadRequest, RestError


def now_ms() -> int:
    return int(time.time() * 1000)


class ViewRepresentation(IcebergBaseModel):
    """``SQLViewRepresentation``: the query text in one dialect."""

    type: str
    sql: str
    dialect: str


class StorageTableIdentifier(IcebergBaseModel):
    """The materialized-view proposal's pointer from a view version to its storage table (apache/iceberg
    PR #11041, ``storage-table``); a version without one is a common view."""

    namespace: list[str]
    name: str
    catalog: str | None = None


class ViewVersion(IcebergBaseModel):
    """One version of a view's definition."""

    version_id: int = Field(alias="version-id")
    timestamp_ms: int = Field(alias="timestamp-ms")
    schema_id: int = Field(alias="schema-id")
    summary: dict[str, str] = Field(default_factory=dict)
    representations: list[ViewRepresentation]
    default_catalog: str | None = Field(alias="default-catalog", default=None)
    default_namespace: list[str] = Field(alias="default-namespace")
    storage_table: StorageTableIdentifier | None = Field(alias="storage-table", default=None)

    def same_definition(self, other: ViewVersion) -> bool:
        """Equal apart from id, time and the summary's ``operation`` (Java's ``sameViewVersion``: such a version
        is reused instead of added); the storage-table pointer counts, so re-pointing makes a new version."""

        def key(v: ViewVersion) -> tuple[object, ...]:
            summary = {k: val for k, val in v.summary.items() if k != "operation"}
            return (v.schema_id, v.representations, v.default_catalog, v.default_namespace, summary, v.storage_table)

        return key(self) == key(other)


def check_dialects(version: ViewVersion) -> None:
    """One SQL text per dialect (dialects compared case-insensitively, as Java does).

    Raises:
        RestError: 400 with Java's text and type ``IllegalArgumentException`` (the type Java's reference server
            gives a broken precondition; Java clients raise it as an ``IllegalArgumentException``).
    """
    seen: set[str] = set()
    for representation in version.representations:
        dialect = representation.dialect.lower()
        if dialect in seen:
            raise RestError(
                400,
                "IllegalArgumentException",
                f"Invalid view version: Cannot add multiple queries for dialect {dialect}",
            )
        seen.add(dialect)


class ViewHistoryEntry(IcebergBaseModel):
    version_id: int = Field(alias="version-id")
    timestamp_ms: int = Field(alias="timestamp-ms")


def history_entry(version_id: int, timestamp_ms: int) -> ViewHistoryEntry:
    return ViewHistoryEntry.model_validate({"version_id": version_id, "timestamp_ms": timestamp_ms})


class ViewMetadata(IcebergBaseModel):
    """The content of a view metadata JSON file."""

    view_uuid: str = Field(alias="view-uuid")
    format_version: int = Field(alias="format-version", default=1, ge=1, le=1)
    location: str
    current_version_id: int = Field(alias="current-version-id")
    versions: list[ViewVersion]
    version_log: list[ViewHistoryEntry] = Field(alias="version-log")
    schemas: list[Schema]
    properties: dict[str, str] = Field(default_factory=dict)

    def version(self, version_id: int) -> ViewVersion | None:
        return next((v for v in self.versions if v.version_id == version_id), None)


class AddViewVersionUpdate(IcebergBaseModel):
    action: Literal["add-view-version"] = Field(default="add-view-version")
    view_version: ViewVersion = Field(alias="view-version")


class SetCurrentViewVersionUpdate(IcebergBaseModel):
    action: Literal["set-current-view-version"] = Field(default="set-current-view-version")
    view_version_id: int = Field(alias="view-version-id")


class AssertViewUUID(IcebergBaseModel):
    """The view's uuid must be the one the client loaded."""

    type: Literal["assert-view-uuid"] = Field(default="assert-view-uuid")
    uuid: str

    def validate_against(self, metadata: ViewMetadata) -> None:
        if self.uuid.lower() != metadata.view_uuid.lower():  # Java's text, as its clients show it
            raise CommitFailedException(
                f"Requirement failed: view UUID does not match: expected {metadata.view_uuid} != {self.uuid}"
            )


ViewUpdate = Annotated[
    (
        AssignUUIDUpdate
        | UpgradeFormatVersionUpdate
        | AddSchemaUpdate
        | SetLocationUpdate
        | SetPropertiesUpdate
        | RemovePropertiesUpdate
        | AddViewVersionUpdate
        | SetCurrentViewVersionUpdate
    ),
    Field(discriminator="action"),
]


class CreateViewBody(IcebergBaseModel):
    """``CreateViewRequest``."""

    name: str
    location: str | None = None
    view_schema: Schema = Field(alias="schema")
    view_version: ViewVersion = Field(alias="view-version")
    properties: dict[str, str] = Field(default_factory=dict)


class CommitViewBody(IcebergBaseModel):
    """``CommitViewRequest`` (the replace-view route); the identifier, if any, must match the path."""

    identifier: TableIdentifier | None = None
    requirements: list[AssertViewUUID] = Field(default_factory=list)
    updates: list[ViewUpdate] = Field(default_factory=list)


class LoadViewResult(IcebergBaseModel):
    """``LoadViewResult``: what create, load and replace return."""

    metadata_location: str = Field(alias="metadata-location")
    metadata: ViewMetadata
    config: dict[str, str] = Field(default_factory=dict)


def new_view_metadata(body: CreateViewBody, location: str) -> ViewMetadata:
    """Metadata for a new view: schema id 0, version id 1, made current."""
    check_dialects(body.view_version)
    schema = body.view_schema.model_copy(update={"schema_id": 0})
    version = body.view_version.model_copy(update={"version_id": 1, "schema_id": 0})
    return ViewMetadata.model_validate(
        {
            "view_uuid": str(uuid.uuid4()),
            "location": location.rstrip("/"),
            "current_version_id": 1,
            "versions": [version],
            "version_log": [history_entry(1, version.timestamp_ms)],
            "schemas": [schema],
            "properties": dict(body.properties),
        }
    )


class _ViewBuilder:
    """Applies view updates one by one, tracking what was added last (for ``-1``)."""

    def __init__(self, base: ViewMetadata) -> None:
        self.data: dict[str, Any] = {
            "view_uuid": base.view_uuid,
            "format_version": base.format_version,
            "location": base.location,
            "current_version_id": base.current_version_id,
            "versions": list(base.versions),
            "version_log": list(base.version_log),
            "schemas": list(base.schemas),
            "properties": dict(base.properties),
        }
        self.last_schema: int | None = None
        self.last_version: int | None = None

    def add_schema(self, schema: Schema) -> None:
        schemas: list[Schema] = self.data["schemas"]
        for existing in schemas:
            if existing == schema:
                self.last_schema = existing.schema_id
                return
        new_id = max((s.schema_id for s in schemas), default=-1) + 1
        schemas.append(schema.model_copy(update={"schema_id": new_id}))
        self.last_schema = new_id

    def add_version(self, version: ViewVersion) -> None:
        check_dialects(version)
        if version.schema_id == -1:
            if self.last_schema is None:
                raise BadRequest("add-view-version uses schema-id -1 but no schema was added")
            version = version.model_copy(update={"schema_id": self.last_schema})
        if not any(s.schema_id == version.schema_id for s in self.data["schemas"]):
            raise BadRequest(f"add-view-version refers to unknown schema id {version.schema_id}")
        versions: list[ViewVersion] = self.data["versions"]
        for existing in versions:
            if existing.same_definition(version):
                self.last_version = existing.version_id
                return
        new_id = max((v.version_id for v in versions), default=0) + 1
        versions.append(version.model_copy(update={"version_id": new_id}))
        self.last_version = new_id

    def set_current(self, version_id: int) -> None:
        if version_id == -1:
            if self.last_version is None:
                raise BadRequest("set-current-view-version -1 but no view version was added")
            version_id = self.last_version
        if not any(v.version_id == version_id for v in self.data["versions"]):
            raise BadRequest(f"Cannot set the current view version to unknown id {version_id}")
        if version_id != self.data["current_version_id"]:
            self.data["current_version_id"] = version_id
            self.data["version_log"].append(history_entry(version_id, now_ms()))

    def apply(self, update: Any) -> None:
        if isinstance(update, AssignUUIDUpdate):
            self.data["view_uuid"] = str(update.uuid)
        elif isinstance(update, UpgradeFormatVersionUpdate):
            if update.format_version != 1:
                raise BadRequest(f"Unsupported view format version {update.format_version}")
        elif isinstance(update, AddSchemaUpdate):
            self.add_schema(update.schema_)
        elif isinstance(update, SetLocationUpdate):
            self.data["location"] = update.location.rstrip("/")
        elif isinstance(update, SetPropertiesUpdate):
            self.data["properties"].update(update.updates)
        elif isinstance(update, RemovePropertiesUpdate):
            for key in update.removals:
                self.data["properties"].pop(key, None)
        elif isinstance(update, AddViewVersionUpdate):
            self.add_version(update.view_version)
        elif isinstance(update, SetCurrentViewVersionUpdate):
            self.set_current(update.view_version_id)


def apply_view_commit(
    base: ViewMetadata, requirements: Sequence[AssertViewUUID], updates: Sequence[Any]
) -> ViewMetadata:
    """Validate requirements and return the metadata after the updates.

    Raises:
        CommitFailedException: a requirement failed (409, the client retries).
        BadRequest: an update refers to something that does not exist.
    """
    for requirement in requirements:
        requirement.validate_against(base)
    builder = _ViewBuilder(base)
    for update in updates:
        builder.apply(update)
    return ViewMetadata.model_validate(builder.data)

"""Table format version 3 where pyiceberg 0.10 stops short: row lineage, the upgrade, and writing the file.

pyiceberg parses v3 metadata (``TableMetadataV3``, with ``next-row-id``) but cannot write it
(``model_dump_json`` raises), refuses ``upgrade-format-version`` to 3, and its ``Snapshot`` drops the v3
fields ``first-row-id`` and ``added-rows``. What the spec's row lineage asks of a catalog (and Java's
``TableMetadata.Builder`` does): a new or upgraded v3 table starts at ``next-row-id`` 0; every added snapshot
carries ``first-row-id`` ≥ the table's ``next-row-id``, which then grows by the snapshot's ``added-rows``.
Newer pyiceberg releases (0.12) still cannot write v3 metadata, so the server does these few things itself.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field
from pyiceberg.io import FileIO
from pyiceberg.schema import Schema
from pyiceberg.serializers import Compressor, ToOutputFile
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, TableMetadataV3
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.update import AddSnapshotUpdate, UpgradeFormatVersionUpdate
from pyiceberg.typedef import IcebergBaseModel

from mt_magic.catalog.server.errors_http import BadRequest

ROW_LINEAGE_VERSION = 3


class LineageSnapshot(Snapshot):
    """A snapshot with the v3 row-lineage fields (absent before v3)."""

    first_row_id: int | None = Field(alias="first-row-id", default=None)
    added_rows: int | None = Field(alias="added-rows", default=None)


class TableMetadataV3Lineage(TableMetadataV3):
    """``TableMetadataV3`` whose snapshots keep their row-lineage fields, and that can be written."""

    snapshots: list[LineageSnapshot] = Field(default_factory=list)  # type: ignore[assignment]

    def model_dump_json(  # type: ignore[override]  # pyiceberg's signature, which refuses v3
        self, exclude_none: bool = True, exclude: Any = None, by_alias: bool = True, **kw: Any
    ) -> str:
        return IcebergBaseModel.model_dump_json(
            self, exclude_none=exclude_none, exclude=exclude, by_alias=by_alias, **kw
        )


class AddLineageSnapshotBody(IcebergBaseModel):
    """``add-snapshot`` as parsed from the wire, row-lineage fields included."""

    action: Literal["add-snapshot"] = Field(default="add-snapshot")
    snapshot: LineageSnapshot

    def to_update(self) -> AddSnapshotUpdate:
        return AddSnapshotUpdate.model_validate({"snapshot": self.snapshot})


def upgrade_target(updates: Sequence[Any]) -> int | None:
    """The highest ``upgrade-format-version`` among a commit's updates, if any."""
    versions = [int(u.format_version) for u in updates if isinstance(u, UpgradeFormatVersionUpdate)]
    return max(versions) if versions else None


def upgraded(base: TableMetadata) -> TableMetadata:
    """``base`` as a v3 table that has assigned no row ids yet (pyiceberg refuses this upgrade itself)."""
    if base.format_version >= ROW_LINEAGE_VERSION:
        return base
    data = {**dict(base), "format_version": ROW_LINEAGE_VERSION, "next_row_id": 0}
    return TableMetadataV3.model_construct(**data)


def check_row_lineage(base: TableMetadata | None, added: Sequence[LineageSnapshot]) -> int:
    """The table's ``next-row-id`` once ``added`` are added to ``base`` (a v3 table, or one becoming v3), checked
    before pyiceberg applies them, so the refusal reads the same whatever pyiceberg says (0.12 checks too).

    Raises:
        BadRequest: an added snapshot has no ``first-row-id`` or one behind the table's ``next-row-id``.
    """
    next_row_id = getattr(base, "next_row_id", None) if base is not None and base.format_version >= 3 else None
    next_row_id = next_row_id or 0
    for snapshot in added:
        if snapshot.first_row_id is None:
            raise BadRequest("Cannot add a snapshot: first-row-id is null")
        if snapshot.first_row_id < next_row_id:
            raise BadRequest(
                "Cannot add a snapshot, first-row-id is behind table next-row-id: "
                f"{snapshot.first_row_id} < {next_row_id}"
            )
        next_row_id += snapshot.added_rows or 0
    return next_row_id


def with_row_lineage(
    result: TableMetadata, base: TableMetadata | None, added: Sequence[LineageSnapshot]
) -> TableMetadata:
    """A v3 result with the added snapshots' lineage fields restored and ``next-row-id`` advanced past them.

    Raises:
        BadRequest: an added snapshot has no ``first-row-id`` or one behind the table's ``next-row-id``.
    """
    if result.format_version < ROW_LINEAGE_VERSION:
        return result
    next_row_id = check_row_lineage(base, added)
    lineage = {s.snapshot_id: s for s in added}
    data = IcebergBaseModel.model_dump(result, serialize_as_any=True)
    for snap in data.get("snapshots", []):
        source = lineage.get(snap["snapshot-id"])
        if source is not None:
            snap.update(source.model_dump(include={"first_row_id", "added_rows"}))
    data["next-row-id"] = next_row_id
    return TableMetadataV3Lineage.model_validate(data)


def metadata_json(metadata: TableMetadata) -> str:
    """The metadata file's JSON (v3 too)."""
    if metadata.format_version >= ROW_LINEAGE_VERSION:
        return IcebergBaseModel.model_dump_json(metadata, serialize_as_any=True)
    return metadata.model_dump_json()


def write_metadata(metadata: TableMetadata, io: FileIO, location: str) -> None:
    """Write a metadata file (compressed when its name says so), v3 included."""
    if metadata.format_version < ROW_LINEAGE_VERSION:
        ToOutputFile.table_metadata(metadata, io.new_output(location))
        return
    data = Compressor.get_compressor(location).bytes_compressor()(metadata_json(metadata).encode("utf-8"))
    with io.new_output(location).create(overwrite=False) as out:
        out.write(data)


def read_metadata(io: FileIO, location: str) -> TableMetadata:
    """Parse a metadata file; v3 files keep their snapshots' row-lineage fields."""
    with io.new_input(location).open() as stream:
        with Compressor.get_compressor(location).stream_decompressor(stream) as plain:
            text = codecs.getreader("utf-8")(plain).read()
    metadata = TableMetadataUtil.parse_raw(text)
    if metadata.format_version >= ROW_LINEAGE_VERSION:
        return TableMetadataV3Lineage.model_validate_json(text)
    return metadata


_DEFAULTS = ("initial-default", "write-default")


def _copy_defaults(original: Any, fresh: Any) -> None:
    """Walk two schema JSON trees of the same shape (only field ids differ) and copy field defaults."""
    if isinstance(original, dict) and isinstance(fresh, dict):
        for key in _DEFAULTS:
            if key in original and original.get("type") is not None and "id" in original:
                fresh[key] = original[key]
        for key, value in original.items():
            if key in fresh and key not in _DEFAULTS:
                _copy_defaults(value, fresh[key])
    elif isinstance(original, list | tuple) and isinstance(fresh, list | tuple):
        for a, b in zip(original, fresh, strict=False):
            _copy_defaults(a, b)


def with_column_defaults(metadata: TableMetadata, requested: Schema) -> TableMetadata:
    """A new v3 table's schema with the requested columns' ``initial-default`` / ``write-default`` (pyiceberg's
    ``assign_fresh_schema_ids`` drops them; Java keeps them)."""
    if metadata.format_version < ROW_LINEAGE_VERSION or len(metadata.schemas) != 1:
        return metadata
    fresh = metadata.schemas[0].model_dump()
    _copy_defaults(requested.model_dump(), fresh)
    return metadata.model_copy(update={"schemas": [Schema.model_validate(fresh)]})

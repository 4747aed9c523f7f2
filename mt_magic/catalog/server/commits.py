"""Pure commit logic: requirements, updates and the next metadata file, with Java's reuse rules.

pyiceberg's ``update_table_metadata`` applies updates literally: an ``add-schema`` for a schema the table
already has is appended again (a duplicate schema id), and so are partition specs and sort orders. Java
clients send exactly that when they replace a table (``CREATE OR REPLACE TABLE … AS SELECT``: the replace
transaction re-sends the table's current schema, spec and order), and Java's own catalog de-duplicates them
(``TableMetadata.Builder`` reuses an equal schema / compatible spec / equal order, and gives new ones the
next free id). :func:`normalize_updates` does the same before pyiceberg applies anything, and
:func:`apply_commit` also applies the updates pyiceberg lacks (:mod:`mt_magic.catalog.server.table_updates`).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema, index_by_id
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1
from pyiceberg.table.snapshots import MetadataLogEntry
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    AssertCreate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersionUpdate,
    update_table_metadata,
)

from mt_magic.catalog.server.errors_http import INPUT_FAULTS, BadRequest, describe_validation_error
from mt_magic.catalog.server.format_v3 import (
    ROW_LINEAGE_VERSION,
    AddLineageSnapshotBody,
    check_row_lineage,
    upgrade_target,
    upgraded,
    with_row_lineage,
)
from mt_magic.catalog.server.requirements import validate_requirement
from mt_magic.catalog.server.table_updates import (
    Removal,
    RemovePartitionSpecsUpdate,
    RemoveSchemasUpdate,
    SetStatisticsBody,
)

_VERSION = re.compile(r"(\d+)-[^/]*\.metadata\.json(\.gz)?$")


def is_create(requirements: Sequence[TableRequirement]) -> bool:
    """Whether a commit creates the table (``assert-create``); then no other requirement is allowed."""
    creates = any(isinstance(r, AssertCreate) for r in requirements)
    if creates and len(requirements) > 1:
        others = [r.type for r in requirements]
        raise BadRequest(f"Invalid create requirements {others}: assert-create must be the only requirement")
    return creates


def empty_metadata() -> TableMetadata:
    """The starting point of a create-through-commit: no schema, spec or order yet (the updates add them)."""
    # As pyiceberg builds it: model_construct skips validation, so the alias ``schema`` is used as is.
    return TableMetadataV1.model_construct(last_column_id=-1, schema=Schema())


def _spec_key(spec: PartitionSpec) -> tuple[tuple[int, str, str], ...]:
    return tuple((f.source_id, str(f.transform), f.name) for f in spec.fields)


def _order_key(order: SortOrder) -> tuple[Any, ...]:
    return tuple((f.source_id, str(f.transform), f.direction, f.null_order) for f in order.fields)


class _Ids:
    """Ids known while walking one commit's updates: the table's plus those added so far."""

    def __init__(self, base: TableMetadata) -> None:
        self.schemas: list[Schema] = list(base.schemas)
        self.specs: list[PartitionSpec] = list(base.partition_specs)
        self.orders: list[SortOrder] = list(base.sort_orders)
        self.last_schema: int | None = None
        self.last_spec: int | None = None
        self.last_order: int | None = None


def _add_schema(update: AddSchemaUpdate, ids: _Ids) -> TableUpdate | None:
    for schema in ids.schemas:
        if schema == update.schema_:  # structural equality, ids of the schemas ignored
            ids.last_schema = schema.schema_id
            return None
    taken = {s.schema_id for s in ids.schemas}
    schema = update.schema_
    if schema.schema_id in taken:
        schema = schema.model_copy(update={"schema_id": max(taken) + 1})
    ids.schemas.append(schema)
    ids.last_schema = schema.schema_id
    return AddSchemaUpdate.model_validate({"schema_": schema})


def _check_sources(source_ids: Sequence[int], what: str, ids: _Ids) -> None:
    known = {field_id for schema in ids.schemas for field_id in index_by_id(schema)}
    missing = sorted(set(source_ids) - known)
    if missing:
        raise BadRequest(f"Cannot find source column(s) {missing} for the {what} in any schema of the table")


def _add_spec(update: AddPartitionSpecUpdate, ids: _Ids) -> TableUpdate | None:
    _check_sources([f.source_id for f in update.spec.fields], "partition spec", ids)
    for spec in ids.specs:
        if _spec_key(spec) == _spec_key(update.spec):
            ids.last_spec = spec.spec_id
            return None
    taken = {s.spec_id for s in ids.specs}
    spec = update.spec
    if spec.spec_id in taken:
        spec = spec.model_copy(update={"spec_id": max(taken) + 1})
    ids.specs.append(spec)
    ids.last_spec = spec.spec_id
    return AddPartitionSpecUpdate(spec=spec)


def _add_order(update: AddSortOrderUpdate, ids: _Ids) -> TableUpdate | None:
    _check_sources([f.source_id for f in update.sort_order.fields], "sort order", ids)
    for order in ids.orders:
        if _order_key(order) == _order_key(update.sort_order):
            ids.last_order = order.order_id
            return None
    taken = {o.order_id for o in ids.orders}
    order = update.sort_order
    if order.order_id in taken:
        order = order.model_copy(update={"order_id": max(taken) + 1})
    ids.orders.append(order)
    ids.last_order = order.order_id
    return AddSortOrderUpdate.model_validate({"sort_order": order})


def _last(value: int | None, what: str) -> int:
    if value is None:
        raise BadRequest(f"Cannot set the current {what} to the last added one (-1): no {what} was added")
    return value


def normalize_updates(base: TableMetadata, updates: Sequence[TableUpdate]) -> tuple[TableUpdate, ...]:
    """Rewrite updates the way Java's metadata builder would apply them.

    Equal schemas, compatible partition specs and equal sort orders are reused instead of appended; new
    ones get the next free id when theirs is taken; ``-1`` ("last added") becomes the concrete id.

    Args:
        base: the table's current metadata (or :func:`empty_metadata` for a create).
        updates: the updates as the client sent them.

    Returns:
        Updates for pyiceberg's ``update_table_metadata``.

    Raises:
        BadRequest: a ``-1`` refers to nothing added earlier in the same commit.
    """
    ids = _Ids(base)
    out: list[TableUpdate] = []
    for update in updates:
        rewritten: TableUpdate | None = update
        if isinstance(update, AddSchemaUpdate):
            rewritten = _add_schema(update, ids)
        elif isinstance(update, AddPartitionSpecUpdate):
            rewritten = _add_spec(update, ids)
        elif isinstance(update, AddSortOrderUpdate):
            rewritten = _add_order(update, ids)
        elif isinstance(update, SetCurrentSchemaUpdate) and update.schema_id == -1:
            rewritten = SetCurrentSchemaUpdate.model_validate({"schema_id": _last(ids.last_schema, "schema")})
        elif isinstance(update, SetDefaultSpecUpdate) and update.spec_id == -1:
            rewritten = SetDefaultSpecUpdate.model_validate({"spec_id": _last(ids.last_spec, "partition spec")})
        elif isinstance(update, SetDefaultSortOrderUpdate) and update.sort_order_id == -1:
            rewritten = SetDefaultSortOrderUpdate.model_validate({"sort_order_id": _last(ids.last_order, "sort order")})
        if rewritten is not None:
            out.append(rewritten)
    return tuple(out)


def _apply_removals(metadata: TableMetadata, removals: Sequence[Removal]) -> TableMetadata:
    for removal in removals:
        if isinstance(removal, RemoveSchemasUpdate):
            if metadata.current_schema_id in removal.schema_ids:
                raise BadRequest(f"Cannot remove the current schema {metadata.current_schema_id}")
            kept = [s for s in metadata.schemas if s.schema_id not in removal.schema_ids]
            metadata = metadata.model_copy(update={"schemas": kept})
        else:
            if metadata.default_spec_id in removal.spec_ids:
                raise BadRequest(f"Cannot remove the default partition spec {metadata.default_spec_id}")
            specs = [s for s in metadata.partition_specs if s.spec_id not in removal.spec_ids]
            metadata = metadata.model_copy(update={"partition_specs": specs})
    return metadata


def _log_previous(metadata: TableMetadata, previous: TableMetadata, previous_location: str) -> TableMetadata:
    """Record the previous metadata file when only server-side updates (removals) changed the table."""
    if metadata.metadata_log and metadata.metadata_log[-1].metadata_file == previous_location:
        return metadata
    keep = max(1, int(metadata.properties.get("write.metadata.previous-versions-max", "100")))
    entry = MetadataLogEntry.model_validate(
        {"metadata_file": previous_location, "timestamp_ms": previous.last_updated_ms}
    )
    return metadata.model_copy(
        update={"metadata_log": [*metadata.metadata_log, entry][-keep:], "last_updated_ms": int(time.time() * 1000)}
    )


def apply_commit(
    current: TableMetadata | None,
    current_location: str | None,
    requirements: Sequence[TableRequirement],
    updates: Sequence[TableUpdate | Removal | SetStatisticsBody | AddLineageSnapshotBody],
) -> TableMetadata:
    """Validate the requirements against ``current`` and return the metadata after the updates.

    Raises:
        CommitFailedException: a requirement does not hold (the client refreshes and retries).
        ValueError / pyiceberg ValidationError: the updates break Iceberg's rules (a 400).
    """
    for requirement in requirements:
        validate_requirement(requirement, current)
    removals = [u for u in updates if isinstance(u, RemoveSchemasUpdate | RemovePartitionSpecsUpdate)]
    added = [u.snapshot for u in updates if isinstance(u, AddLineageSnapshotBody)]
    others = [
        u.to_update() if isinstance(u, SetStatisticsBody | AddLineageSnapshotBody) else u
        for u in updates
        if not isinstance(u, RemoveSchemasUpdate | RemovePartitionSpecsUpdate)
    ]
    for update in others:
        if isinstance(update, UpgradeFormatVersionUpdate):
            check_format_version(update.format_version)
    base = _apply_removals(current if current is not None else empty_metadata(), removals)
    if upgrade_target(others) == ROW_LINEAGE_VERSION:  # pyiceberg refuses this upgrade: done here, first
        if base.format_version > ROW_LINEAGE_VERSION:
            raise BadRequest(f"Cannot downgrade v{base.format_version} table to v{ROW_LINEAGE_VERSION}")
        base = upgraded(base)
        others = [u for u in others if not isinstance(u, UpgradeFormatVersionUpdate)]
    if base.format_version >= ROW_LINEAGE_VERSION:
        check_row_lineage(current, added)
    try:
        result = update_table_metadata(
            base_metadata=base,
            updates=normalize_updates(base, others),
            enforce_validation=current is None,
            metadata_location=current_location,
        )
    except PydanticValidationError as exc:  # only a create validates the whole result
        raise BadRequest(f"The updates do not make a valid new table: {describe_validation_error(exc)}") from exc
    except INPUT_FAULTS as exc:
        raise BadRequest(f"The updates cannot be applied: {type(exc).__name__}: {exc}") from None
    check_format_version(result.format_version)
    result = with_row_lineage(result, current, added)
    if removals and current is not None and current_location is not None and result != current:
        result = _log_previous(result, current, current_location)
    return result


def check_format_version(version: object) -> int:
    """The table format version as an int, if this server can write it (1, 2 or 3).

    Raises:
        BadRequest: not a number, or not a version this server knows.
    """
    try:
        number = int(str(version))
    except ValueError:
        raise BadRequest(f"Invalid format-version {version!r}: use 1, 2 or 3") from None
    if not 1 <= number <= ROW_LINEAGE_VERSION:
        raise BadRequest(f"Unsupported format version: {number} (use 1, 2 or 3)")
    return number


def metadata_version(location: str | None) -> int:
    """The version number of a metadata file name (``00042-<uuid>.metadata.json``), -1 if it has none."""
    if not location:
        return -1
    match = _VERSION.search(location)
    return int(match.group(1)) if match else -1


def new_metadata_file_name(previous_location: str | None) -> str:
    """File name of the next metadata version, ``NNNNN-<uuid>.metadata.json`` as Java writes them."""
    return f"{metadata_version(previous_location) + 1:05d}-{uuid.uuid4()}.metadata.json"


def refs_only(metadata: TableMetadata) -> TableMetadata:
    """Metadata with only the snapshots referenced by branches and tags (``snapshots=refs``)."""
    referenced = {ref.snapshot_id for ref in metadata.refs.values()}
    kept = [s for s in metadata.snapshots if s.snapshot_id in referenced]
    return metadata.model_copy(update={"snapshots": kept})

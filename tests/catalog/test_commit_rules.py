"""Pure commit rules: Java's id reuse on top of pyiceberg's updates, and view version handling."""

from __future__ import annotations

import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AssertCreate,
    AssertCurrentSchemaId,
    SetCurrentSchemaUpdate,
    SetDefaultSpecUpdate,
)
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from mt_magic.catalog.server.commits import (
    apply_commit,
    is_create,
    metadata_version,
    normalize_updates,
)
from mt_magic.catalog.server.errors_http import BadRequest
from mt_magic.catalog.server.table_updates import RemovePartitionSpecsUpdate, RemoveSchemasUpdate
from mt_magic.catalog.server.views import (
    AddViewVersionUpdate,
    AssertViewUUID,
    CreateViewBody,
    SetCurrentViewVersionUpdate,
    StorageTableIdentifier,
    ViewMetadata,
    ViewRepresentation,
    ViewVersion,
    apply_view_commit,
    new_view_metadata,
)

ID, NAME = NestedField(1, "id", LongType()), NestedField(2, "name", StringType())


def table(spec: PartitionSpec | None = None):  # type: ignore[no-untyped-def]
    return new_table_metadata(
        Schema(ID, NAME), spec or PartitionSpec(), UNSORTED_SORT_ORDER, "file:///w/t", {"format-version": "2"}
    )


def test_replace_resending_the_current_schema_and_spec_reuses_them() -> None:
    base = table(PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id")))
    again = [
        AddSchemaUpdate(schema_=Schema(ID, NAME, schema_id=0)),
        SetCurrentSchemaUpdate(schema_id=-1),
        AddPartitionSpecUpdate(spec=PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"), spec_id=0)),
        SetDefaultSpecUpdate(spec_id=-1),
    ]
    assert normalize_updates(base, again) == (SetCurrentSchemaUpdate(schema_id=0), SetDefaultSpecUpdate(spec_id=0))
    result = apply_commit(base, "file:///w/t/metadata/00000-a.metadata.json", [], again)
    assert [s.schema_id for s in result.schemas] == [0] and [s.spec_id for s in result.partition_specs] == [0]


def test_new_schema_and_spec_with_a_taken_id_get_the_next_one() -> None:
    base = table()
    wider = Schema(ID, NAME, NestedField(3, "extra", StringType()), schema_id=0)
    bucketed = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket"), spec_id=0)
    result = apply_commit(
        base,
        None,
        [],
        [
            AddSchemaUpdate(schema_=wider),
            SetCurrentSchemaUpdate(schema_id=-1),
            AddPartitionSpecUpdate(spec=bucketed),
            SetDefaultSpecUpdate(spec_id=-1),
        ],
    )
    assert [s.schema_id for s in result.schemas] == [0, 1] and result.current_schema_id == 1
    assert [s.spec_id for s in result.partition_specs] == [0, 1] and result.default_spec_id == 1
    assert result.last_column_id == 3


def test_last_added_without_an_add_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="no schema was added"):
        normalize_updates(table(), [SetCurrentSchemaUpdate(schema_id=-1)])


def test_requirements_are_checked_before_updates() -> None:
    with pytest.raises(CommitFailedException, match="Requirement failed: current schema changed: expected id"):
        apply_commit(table(), None, [AssertCurrentSchemaId(current_schema_id=7)], [])
    with pytest.raises(BadRequest, match="assert-create must be the only requirement"):
        is_create([AssertCreate(), AssertCurrentSchemaId(current_schema_id=0)])


def test_metadata_versions_follow_java_file_names() -> None:
    assert metadata_version("s3://b/t/metadata/00042-6c97e413.metadata.json") == 42
    assert metadata_version("file:///t/metadata/v3.metadata.json") == -1
    assert metadata_version(None) == -1


def view_version(sql: str, schema_id: int = 0) -> ViewVersion:
    return ViewVersion(
        version_id=99,
        timestamp_ms=1,
        schema_id=schema_id,
        summary={},
        representations=[ViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=["db"],
    )


def test_view_replace_adds_a_version_and_reuses_identical_ones() -> None:
    body = CreateViewBody(name="v", schema=Schema(ID), view_version=view_version("SELECT 1"), properties={})
    base = new_view_metadata(body, "file:///w/db/v")
    assert base.current_version_id == 1 and base.schemas[0].schema_id == 0
    replaced = apply_view_commit(
        base,
        [AssertViewUUID(uuid=base.view_uuid)],
        [
            AddSchemaUpdate(schema_=Schema(ID, NAME, schema_id=5)),
            AddViewVersionUpdate(view_version=view_version("SELECT 2", schema_id=-1)),
            SetCurrentViewVersionUpdate(view_version_id=-1),
        ],
    )
    assert replaced.current_version_id == 2 and [s.schema_id for s in replaced.schemas] == [0, 1]
    assert replaced.version(2).schema_id == 1 and [e.version_id for e in replaced.version_log] == [1, 2]
    back = apply_view_commit(
        replaced,
        [],
        [AddViewVersionUpdate(view_version=view_version("SELECT 1")), SetCurrentViewVersionUpdate(view_version_id=-1)],
    )
    assert back.current_version_id == 1 and len(back.versions) == 2
    with pytest.raises(CommitFailedException, match="Requirement failed: view UUID does not match"):
        apply_view_commit(base, [AssertViewUUID(uuid="other")], [])


def test_view_versions_keep_the_storage_table_pointer_and_differ_by_it_and_by_summary() -> None:
    """The materialized-view proposal's ``storage-table`` survives the round trip through the metadata file, and
    a version differing only in that pointer, or in a summary entry other than ``operation``, is a new version
    (Java's ``sameViewVersion``); differing only in ``operation`` reuses the old one."""
    pointed = view_version("SELECT 1").model_copy(
        update={"storage_table": StorageTableIdentifier(namespace=["db"], name="t")}
    )
    base = new_view_metadata(CreateViewBody(name="v", schema=Schema(ID), view_version=pointed), "file:///w/db/v")
    assert ViewMetadata.model_validate_json(base.model_dump_json()).version(1).storage_table == (
        StorageTableIdentifier(namespace=["db"], name="t")
    )
    assert '"storage-table":{"namespace":["db"],"name":"t"}' in base.model_dump_json()
    assert "storage-table" not in view_version("SELECT 1").model_dump_json()

    def replace(metadata: ViewMetadata, version: ViewVersion) -> ViewMetadata:
        updates = [AddViewVersionUpdate(view_version=version), SetCurrentViewVersionUpdate(view_version_id=-1)]
        return apply_view_commit(metadata, [], updates)

    moved = replace(
        base, pointed.model_copy(update={"storage_table": StorageTableIdentifier(namespace=["db"], name="u")})
    )
    assert moved.current_version_id == 2 and moved.version(2).storage_table.name == "u"
    again = replace(moved, pointed.model_copy(update={"summary": {"operation": "replace"}}))
    assert again.current_version_id == 1 and len(again.versions) == 2
    tagged = replace(again, pointed.model_copy(update={"summary": {"mt.definition-version": "2"}}))
    assert tagged.current_version_id == 3 and len(tagged.versions) == 3


def test_removing_unused_schemas_is_logged_and_the_current_one_is_protected() -> None:
    base = apply_commit(
        table(), None, [], [AddSchemaUpdate(schema_=Schema(ID, schema_id=1)), SetCurrentSchemaUpdate(schema_id=-1)]
    )
    location = "file:///w/t/metadata/00001-a.metadata.json"
    result = apply_commit(base, location, [], [RemoveSchemasUpdate(schema_ids=[0])])
    assert [s.schema_id for s in result.schemas] == [1]
    assert result.metadata_log[-1].metadata_file == location and result.last_updated_ms >= base.last_updated_ms
    with pytest.raises(BadRequest, match="Cannot remove the current schema 1"):
        apply_commit(result, location, [], [RemoveSchemasUpdate(schema_ids=[1])])
    with pytest.raises(BadRequest, match="Cannot remove the default partition spec 0"):
        apply_commit(result, location, [], [RemovePartitionSpecsUpdate(spec_ids=[0])])

"""Table requirements checked with the texts of Java's ``UpdateRequirement``.

pyiceberg's requirement models parse the wire format, and their ``validate`` checks the same conditions, but
with texts of their own ("current schema id has changed: expected 0, found 1"). Java clients show the server's
text to users, and Iceberg's REST Compatibility Kit asserts Java's ("Requirement failed: current schema
changed: expected id 0 != 1"), so the checks here raise exactly those.
"""

from __future__ import annotations

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)

TABLE_EXISTS = "Requirement failed: table already exists"


def _failed(text: str) -> CommitFailedException:
    return CommitFailedException(f"Requirement failed: {text}")


def _check_ref(requirement: AssertRefSnapshotId, base: TableMetadata) -> None:
    ref = base.refs.get(requirement.ref)
    expected = requirement.snapshot_id
    if ref is not None:
        kind = "branch" if ref.snapshot_ref_type == SnapshotRefType.BRANCH else "tag"
        if expected is None:
            raise _failed(f"{kind} {requirement.ref} was created concurrently")
        if expected != ref.snapshot_id:
            raise _failed(f"{kind} {requirement.ref} has changed: expected id {expected} != {ref.snapshot_id}")
    elif expected is not None:
        raise _failed(f"branch or tag {requirement.ref} is missing, expected {expected}")


def validate_requirement(requirement: TableRequirement, base: TableMetadata | None) -> None:
    """Check one requirement against the table's current metadata (``None``: the table does not exist).

    Raises:
        CommitFailedException: the requirement does not hold (a 409; the client refreshes and retries).
    """
    if isinstance(requirement, AssertCreate):
        if base is not None:
            raise CommitFailedException(TABLE_EXISTS)
        return
    if base is None:
        raise _failed("current table metadata is missing")
    if isinstance(requirement, AssertTableUUID):
        if str(requirement.uuid).lower() != str(base.table_uuid).lower():
            raise _failed(f"UUID does not match: expected {base.table_uuid} != {requirement.uuid}")
    elif isinstance(requirement, AssertRefSnapshotId):
        _check_ref(requirement, base)
    elif isinstance(requirement, AssertLastAssignedFieldId):
        if base.last_column_id != requirement.last_assigned_field_id:
            raise _failed(
                f"last assigned field id changed: expected id {requirement.last_assigned_field_id} "
                f"!= {base.last_column_id}"
            )
    elif isinstance(requirement, AssertCurrentSchemaId):
        if base.current_schema_id != requirement.current_schema_id:
            raise _failed(
                f"current schema changed: expected id {requirement.current_schema_id} != {base.current_schema_id}"
            )
    elif isinstance(requirement, AssertLastAssignedPartitionId):
        if base.last_partition_id != requirement.last_assigned_partition_id:
            raise _failed(
                f"last assigned partition id changed: expected id {requirement.last_assigned_partition_id} "
                f"!= {base.last_partition_id}"
            )
    elif isinstance(requirement, AssertDefaultSpecId):
        if base.default_spec_id != requirement.default_spec_id:
            raise _failed(
                f"default partition spec changed: expected id {requirement.default_spec_id} != {base.default_spec_id}"
            )
    elif isinstance(requirement, AssertDefaultSortOrderId):
        if base.default_sort_order_id != requirement.default_sort_order_id:
            raise _failed(
                f"default sort order changed: expected id {requirement.default_sort_order_id} "
                f"!= {base.default_sort_order_id}"
            )
    else:  # a requirement type added to pyiceberg later: its own check
        requirement.validate(base)

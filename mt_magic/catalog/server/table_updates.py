"""Table updates the server accepts beyond pyiceberg's models, and the union of all of them.

pyiceberg lacks ``remove-schemas`` and ``remove-partition-specs`` (Java sends them from
``expire_snapshots(clean_expired_metadata => true)``), its ``set-statistics`` model only validates when
built in Python, not from JSON, and its ``add-snapshot`` drops the v3 row-lineage fields
(:mod:`mt_magic.catalog.server.format_v3`). The models here parse those from the wire;
:func:`mt_magic.catalog.server.commits.apply_commit` applies them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from pyiceberg.table.statistics import StatisticsFile
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    AssignUUIDUpdate,
    RemovePartitionStatisticsUpdate,
    RemovePropertiesUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPartitionStatisticsUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    SetStatisticsUpdate,
    UpgradeFormatVersionUpdate,
)
from pyiceberg.typedef import IcebergBaseModel

from mt_magic.catalog.server.format_v3 import AddLineageSnapshotBody


class RemoveSchemasUpdate(IcebergBaseModel):
    """Remove schemas no snapshot uses any more (never the current one)."""

    action: Literal["remove-schemas"] = Field(default="remove-schemas")
    schema_ids: list[int] = Field(alias="schema-ids")


class RemovePartitionSpecsUpdate(IcebergBaseModel):
    """Remove partition specs no manifest uses any more (never the default one)."""

    action: Literal["remove-partition-specs"] = Field(default="remove-partition-specs")
    spec_ids: list[int] = Field(alias="spec-ids")


class SetStatisticsBody(IcebergBaseModel):
    """``set-statistics`` as parsed from JSON (pyiceberg's model only validates when built in Python)."""

    action: Literal["set-statistics"] = Field(default="set-statistics")
    statistics: StatisticsFile
    snapshot_id: int | None = Field(alias="snapshot-id", default=None)

    def to_update(self) -> SetStatisticsUpdate:
        return SetStatisticsUpdate.model_validate({"statistics": self.statistics})


Removal = RemoveSchemasUpdate | RemovePartitionSpecsUpdate

# Every table update the server accepts: pyiceberg's, plus the removals above.
AnyTableUpdate = Annotated[
    (
        AssignUUIDUpdate
        | UpgradeFormatVersionUpdate
        | AddSchemaUpdate
        | SetCurrentSchemaUpdate
        | AddPartitionSpecUpdate
        | SetDefaultSpecUpdate
        | AddSortOrderUpdate
        | SetDefaultSortOrderUpdate
        | AddLineageSnapshotBody
        | SetSnapshotRefUpdate
        | RemoveSnapshotsUpdate
        | RemoveSnapshotRefUpdate
        | SetLocationUpdate
        | SetPropertiesUpdate
        | RemovePropertiesUpdate
        | SetStatisticsBody
        | RemoveStatisticsUpdate
        | SetPartitionStatisticsUpdate
        | RemovePartitionStatisticsUpdate
        | RemoveSchemasUpdate
        | RemovePartitionSpecsUpdate
    ),
    Field(discriminator="action"),
]

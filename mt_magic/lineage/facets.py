"""The facets a refresh adds to its events: OpenLineage's own (schema, symlinks, version, column lineage, job type,
SQL, nominal time, error message) and ``mt_magic_refresh``, this project's run facet with the refresh's decision."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import attr
from openlineage.client.generated import (
    column_lineage_dataset,
    job_type_job,
    schema_dataset,
    symlinks_dataset,
)
from openlineage.client.generated.base import RunFacet

from mt_magic.lineage.naming import DatasetName

PRODUCER = "urn:mt_magic"
"""Who produced an event (a URI, as the spec asks; the package version follows: ``urn:mt_magic:0.1.0``)."""
REFRESH_FACET = "mt_magic_refresh"
REFRESH_FACET_SCHEMA = "urn:mt_magic:facets:MtMagicRefreshRunFacet:1"


@dataclass(frozen=True)
class RefreshSummary:
    """What a committed (or skipped) refresh decided and cost: the run facet's content."""

    kind: str
    """``full``, ``incremental``, ``partition`` or ``noop``."""
    strategy: str
    reason: str
    rows_written: int
    snapshot_id: int | None
    engine: str
    wall_s: float | None = None
    spark_task_s: float | None = None
    bytes_read: int | None = None
    estimated_incremental_s: float | None = None
    estimated_full_s: float | None = None


@attr.define
class MtMagicRefreshRunFacet(RunFacet):
    """The refresh's decision: why it ran (``trigger``), what it chose (``kind``, ``strategy``, ``reason``), what
    it wrote and what it cost (measured, and the estimates it chose by)."""

    trigger: str
    kind: str | None = attr.field(default=None)
    strategy: str | None = attr.field(default=None)
    reason: str | None = attr.field(default=None)
    engine: str | None = attr.field(default=None)
    rowsWritten: int | None = attr.field(default=None)  # noqa: N815 - OpenLineage's spelling
    snapshotId: int | None = attr.field(default=None)  # noqa: N815
    cost: dict[str, Any] | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return REFRESH_FACET_SCHEMA


def refresh_facet(trigger: str, summary: RefreshSummary | None) -> MtMagicRefreshRunFacet:
    if summary is None:
        return MtMagicRefreshRunFacet(trigger=trigger)
    cost = {
        "wallSeconds": summary.wall_s,
        "sparkTaskSeconds": summary.spark_task_s,
        "bytesRead": summary.bytes_read,
        "estimatedIncrementalSeconds": summary.estimated_incremental_s,
        "estimatedFullSeconds": summary.estimated_full_s,
    }
    return MtMagicRefreshRunFacet(
        trigger=trigger,
        kind=summary.kind,
        strategy=summary.strategy or None,
        reason=summary.reason or None,
        engine=summary.engine,
        rowsWritten=summary.rows_written,
        snapshotId=summary.snapshot_id,
        cost={k: v for k, v in cost.items() if v is not None},
    )


def schema_facet(columns: Sequence[tuple[str, str, bool]]) -> schema_dataset.SchemaDatasetFacet:
    """The table's columns (name, Iceberg type) in order."""
    return schema_dataset.SchemaDatasetFacet(
        fields=[
            schema_dataset.SchemaDatasetFacetFields(name=name, type=kind, ordinal_position=i + 1)
            for i, (name, kind, _) in enumerate(columns)
        ]
    )


def symlinks_facet(dataset: DatasetName) -> symlinks_dataset.SymlinksDatasetFacet:
    """The table's name in its catalog, as Spark's integration links an Iceberg table's location to it."""
    return symlinks_dataset.SymlinksDatasetFacet(
        identifiers=[symlinks_dataset.Identifier(dataset.table_namespace, dataset.table_name, "TABLE")]
    )


def column_lineage_facet(
    origins: Mapping[str, Sequence[tuple[DatasetName, str, str]]],
) -> column_lineage_dataset.ColumnLineageDatasetFacet:
    """Output column → the (source dataset, column, subtype) it is computed from, all ``DIRECT``."""
    return column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={
            output: column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(
                        namespace=source.namespace,
                        name=source.name,
                        field=column,
                        transformations=[column_lineage_dataset.Transformation(type="DIRECT", subtype=subtype)],
                    )
                    for source, column, subtype in feeds
                ]
            )
            for output, feeds in origins.items()
        }
    )


def job_type_facet() -> job_type_job.JobTypeJobFacet:
    return job_type_job.JobTypeJobFacet(processingType="BATCH", integration="MT_MAGIC", jobType="REFRESH")

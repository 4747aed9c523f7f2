"""The run events of one refresh, built from the catalog: the sources as inputs (each at the snapshot the refresh
read, with its schema), the table as output (at the snapshot it committed, with its schema, column lineage and row
count), the refresh's decision as a run facet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.generated import (
    dataset_version_dataset,
    error_message_run,
    nominal_time_run,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    sql_job,
)

from mt_magic.catalog.tables import MaterializedCatalog, TableInfo
from mt_magic.lineage import facets
from mt_magic.lineage.facets import RefreshSummary
from mt_magic.lineage.naming import DatasetName, dataset_name, job_name
from mt_magic.sql.query.column_lineage import column_origins


@dataclass(frozen=True)
class LineageRun:
    """One refresh as OpenLineage sees it: its run id and what it was asked to do."""

    run_id: str
    table: str
    trigger: str
    scheduled_time: datetime
    started_at: datetime


@dataclass(frozen=True)
class Producer:
    """Who sends the events, where the tables live, and the job's namespace and parent."""

    namespace: str
    version: str
    parent: tuple[str, str, str] | None = None
    """(namespace, job name, run id) of the run that started this one (an Airflow task)."""


def _uri(catalog: MaterializedCatalog) -> str:
    return str(getattr(catalog.catalog, "properties", {}).get("uri", "")) or f"iceberg:{catalog.spark_name}"


def _dataset(catalog: MaterializedCatalog, info: TableInfo) -> DatasetName:
    location = getattr(getattr(info.iceberg, "metadata", None), "location", "") or info.name
    return dataset_name(info.name, str(location), _uri(catalog))


def _dataset_facets(dataset: DatasetName, info: TableInfo, snapshot_id: int | None) -> dict[str, Any]:
    found: dict[str, Any] = {"schema": facets.schema_facet(info.columns), "symlinks": facets.symlinks_facet(dataset)}
    if snapshot_id is not None:
        found["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(snapshot_id))
    return found


def _load(catalog: MaterializedCatalog, name: str) -> TableInfo | None:
    try:
        return catalog.load(name)
    except Exception:  # a source dropped meanwhile, or in another catalog: it is left out, not guessed
        return None


def _written_as(upstream: Sequence[str], written: str) -> str | None:
    """The upstream table a name as written in the query refers to (``orders``, ``db.orders``, ``mt.db.orders``)."""
    parts = written.split(".")
    return next((u for u in upstream if u.split(".")[-len(parts) :] == parts), None)


def _column_lineage(query: str, upstream: Sequence[str], sources: Mapping[str, DatasetName]) -> Any:
    origins: dict[str, list[tuple[DatasetName, str, str]]] = {}
    for output, feeds in column_origins(query).items():
        for origin in feeds:
            name = _written_as(upstream, origin.table)
            if name is not None and name in sources:
                origins.setdefault(output, []).append((sources[name], origin.column, origin.subtype))
    return facets.column_lineage_facet(origins) if origins else None


def _sources(info: TableInfo, summary: RefreshSummary | None) -> dict[str, int | None]:
    """Each source and the snapshot this refresh read (``None``: unknown yet, or an empty source)."""
    definition = info.definition
    upstream = tuple(definition.upstream) if definition is not None else ()
    snapshot = summary.snapshot_id if summary is not None else None
    state = next((s.refresh_state for s in info.snapshots if s.snapshot_id == snapshot), None)
    if state is None and summary is not None:  # a no-op read what the last refresh read
        last = info.last_refresh()
        state = last[1] if last is not None else None
    if state is None:
        return dict.fromkeys(upstream)
    return {s.qualified_name: s.snapshot_id for s in state.source_states}


def build_event(
    catalog: MaterializedCatalog,
    producer: Producer,
    run: LineageRun,
    state: RunState,
    at: datetime,
    summary: RefreshSummary | None = None,
    error: str | None = None,
) -> RunEvent:
    """The START, COMPLETE or FAIL event of ``run`` (reads the table and its sources from the catalog)."""
    info = catalog.load(run.table)
    definition = info.definition
    inputs: list[InputDataset] = []
    names: dict[str, DatasetName] = {}
    for name, snapshot_id in _sources(info, summary).items():
        source = _load(catalog, name)
        if source is None:
            continue
        names[name] = dataset = _dataset(catalog, source)
        inputs.append(
            InputDataset(dataset.namespace, dataset.name, facets=_dataset_facets(dataset, source, snapshot_id))
        )
    table = _dataset(catalog, info)
    written = summary.snapshot_id if summary is not None and summary.snapshot_id is not None else None
    output_facets = _dataset_facets(table, info, written if state is RunState.COMPLETE else None)
    query = definition.expanded_query or definition.query if definition is not None else ""
    lineage = _column_lineage(query, tuple(names), names) if query else None
    if lineage is not None:
        output_facets["columnLineage"] = lineage
    statistics: dict[str, Any] = {}
    if summary is not None and state is RunState.COMPLETE:
        statistics["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=summary.rows_written
        )
    output = OutputDataset(table.namespace, table.name, facets=output_facets, outputFacets=statistics)
    return RunEvent(
        eventType=state,
        eventTime=at.isoformat(),
        run=Run(runId=run.run_id, facets=_run_facets(producer, run, summary, error)),
        job=Job(namespace=producer.namespace, name=job_name(run.table), facets=_job_facets(query)),
        inputs=inputs,
        outputs=[output],
        producer=f"{facets.PRODUCER}:{producer.version}",
    )


def _run_facets(producer: Producer, run: LineageRun, summary: RefreshSummary | None, error: str | None) -> dict:
    found: dict[str, Any] = {
        "nominalTime": nominal_time_run.NominalTimeRunFacet(nominalStartTime=run.scheduled_time.isoformat()),
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=producer.version, name="mt_magic", openlineageAdapterVersion=producer.version
        ),
        facets.REFRESH_FACET: facets.refresh_facet(run.trigger, summary),
    }
    if producer.parent is not None:
        namespace, name, run_id = producer.parent
        found["parent"] = parent_run.ParentRunFacet(
            run=parent_run.Run(runId=run_id), job=parent_run.Job(namespace=namespace, name=name)
        )
    if error is not None:
        found["errorMessage"] = error_message_run.ErrorMessageRunFacet(message=error, programmingLanguage="python")
    return found


def _job_facets(query: str) -> dict[str, Any]:
    found: dict[str, Any] = {"jobType": facets.job_type_facet()}
    if query:
        found["sql"] = sql_job.SQLJobFacet(query=query, dialect="spark")
    return found

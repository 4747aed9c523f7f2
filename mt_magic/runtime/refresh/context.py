"""What every refresh shares: its context, the pinned sources, the result conformed to the table, options.

Used by the full recompute (:mod:`.run`) and by every incremental strategy (:mod:`.incremental`), so both
read sources, cast results and honour the ``'incremental'`` option the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import SourceState
from mt_magic.catalog.tables import MaterializedCatalog, TableInfo
from mt_magic.runtime.spark.jobs import SparkJobs
from mt_magic.runtime.spark.quoting import identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

INCREMENTAL_OPTION = "incremental"
"""WITH option: ``'strict'`` makes a CONTINUOUS refresh fail rather than fall back to a full recompute;
``'auto'`` (the default) falls back and records why."""
INCREMENTAL_VALUES = ("strict", "auto")
@dataclass(frozen=True)
class RefreshContext:
    """What every refresh needs: Spark jobs, catalog metadata, and the clock."""

    jobs: SparkJobs
    catalog: MaterializedCatalog
    clock: Callable[[], datetime]


def load_sources(catalog: MaterializedCatalog, upstream: tuple[str, ...]) -> tuple[TableInfo, ...]:
    """Every source's metadata, read once at the start of a refresh: its current snapshot is the pinned one."""
    return tuple(catalog.load(name) for name in upstream)


def source_state(info: TableInfo, catalog_name: str) -> SourceState:
    return SourceState(info.namespace, info.table_name, info.uuid, info.current_snapshot_id, catalog_name)


def pin_source_states(catalog: MaterializedCatalog, upstream: tuple[str, ...]) -> tuple[SourceState, ...]:
    """The current snapshot of every source, read once at the start of a refresh."""
    return tuple(source_state(info, catalog.spark_name) for info in load_sources(catalog, upstream))


def conform(df: DataFrame, target: DataFrame) -> DataFrame:
    """The query result as the table's columns: by name, in table order, cast to the table's types.

    One ``selectExpr`` (a single call into the JVM), not a Column per field: this runs on every refresh.
    Struct types go through Columns: their type strings do not quote nested field names.
    """
    from pyspark.sql import functions as F

    present = set(df.columns)
    fields = target.schema.fields
    if any("struct<" in f.dataType.simpleString() for f in fields):
        return df.select([
            (F.col(identifier(f.name)) if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in fields
        ])
    return df.selectExpr(*[
        f"CAST({identifier(f.name) if f.name in present else 'NULL'} AS {f.dataType.simpleString()}) "
        f"AS {identifier(f.name)}"
        for f in fields
    ])


def incremental_option(options: Mapping[str, str]) -> str | None:
    """The ``'incremental'`` WITH option, normalised (``None`` when not given)."""
    value = options.get(INCREMENTAL_OPTION)
    return None if value is None else value.strip().lower()


def is_strict(options: Mapping[str, str]) -> bool:
    return incremental_option(options) == "strict"

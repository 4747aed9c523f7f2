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
from mt_magic.errors import (
    CatalogError,
    CatalogUnavailableError,
    NoSuchMaterializedTableError,
    NoSuchSourceTableError,
    first_line,
)
from mt_magic.options import DEFAULT_MAX_CHANGE as DEFAULT_MAX_CHANGE
from mt_magic.options import ENGINE, INCREMENTAL, MAX_CHANGE
from mt_magic.options import IncrementalPolicy as IncrementalPolicy
from mt_magic.runtime.spark.jobs import SparkJobs
from mt_magic.runtime.spark.quoting import identifier
from mt_magic.runtime.status import MissingSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

INCREMENTAL_OPTION = INCREMENTAL.key
MAX_CHANGE_OPTION = MAX_CHANGE.key
ENGINE_OPTION = ENGINE.key
"""The keys as their readers here and in :mod:`.incremental` (another owner's package) name them; each option is
declared once, with its values, default and help, in :mod:`mt_magic.options`."""


@dataclass(frozen=True)
class RefreshContext:
    """What every refresh needs: Spark jobs, catalog metadata, and the clock."""

    jobs: SparkJobs
    catalog: MaterializedCatalog
    clock: Callable[[], datetime]


def load_sources(catalog: MaterializedCatalog, table: str, upstream: tuple[str, ...]) -> tuple[TableInfo, ...]:
    """Every source's metadata, read once at the start of a refresh: its current snapshot is the pinned one.

    Raises:
        NoSuchSourceTableError: a source is not in the catalog.
    """
    return tuple(load_source(catalog, table, name) for name in upstream)


def load_source(catalog: MaterializedCatalog, table: str, source: str, *, reuse_unchanged: bool = False) -> TableInfo:
    """The metadata of ``source``, a source of the materialized table ``table``.

    Raises:
        NoSuchSourceTableError: ``source`` is not in the catalog (the error names both tables and the fixes).
    """
    try:
        return catalog.load(source, reuse_unchanged=reuse_unchanged)
    except NoSuchMaterializedTableError:
        raise NoSuchSourceTableError(table, source) from None
    except CatalogUnavailableError:
        raise
    except CatalogError as exc:  # the catalog has it but cannot load it (its metadata is unreadable)
        raise NoSuchSourceTableError(table, source, f"cannot be read ({first_line(exc)})") from exc


def missing_source(catalog: MaterializedCatalog, table: str, upstream: tuple[str, ...]) -> MissingSource | None:
    """The first source of ``table`` the catalog does not have now (``None``: it has them all)."""
    for source in upstream:
        if not catalog.exists(source):
            return MissingSource(source, str(NoSuchSourceTableError(table, source)))
    return None


def source_state(info: TableInfo, catalog_name: str) -> SourceState:
    return SourceState(info.namespace, info.table_name, info.uuid, info.current_snapshot_id, catalog_name)


def conform(df: DataFrame, target: DataFrame) -> DataFrame:
    """The query result as the table's columns: by name, in table order, cast to the table's types.

    One ``selectExpr`` (a single call into the JVM), not a Column per field: this runs on every refresh.
    Struct types go through Columns: their type strings do not quote nested field names.
    """
    from pyspark.sql import functions as F

    present = set(df.columns)
    fields = target.schema.fields
    if any("struct<" in f.dataType.simpleString() for f in fields):
        return df.select(
            [
                (F.col(identifier(f.name)) if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name)
                for f in fields
            ]
        )
    return df.selectExpr(
        *[
            f"CAST({identifier(f.name) if f.name in present else 'NULL'} AS {f.dataType.simpleString()}) "
            f"AS {identifier(f.name)}"
            for f in fields
        ]
    )


def incremental_policy(options: Mapping[str, str]) -> IncrementalPolicy:
    """The table's policy (``AUTO`` when not given; the grammar refuses unknown values, read as ``AUTO`` here)."""
    try:
        return INCREMENTAL.read(options) or IncrementalPolicy.AUTO
    except ValueError:
        return IncrementalPolicy.AUTO


def is_strict(options: Mapping[str, str]) -> bool:
    return incremental_policy(options) is IncrementalPolicy.STRICT


def max_change_fraction(options: Mapping[str, str]) -> float | None:
    """``'incremental.max-change-fraction'`` as a number in (0, 1]; ``None`` when not given (the default applies
    where a recompute can be cheaper: :data:`DEFAULT_MAX_CHANGE`).

    Raises:
        ValueError: not a fraction in (0, 1] (the grammar refuses those before they are stored).
    """
    return MAX_CHANGE.read(options)

"""What every refresh shares: its context, the pinned sources, the result conformed to the table, options.

Used by the full recompute (:mod:`.run`) and by every incremental strategy (:mod:`.incremental`), so both
read sources, cast results and honour the ``'incremental'`` option the same way.
"""

from __future__ import annotations

import enum
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
from mt_magic.runtime.spark.jobs import SparkJobs
from mt_magic.runtime.spark.quoting import identifier
from mt_magic.runtime.status import MissingSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

INCREMENTAL_OPTION = "incremental"
"""WITH option: how a CONTINUOUS table chooses between an incremental refresh and a full recompute."""
MAX_CHANGE_OPTION = "incremental.max-change-fraction"
"""WITH option for ``'auto'``: past this fraction of the changed sources' rows, a full recompute is chosen."""
ENGINE_OPTION = "incremental.engine"
"""WITH option: ``'auto'`` (the default: small append-only refreshes of simple queries run in process, see
:mod:`.incremental.in_process`) or ``'spark'`` (every refresh runs on Spark)."""
ENGINE_VALUES = ("auto", "spark")
DEFAULT_MAX_CHANGE = 0.3
"""Incremental work grows with the change and a recompute does not: past about a third of the input changed,
recomputing wins (pg_trickle measured incremental at 0.6–0.7× of a recompute at 50 % changed). Measured here
(``bench_incremental.py --parts crossover``, 2 M rows): a GROUP BY merge at 0.98× of a recompute at 30 %, 0.73× at
67 %; the partitioned affected-partition recompute 0.95× at 30 %, 0.54× at 67 %. An append of the delta has no
crossover (see :func:`.incremental.planner.cheaper_to_recompute`)."""


class IncrementalPolicy(enum.Enum):
    """The ``'incremental'`` WITH option of a CONTINUOUS table."""

    AUTO = "auto"
    """The default (Snowflake's ADAPTIVE): incremental where correct and cheaper, else a full recompute, and why."""
    ALWAYS = "always"
    """Incremental wherever correct, whatever the change costs; a full recompute only where it must."""
    STRICT = "strict"
    """Incremental or nothing: a refresh that would need a full recompute fails instead."""
    NEVER = "never"
    """Always recompute (on the CONTINUOUS schedule): for queries whose deltas cost more than they save."""


INCREMENTAL_VALUES = tuple(p.value for p in IncrementalPolicy)


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


def incremental_option(options: Mapping[str, str]) -> str | None:
    """The ``'incremental'`` WITH option, normalised (``None`` when not given)."""
    value = options.get(INCREMENTAL_OPTION)
    return None if value is None else value.strip().lower()


def incremental_policy(options: Mapping[str, str]) -> IncrementalPolicy:
    """The table's policy (``AUTO`` when not given; CREATE refuses unknown values)."""
    value = incremental_option(options)
    return IncrementalPolicy(value) if value in INCREMENTAL_VALUES else IncrementalPolicy.AUTO


def is_strict(options: Mapping[str, str]) -> bool:
    return incremental_policy(options) is IncrementalPolicy.STRICT


def max_change_fraction(options: Mapping[str, str]) -> float | None:
    """``'incremental.max-change-fraction'`` as a number in (0, 1]; ``None`` when not given (the default applies
    where a recompute can be cheaper: :data:`DEFAULT_MAX_CHANGE`)."""
    raw = options.get(MAX_CHANGE_OPTION)
    return None if raw is None else float(raw)

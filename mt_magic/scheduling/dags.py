"""What Airflow DAG a materialized table asks for — derived from its definition alone, without Airflow.

One DAG per table on Airflow, with one task (the refresh) whose outlet is the table's **Asset**. Its schedule:

* the Assets of the materialized tables it reads that are on Airflow too (data-aware: it runs after an
  upstream's refresh commits, instead of on a clock) — any one of them updating is enough, as a CONTINUOUS
  table in the kernel is due when any upstream commits;
* else its cron (FULL mode) when the cron has five fields, or its freshness interval (CONTINUOUS mode, and
  FULL crons with seconds, which Airflow's cron cannot say).

The kernel computes the same ids (:func:`dag_id`) to pause, unpause and trigger the DAG through the REST API.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.scheduling.workflow import scheduler_of
from mt_magic.vocabulary import RefreshMode, WorkflowSchedulerKind

DAG_PREFIX = "mt__"
ASSET_SCHEME = "iceberg"
_DAG_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def dag_id(table: str) -> str:
    """The DAG id of a table's refresh workflow: ``mt__<catalog>.<namespace>.<table>``.

    Airflow allows letters, digits, ``_``, ``.`` and ``-`` in DAG ids; other characters (mt_magic allows spaces,
    quotes, non-ASCII letters in names) become ``_`` and a hash of the full name keeps two such names apart.

    >>> dag_id("mt.default.daily_totals")
    'mt__mt.default.daily_totals'
    >>> dag_id("mt.default.daily totals")
    'mt__mt.default.daily_totals_e745b679'
    """
    safe = _DAG_ID_UNSAFE.sub("_", table)
    if safe != table:
        safe += "_" + hashlib.sha256(table.encode()).hexdigest()[:8]
    return DAG_PREFIX + safe


def catalog_dag_id(table: str) -> str:
    """The id of the DAG file's own DAG for ``table``'s catalog (``airflow_dags.catalog_dag``; it never runs).

    >>> catalog_dag_id("mt.sales.daily")
    'mt__mt'
    """
    return dag_id(table.split(".", 1)[0])


def asset_uri(table: str) -> str:
    """The Airflow Asset URI of a table: ``iceberg://<catalog>/<namespace…>/<table>``, each part quoted.

    >>> asset_uri("mt.sales.daily totals")
    'iceberg://mt/sales/daily%20totals'
    """
    parts = table.split(".")
    return f"{ASSET_SCHEME}://" + "/".join(quote(part, safe="") for part in parts)


@dataclass(frozen=True)
class DagSpec:
    """One table's DAG as data (``airflow_dags`` turns it into an Airflow DAG)."""

    table: str
    dag_id: str
    asset_uri: str
    cron: str | None
    """A five-field cron (FULL mode): runs at each tick."""
    every: timedelta | None
    """An interval (CONTINUOUS mode, or a FULL cron Airflow cannot say): runs every so often."""
    upstream_assets: tuple[tuple[str, str], ...]
    """(table, Asset URI) of the upstream tables on Airflow: when present, the DAG runs on their updates."""
    suspended: bool
    """SUSPEND pauses the DAG; a DAG parsed for a suspended table starts paused."""
    description: str


def dag_spec(name: str, definition: MaterializedTableDefinition, on_airflow: Iterable[str]) -> DagSpec:
    """The DAG of table ``name``; ``on_airflow`` names every materialized table on Airflow (for its upstreams)."""
    airflow_tables = set(on_airflow)
    upstream = tuple((u, asset_uri(u)) for u in definition.upstream if u in airflow_tables)
    cron = definition.cron if definition.refresh_mode is RefreshMode.FULL else ""
    five_fields = bool(cron) and len(cron.split()) == 5
    every = None if five_fields else (definition.interval or None)
    schedule = (
        "on updates of " + ", ".join(u for u, _ in upstream)
        if upstream
        else (f"cron {cron}" if five_fields else f"every {definition.freshness}")
    )
    return DagSpec(
        table=name,
        dag_id=dag_id(name),
        asset_uri=asset_uri(name),
        cron=cron if five_fields else None,
        every=every,
        upstream_assets=upstream,
        suspended=definition.suspended,
        description=f"Refreshes materialized table {name} ({definition.refresh_mode.value}, {schedule}).",
    )


def airflow_specs(tables: Iterable[tuple[str, MaterializedTableDefinition]]) -> list[DagSpec]:
    """The DAGs of every table on Airflow among ``tables`` (name, definition); tables on the kernel have none."""
    chosen = [(name, d) for name, d in tables if scheduler_of(d.options) is WorkflowSchedulerKind.AIRFLOW]
    names = [name for name, _ in chosen]
    return [dag_spec(name, definition, names) for name, definition in chosen]

"""``python -m mt_magic refresh <table> [--partition k=v]``: one refresh, then exit — what an Airflow task runs.

The same path as a refresh in the kernel: the service (an inline manager), the same strategies and the one commit.
And the same refresh lease: the process asks the catalog's lease map for the table first (a kernel or runner
holding it hands it over after its current refresh, never during it), keeps it renewed while the refresh runs,
and gives it back at the end, so the kernel and Airflow never refresh a table at the same time.

Output: the refresh's strategy line, rows, snapshot and Spark job ids, then one line ``mt_magic result: {json}``
that the Airflow task reads into the Asset event's extra. A failure prints ``error: …`` and exits 1.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mt_magic.errors import MtMagicError, first_line
from mt_magic.runtime.manager.lease_keeper import (
    DEFAULT_LEASE_TTL,
    LeaseKeeper,
    LeaseWishes,
    catalog_principal,
    holder_id,
)
from mt_magic.runtime.manager.lease_pass import lease_every
from mt_magic.runtime.spark.jobs import job_group_prefix
from mt_magic.runtime.workspace import utc_now
from mt_magic.sql.names import TableName
from mt_magic.vocabulary import RefreshTrigger

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mt_magic.runtime.status import RefreshOutcome

RESULT_PREFIX = "mt_magic result: "
"""The last line of a successful one-shot refresh: a JSON object (the Asset event's extra)."""


class LeaseWaitError(MtMagicError):
    """Another process kept refreshing the table for longer than this refresh would wait."""


def parse_partition(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``k=v`` arguments as a partition spec.

    Raises:
        MtMagicError: an argument without ``=`` (the message shows it).
    """
    pairs = []
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise MtMagicError(f"--partition {value!r}: write COLUMN=VALUE, e.g. --partition ds=2026-11-25")
        pairs.append((key.strip(), text))
    return tuple(pairs)


@contextmanager
def holding_lease(keeper: LeaseKeeper, table: str, wait: timedelta) -> Iterator[None]:
    """Take ``table``'s refresh lease (asking its holder to hand it over), keep it renewed, give it back.

    Raises:
        LeaseWaitError: the holder did not hand the lease over within ``wait``.
        CatalogUnavailableError: the catalog cannot be reached.
    """
    every = lease_every(keeper).total_seconds()
    deadline = time.monotonic() + wait.total_seconds()
    wanted = frozenset({table})
    while True:
        keeper.sync(LeaseWishes(wanted, urgent=wanted), utc_now())
        if keeper.holds(table, utc_now()):
            break
        if time.monotonic() > deadline:
            holder = keeper.holder_of(table, utc_now()) or "another process"
            raise LeaseWaitError(
                f"{table} is being refreshed by {holder}, which did not hand its refresh lease over within "
                f"{wait.total_seconds():.0f} s; this run refreshed nothing (Airflow retries it)"
            )
        time.sleep(every)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(every):
            try:
                keeper.sync(LeaseWishes(wanted, busy=wanted), utc_now())
            except MtMagicError as exc:  # the commit's own check still keeps the table exact
                print(f"warning: renewing the refresh lease of {table} failed: {exc}", file=sys.stderr, flush=True)

    renewer = threading.Thread(target=renew, name="mt-oneshot-lease", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join(timeout=10)
        keeper.release_all()


def spark_job_ids(spark: SparkSession, table: str, runs: int = 8) -> list[int]:
    """The Spark jobs this process ran for ``table``'s refresh (its job groups are numbered from 1; none over
    Spark Connect, whose server does not tell clients its job ids)."""
    from mt_magic.runtime.spark.session import job_ids_of_groups

    return job_ids_of_groups(spark, (f"{job_group_prefix(table)}{number}" for number in range(runs + 1)))


def result_extra(table: str, outcome: RefreshOutcome, job_ids: list[int], seconds: float) -> dict[str, Any]:
    """What the Asset event carries: the table, the snapshot, the strategy line, rows, engine, Spark jobs."""
    return {
        "table": table,
        "kind": outcome.kind.value,
        "snapshot_id": outcome.snapshot_id,
        "rows": outcome.rows_written,
        "strategy": outcome.strategy,
        "engine": outcome.engine.value,
        "spark_job_ids": job_ids,
        "committed_at": outcome.committed_at.isoformat() if outcome.committed_at else None,
        "seconds": round(seconds, 3),
    }


def refresh_once(
    table: str,
    catalog: str,
    partition: Sequence[str] = (),
    trigger: RefreshTrigger = RefreshTrigger.MANUAL,
    master: str | None = None,
    lease_wait: timedelta = timedelta(minutes=10),
) -> int:
    """Refresh ``table`` once under its lease; returns the process exit code (0 done, 1 failed)."""
    from mt_magic.catalog.leases import CatalogLeases
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.runtime.spark.session import SparkSettings

    started = time.monotonic()
    try:
        spec = parse_partition(partition)
        spark = SparkSettings(master=master) if master else SparkSettings()
        settings = ConnectionSettings(catalog, spark=spark, start_manager=False, use_namespace=False)
        conn = connect(settings)
        name = conn.service.workspace.qualify(TableName.from_parts(table.split(".")))
        conn.service.workspace.catalog.load_materialized(name)  # a clear error for an unknown table, first
        conn.service.workflows.run_here = True  # this process is the scheduler's worker: refresh here
        leases = CatalogLeases(conn.service.workspace.catalog.catalog, catalog)
        principal = catalog_principal(conn.service.workspace.catalog.catalog)
        keeper = LeaseKeeper(leases, holder_id("airflow", principal), DEFAULT_LEASE_TTL)
        with holding_lease(keeper, name, lease_wait):
            print(f"mt_magic: refreshing {name} (lease held as {keeper.holder})", flush=True)
            future = conn.service.refresh(name, spec, trigger=trigger).refresh
            assert future is not None
            outcome = future.result()
        extra = result_extra(name, outcome, spark_job_ids(conn.spark, name), time.monotonic() - started)
    except MtMagicError as exc:  # Airflow keeps this line (the task's error): no row of a table in it
        print(f"error: {exc.without_rows()}", file=sys.stderr, flush=True)
        return 1
    except Exception as exc:  # Spark's and Py4J's errors: the line that names the problem
        print(f"error: refreshing {table} failed: {first_line(exc)}", file=sys.stderr, flush=True)
        return 1
    print(f"mt_magic: {extra['kind']} refresh of {name}: {extra['strategy'] or extra['kind']}", flush=True)
    print(
        f"mt_magic: {extra['rows']} row(s), snapshot {extra['snapshot_id']}, engine {extra['engine']}, "
        f"Spark jobs {extra['spark_job_ids'] or 'none'}",
        flush=True,
    )
    print(RESULT_PREFIX + json.dumps(extra, sort_keys=True), flush=True)
    return 0

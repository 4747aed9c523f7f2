"""One refresher per table: the headless runner (a real subprocess) and a kernel's manager (a connection in this
process) on one catalog. Only the lease holder refreshes; a manual REFRESH in the other process takes the lease
over after the holder's current refresh; when the holder stops, the other takes the table back.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_support import CATALOG, RunnerOutput, append_batch, drop_namespace_tables, rows_of, wait_until

from mt_magic.runtime.status import EventKind, RefreshEvent

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

NS = "lease"
TOTALS = f"{CATALOG}.{NS}.totals"
IDENT = (NS, "totals")


@pytest.fixture(scope="module")
def tables(spark, iceberg) -> Iterator[None]:
    """A source and a 3-second CONTINUOUS table, created without any manager."""
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.sql import parse_cell

    service = connect(
        ConnectionSettings(catalog_name=CATALOG, namespace=NS, start_manager=False, use_namespace=False)
    ).service
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.events (batch INT, v INT) USING iceberg")
    append_batch(iceberg, (NS, "events"), 0)
    try:
        for statement in parse_cell(
            "CREATE MATERIALIZED TABLE totals FRESHNESS = INTERVAL '3' SECOND "
            "AS SELECT batch, count(*) AS n FROM events GROUP BY batch"
        ):
            service.execute(statement).refresh.result(timeout=120)
        yield
    finally:
        drop_namespace_tables(iceberg, NS)


def lease_holder(iceberg) -> str | None:  # type: ignore[no-untyped-def]
    from mt_magic.catalog.leases import CatalogLeases

    lease = CatalogLeases(iceberg, CATALOG).read().leases.get(TOTALS)
    return lease.holder if lease is not None else None


def batches(iceberg) -> set[int]:  # type: ignore[no-untyped-def]
    return {row[0] for row in rows_of(iceberg, IDENT)}


def test_the_runner_and_a_kernel_never_both_refresh_and_hand_the_table_over(
    tables, iceberg, subprocess_env, tmp_path: Path
) -> None:
    from mt_magic.runtime.connection import ConnectionSettings, connect

    cmd = [sys.executable, "-m", "mt_magic", "run", "--catalog", CATALOG, "--namespace", NS, "--master", "local[2]"]
    with open(tmp_path / "runner.stderr", "w") as stderr:
        proc = subprocess.Popen(
            cmd,
            env=subprocess_env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    output = RunnerOutput(proc.stdout)
    try:
        wait_until(lambda: (lease_holder(iceberg) or "").startswith("runner"), 180, "the runner to take the lease")
        kernel = connect(ConnectionSettings(catalog_name=CATALOG, namespace=NS, use_namespace=False))
        assert kernel.manager is not None
        started: list[RefreshEvent] = []
        kernel.manager.subscribe(lambda e: started.append(e) if e.kind is EventKind.REFRESH_STARTED else None)
        try:
            append_batch(iceberg, (NS, "events"), 1)
            wait_until(lambda: batches(iceberg) == {0, 1}, 90, "the runner to refresh")
            status = kernel.service.status(TOTALS)
            assert (status.refreshed_by or "").startswith("runner") and not status.refreshed_here
            assert started == [], "the kernel refreshed a table the runner holds"

            append_batch(iceberg, (NS, "events"), 2)  # a manual refresh here: the runner hands the lease over
            kernel.service.refresh(TOTALS).refresh.result(timeout=120)
            assert batches(iceberg) >= {0, 1, 2}
            assert lease_holder(iceberg) == kernel.manager.lease_holder
            assert kernel.service.status(TOTALS).refreshed_here
            mark = len(output.snapshot())
            append_batch(iceberg, (NS, "events"), 3)
            wait_until(lambda: batches(iceberg) == {0, 1, 2, 3}, 60, "the kernel to refresh on its schedule")
            assert output.events(TOTALS, "refresh-started", after=mark) == [], "the runner refreshed a kernel's table"
        finally:
            kernel.close()  # releases: the runner takes the table back at its next lease pass
        mark = len(output.snapshot())
        wait_until(lambda: (lease_holder(iceberg) or "").startswith("runner"), 30, "the runner to take it back")
        append_batch(iceberg, (NS, "events"), 4)
        wait_until(lambda: batches(iceberg) == {0, 1, 2, 3, 4}, 60, "the runner to refresh again")
        assert output.events(TOTALS, "refresh-succeeded", after=mark)
    finally:
        proc.terminate()
        proc.wait(timeout=60)

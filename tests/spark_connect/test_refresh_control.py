"""A real refresh, stopped and watched through the engine the manager drives: on the Connect line its queries carry
an operation tag that ``cancel`` interrupts, and its progress comes from Connect's progress reports; on the classic
lines the same test runs on job groups and the status tracker."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import pytest
from shared_catalog import CATALOG

from mt_magic.errors import RefreshCancelledError

pytestmark = pytest.mark.spark

# A full recompute with a cross join: tens of seconds on two cores, so it is caught mid-way.
SLOW = (
    "CREATE MATERIALIZED TABLE slow WITH ('incremental.engine' = 'spark') FRESHNESS = INTERVAL '1' HOUR "
    "REFRESH_MODE = FULL AS SELECT a.k, sum(a.v * b.v) AS s FROM base a CROSS JOIN base b GROUP BY a.k"
)


def run(service, cell: str) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.sql import parse_cell

    for statement in parse_cell(cell):
        result = service.execute(statement)
        if result.refresh is not None:
            result.refresh.result(timeout=300)


def test_cancelling_a_running_refresh_stops_it_commits_nothing_and_progress_was_shown(mt, spark) -> None:
    from mt_magic.runtime.status import RefreshRequest
    from mt_magic.vocabulary import RefreshTrigger

    spark.sql("CREATE TABLE base (k INT, v BIGINT) USING iceberg").collect()
    spark.sql("INSERT INTO base SELECT CAST(id % 10 AS INT), id FROM range(3)").collect()
    run(mt, SLOW)  # the first refresh is small
    name = f"{CATALOG}.{mt.workspace.default_namespace}.slow"
    first = mt.workspace.catalog.load_materialized(name)[0].current_snapshot_id
    spark.sql("INSERT INTO base SELECT CAST(id % 10 AS INT), id FROM range(3, 60000, 1, 4)").collect()
    group = f"mt-refresh:{name}:77"
    request = RefreshRequest(name, RefreshTrigger.MANUAL, datetime.now(timezone.utc), job_group=group)
    outcome: dict[str, object] = {}

    def refresh() -> None:
        try:
            outcome["result"] = mt.engine.refresh(request)
        except Exception as exc:  # the cancellation, checked below
            outcome["result"] = exc

    worker = threading.Thread(target=refresh)
    worker.start()
    deadline = time.monotonic() + 120
    seen = None
    while seen is None and time.monotonic() < deadline and worker.is_alive():
        progress = mt.engine.progress(group)
        seen = progress if progress is not None and progress.tasks_total > 0 else None
        threading.Event().wait(0.2)
    assert seen is not None, f"no progress while the refresh ran ({outcome})"
    # A cancel stops the group's running jobs; one the run starts afterwards would run on until the check before
    # the commit, so cancel again while it runs (as a suspend's cancel lands whenever it lands).
    stop_by = time.monotonic() + 60
    while worker.is_alive() and time.monotonic() < stop_by:
        mt.engine.cancel(group)
        worker.join(timeout=1)
    assert not worker.is_alive(), "the cancelled refresh kept running"
    assert isinstance(outcome["result"], RefreshCancelledError), outcome
    assert mt.workspace.catalog.load_materialized(name)[0].current_snapshot_id == first  # nothing committed
    assert mt.engine.jobs.wait_finished(f"mt-refresh:{name}:", timeout=5)
    spark.sql("DELETE FROM base WHERE v >= 3").collect()  # the next refresh is small again, and works
    run(mt, "ALTER MATERIALIZED TABLE slow REFRESH")
    assert sorted(row["k"] for row in spark.table(name).collect()) == [0, 1, 2]

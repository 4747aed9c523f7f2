"""Airflow's view of a table on Airflow — its last DAG run, that run's log, the next run, paused or not — polled
cheaply and cached, so a card, ``%mt`` or DESCRIBE never waits on Airflow.

:func:`fetch_run_view` asks two things of the REST API (the DAG, its newest run). :class:`AirflowRunCache` hands
out what it last saw at once and, when that is older than ``max_age``, asks again on its one poller thread; an
unreachable or refusing Airflow is a view with ``error`` set (shown as such), never an exception to the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from mt_magic.errors import WorkflowSchedulerError, first_line
from mt_magic.scheduling.airflow_api import AirflowClient, DagNotFoundError, DagRunInfo
from mt_magic.scheduling.dags import dag_id

REFRESH_TASK = "refresh"
"""The task id of every table's DAG (:func:`mt_magic.scheduling.airflow_dags.build_dag`)."""
DEFAULT_MAX_AGE = timedelta(seconds=10)


@dataclass(frozen=True)
class AirflowRunView:
    """What Airflow says of one table's DAG, as of ``checked_at``."""

    table: str
    dag_id: str
    checked_at: datetime
    error: str = ""
    """Airflow could not be asked (unreachable, refused credentials): the message, else empty."""
    parsed: bool = True
    """False: Airflow has no DAG for the table yet (its DAG processor has not parsed it)."""
    paused: bool = False
    last_run: DagRunInfo | None = None
    log_url: str = ""
    """The last run's refresh task in Airflow's UI (its log)."""
    next_run_after: str | None = None
    """When Airflow creates the next scheduled run (``None``: on its upstream Assets' updates, or paused)."""
    schedule: str = ""

    @property
    def failing(self) -> bool:
        """Airflow's last run of the table failed (the failure lives in Airflow, not in this kernel)."""
        return self.last_run is not None and self.last_run.state == "failed"


def fetch_run_view(client: AirflowClient, table: str, now: datetime) -> AirflowRunView:
    """Ask Airflow now (two calls); every failure becomes a view with ``error``."""
    dag = dag_id(table)
    try:
        info = client.dag(dag)
        runs = client.dag_runs(dag, limit=1)
    except DagNotFoundError:
        return AirflowRunView(table, dag, now, parsed=False)
    except WorkflowSchedulerError as exc:
        return AirflowRunView(table, dag, now, error=first_line(exc))
    last = runs[0] if runs else None
    return AirflowRunView(
        table,
        dag,
        now,
        paused=info.is_paused,
        last_run=last,
        log_url=client.task_url(dag, last.run_id, REFRESH_TASK) if last else "",
        next_run_after=info.next_run_after,
        schedule=info.schedule,
    )


class AirflowRunCache:
    """The last :class:`AirflowRunView` of each table, refreshed in the background when older than ``max_age``.

    ``get`` never blocks on Airflow: it answers what it has (``None`` before the first answer) and, when that is
    stale, asks once on the poller thread (one at a time per table). ``close`` stops the thread.
    """

    def __init__(
        self,
        client: Callable[[], AirflowClient],
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        max_age: timedelta = DEFAULT_MAX_AGE,
    ) -> None:
        self._client = client
        self._clock = clock
        self.max_age = max_age
        self._views: dict[str, AirflowRunView] = {}
        self._asking: set[str] = set()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def get(self, table: str) -> AirflowRunView | None:
        with self._lock:
            view = self._views.get(table)
            stale = view is None or self._clock() - view.checked_at >= self.max_age
            if stale and table not in self._asking:
                self._asking.add(table)
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mt-airflow-runs")
                self._pool.submit(self._ask, table)
        return view

    def forget(self, table: str | None = None) -> None:
        """Drop what was seen (a statement changed the table on Airflow): the next ``get`` asks again."""
        with self._lock:
            if table is None:
                self._views.clear()
            else:
                self._views.pop(table, None)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _ask(self, table: str) -> None:
        try:
            try:
                view = fetch_run_view(self._client(), table, self._clock())
            except WorkflowSchedulerError as exc:  # no Airflow configured: said on the card, like unreachable
                view = AirflowRunView(table, dag_id(table), self._clock(), error=first_line(exc))
            with self._lock:
                self._views[table] = view
        finally:
            with self._lock:
                self._asking.discard(table)


def airflow_time(text: str | None) -> str:
    """Airflow's ISO timestamp as ``2026-01-02 10:00:05 UTC`` (``—`` without one).

    >>> airflow_time("2026-01-02T10:00:05.123456Z")
    '2026-01-02 10:00:05 UTC'
    """
    if not text:
        return "—"
    moment = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def run_facts(view: AirflowRunView | None) -> list[tuple[str, str]]:
    """(label, text) lines of Airflow's view of a table, for the card, ``%mt status`` and DESCRIBE."""
    if view is None:
        return [("airflow", "asking Airflow for the DAG's runs …")]
    if view.error:
        return [("airflow", f"unreachable at {airflow_time(_iso(view.checked_at))}: {view.error}")]
    if not view.parsed:
        return [("airflow", f"no DAG {view.dag_id} yet: Airflow's DAG processor has not parsed it")]
    dag = f"{view.dag_id} · {'paused' if view.paused else 'active'}"
    rows = [("airflow DAG", dag + (f" · schedule {view.schedule}" if view.schedule else ""))]
    last = view.last_run
    if last is None:
        rows.append(("airflow last run", "none yet"))
    else:
        failed = (
            " (the refresh failed in Airflow: its log says why; Airflow retries and alerts)" if view.failing else ""
        )
        times = f"started {airflow_time(last.start_date)} · ended {airflow_time(last.end_date)}"
        rows.append(("airflow last run", f"{last.state or 'queued'}{failed} · {last.run_type} · {times}"))
        rows.append(("airflow log", view.log_url))
    rows.append(("airflow next run", _next_run(view)))
    return rows


def _next_run(view: AirflowRunView) -> str:
    if view.paused:
        return "none while the DAG is paused"
    if view.next_run_after:
        return airflow_time(view.next_run_after)
    return "when its upstream tables' Assets update" if "asset" in view.schedule.lower() else "—"


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()

"""A fake of :class:`mt_magic.scheduling.airflow_api.AirflowClient` for the logic tests: DAGs, pauses, parse
requests and runs in memory, every call recorded, and a switch that makes Airflow unreachable (in addition to the
real Airflow of ``tests/airflow``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from mt_magic.scheduling.airflow_api import (
    AirflowSettings,
    AirflowUnavailableError,
    DagInfo,
    DagNotFoundError,
    DagRunInfo,
)

SETTINGS = AirflowSettings("http://airflow.test:8080", token="t")


class FakeAirflowClient:
    def __init__(self, settings: AirflowSettings = SETTINGS) -> None:
        self.settings = settings
        self.dag_infos: dict[str, DagInfo] = {}
        self.runs: dict[str, list[DagRunInfo]] = {}
        self.calls: list[tuple[str, ...]] = []
        self.unreachable = False
        self.on_call: Callable[[str, tuple[str, ...]], None] | None = None
        self.gate: threading.Event | None = None
        """Set: ``dag`` waits for it (a slow Airflow)."""

    def add_dag(self, dag_id: str, paused: bool = False, **kw: Any) -> None:
        self.dag_infos[dag_id] = DagInfo(dag_id, paused, False, f"token-of-{dag_id}", **kw)

    def _enter(self, *call: str) -> None:
        if self.unreachable:
            raise AirflowUnavailableError(f"Airflow at {self.settings.url} cannot be reached (ConnectionError)")
        self.calls.append(call)
        if self.on_call is not None:
            self.on_call(call[0], call)

    def _known(self, dag_id: str) -> DagInfo:
        if dag_id not in self.dag_infos:
            raise DagNotFoundError(f"Airflow at {self.settings.url} has no DAG {dag_id!r} yet")
        return self.dag_infos[dag_id]

    def version(self) -> str:
        self._enter("version")
        return "3.test"

    def dag(self, dag_id: str) -> DagInfo:
        if self.gate is not None:
            self.gate.wait(30)
        self._enter("dag", dag_id)
        return self._known(dag_id)

    def set_paused(self, dag_id: str, paused: bool) -> DagInfo:
        self._enter("set_paused", dag_id, str(paused))
        self.dag_infos[dag_id] = replace(self._known(dag_id), is_paused=paused)
        return self.dag_infos[dag_id]

    def reparse(self, file_token: str) -> None:
        self._enter("reparse", file_token)

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None, note: str = "") -> DagRunInfo:
        self._enter("trigger", dag_id)
        self._known(dag_id)
        run = DagRunInfo(dag_id, f"manual__{len(self.calls)}", "queued", "manual", dict(conf or {}), None, None)
        self.runs.setdefault(dag_id, []).insert(0, run)
        return run

    def dag_runs(self, dag_id: str, limit: int = 20) -> list[DagRunInfo]:
        self._enter("dag_runs", dag_id)
        self._known(dag_id)
        return self.runs.get(dag_id, [])[:limit]

    def task_url(self, dag_id: str, run_id: str, task_id: str) -> str:
        return f"{self.settings.url}/dags/{dag_id}/runs/{run_id}/tasks/{task_id}"

    def of(self, kind: str) -> list[tuple[str, ...]]:
        return [call for call in self.calls if call[0] == kind]

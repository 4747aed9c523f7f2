"""A small typed client of Apache Airflow 3's REST API: what the kernel asks of Airflow *now*.

Pause and unpause a DAG (SUSPEND, RESUME, DROP), trigger a run with conf (REFRESH, backfill), read a DAG and a
run. Authentication is Airflow 3's: a JWT bearer token, either given (``MT_MAGIC_AIRFLOW_TOKEN``) or obtained from
the auth manager's ``POST /auth/token`` with a user and password (``MT_MAGIC_AIRFLOW_USERNAME`` / ``_PASSWORD``),
configured like the catalog — environment variables, or ``%config MaterializedMagics.airflow_*``.

Every failure is one :class:`~mt_magic.errors.WorkflowSchedulerError` that says what to do: Airflow unreachable,
credentials refused, the DAG not parsed yet. Uses ``requests`` (already installed with pyiceberg).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mt_magic.errors import WorkflowSchedulerError
from mt_magic.loopback import direct_session

ENV_PREFIX = "MT_MAGIC_AIRFLOW_"
DEFAULT_TIMEOUT = 10.0


class AirflowUnavailableError(WorkflowSchedulerError):
    """Airflow's API server cannot be reached (refused, timed out, or answered 5xx)."""


class AirflowAuthError(WorkflowSchedulerError):
    """Airflow refused the credentials or the token (401), or the user may not do this (403)."""


class DagNotFoundError(WorkflowSchedulerError):
    """Airflow does not know the table's DAG (yet): its DAG processor has not parsed it."""


@dataclass(frozen=True)
class AirflowSettings:
    """Where Airflow's API server is and how to authenticate (a token, or a user and password)."""

    url: str
    username: str = ""
    password: str = ""
    token: str = ""
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise WorkflowSchedulerError(
                f"Airflow URL {self.url!r} is not an http(s) URL",
                fix="set MT_MAGIC_AIRFLOW_URL=http://host:8080 or %config MaterializedMagics.airflow_url",
            )
        if not self.token and not (self.username and self.password):
            raise WorkflowSchedulerError(
                f"no credentials for Airflow at {self.url}",
                fix="set MT_MAGIC_AIRFLOW_USERNAME and MT_MAGIC_AIRFLOW_PASSWORD_FILE (or _PASSWORD, or "
                "MT_MAGIC_AIRFLOW_TOKEN), or the matching %config MaterializedMagics.airflow_* settings, before "
                "airflow_url",
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AirflowSettings | None:
        """``MT_MAGIC_AIRFLOW_URL`` (and ``_USERNAME``, ``_PASSWORD``, ``_TOKEN``); ``None`` without a URL."""
        env = os.environ if env is None else env
        url = env.get(ENV_PREFIX + "URL", "")
        if not url:
            return None
        username = env.get(ENV_PREFIX + "USERNAME", "")
        password = env.get(ENV_PREFIX + "PASSWORD", "")
        if not password and env.get(ENV_PREFIX + "PASSWORD_FILE"):
            password = password_from_file(env[ENV_PREFIX + "PASSWORD_FILE"], username, "MT_MAGIC_AIRFLOW_PASSWORD_FILE")
        return cls(url.rstrip("/"), username, password, env.get(ENV_PREFIX + "TOKEN", ""))


def password_from_file(path: str, username: str, where: str) -> str:
    """The password of ``username`` in a file: Airflow's simple auth manager's ``{user: password}`` JSON (what
    ``python -m mt_magic.scheduling.local_airflow`` keeps), or the password alone on its first line.

    Raises:
        WorkflowSchedulerError: the file cannot be read, or its JSON has no entry for ``username``.
    """
    import json

    try:
        text = Path(path).expanduser().read_text()
    except OSError as exc:
        raise WorkflowSchedulerError(
            f"{where} = {path!r}: cannot read it ({exc.strerror})",
            fix="name the password file that python -m mt_magic.scheduling.local_airflow printed, or set the "
            "password itself",
        ) from None
    try:
        users = json.loads(text)
    except ValueError:
        return text.strip()
    if not isinstance(users, dict) or not isinstance(users.get(username), str):
        named = list(users) if isinstance(users, dict) else []
        raise WorkflowSchedulerError(
            f"{where} = {path!r} holds no password of user {username!r}",
            fix=f"set the Airflow user the file names ({', '.join(map(repr, named)) or 'none'}) as airflow_username",
        )
    return str(users[username])


@dataclass(frozen=True)
class DagInfo:
    dag_id: str
    is_paused: bool
    is_stale: bool
    """Airflow no longer finds it in the DAG files (e.g. its table was dropped)."""
    file_token: str = ""
    """Airflow's token of the DAG's file (``PUT /api/v2/parseDagFile/{file_token}`` asks for a parse now)."""
    schedule: str = ""
    """Airflow's summary of its timetable (e.g. ``0:05:00`` or ``0 * * * *``; the upstream Assets' names)."""
    next_run_after: str | None = None
    """``next_dagrun_run_after``: when the scheduler creates the next scheduled run (ISO text, UTC)."""
    next_logical_date: str | None = None
    """``next_dagrun_logical_date`` (``None`` for Asset-triggered DAGs and trigger timetables without a date)."""
    last_parsed: str | None = None


@dataclass(frozen=True)
class DagRunInfo:
    dag_id: str
    run_id: str
    state: str
    """``queued``, ``running``, ``success`` or ``failed``."""
    run_type: str
    conf: Mapping[str, Any]
    start_date: str | None
    end_date: str | None


class AirflowClient:
    """Airflow 3's ``/api/v2`` for one API server; the token is fetched on first use and again after a 401."""

    def __init__(self, settings: AirflowSettings) -> None:
        import requests

        self.settings = settings
        self._http = direct_session(settings.url, requests.Session())  # its token and password: never via a proxy
        self._token = settings.token

    def close(self) -> None:
        self._http.close()

    # --- the calls the statements make -------------------------------------------------------------------

    def dag(self, dag_id: str) -> DagInfo:
        """Raises DagNotFoundError when Airflow has not parsed the DAG (yet)."""
        return _dag(self._call("GET", f"/api/v2/dags/{_part(dag_id)}", dag_id=dag_id))

    def set_paused(self, dag_id: str, paused: bool) -> DagInfo:
        return _dag(self._call("PATCH", f"/api/v2/dags/{_part(dag_id)}", {"is_paused": paused}, dag_id=dag_id))

    def reparse(self, file_token: str) -> None:
        """Ask the DAG processor to parse a DAG file now, ahead of its periodic parse (Airflow 3's priority
        parsing request; the processor takes it up within a few seconds). Airflow answers 409 while a request
        for the file is still pending: that request covers this one."""
        self._call("PUT", f"/api/v2/parseDagFile/{_part(file_token)}", accept=(409,))

    def task_url(self, dag_id: str, run_id: str, task_id: str) -> str:
        """The task instance's page in Airflow 3's UI (its log): ``/dags/{dag}/runs/{run}/tasks/{task}``."""
        return f"{self.settings.url}/dags/{_part(dag_id)}/runs/{_part(run_id)}/tasks/{_part(task_id)}"

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None, note: str = "") -> DagRunInfo:
        """A manual run now (``logical_date`` None: Airflow 3 allows many runs without a date)."""
        body: dict[str, Any] = {"logical_date": None, "conf": dict(conf or {})}
        if note:
            body["note"] = note
        return _run(self._call("POST", f"/api/v2/dags/{_part(dag_id)}/dagRuns", body, dag_id=dag_id))

    def dag_run(self, dag_id: str, run_id: str) -> DagRunInfo:
        return _run(self._call("GET", f"/api/v2/dags/{_part(dag_id)}/dagRuns/{_part(run_id)}", dag_id=dag_id))

    def dag_runs(self, dag_id: str, limit: int = 20) -> list[DagRunInfo]:
        """The DAG's latest runs, newest first."""
        path = f"/api/v2/dags/{_part(dag_id)}/dagRuns?order_by=-run_after&limit={limit}"
        return [_run(item) for item in self._call("GET", path, dag_id=dag_id).get("dag_runs", [])]

    def asset_events(self, source_dag_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The Asset events a DAG's runs emitted, newest first (each with the refresh's result as ``extra``)."""
        path = f"/api/v2/assets/events?source_dag_id={_part(source_dag_id)}&order_by=-timestamp&limit={limit}"
        return list(self._call("GET", path).get("asset_events", []))

    def version(self) -> str:
        return str(self._call("GET", "/api/v2/version").get("version", ""))

    # --- transport, auth and the one mapping of failures ----------------------------------------------------

    def _login(self) -> str:
        import requests

        where = f"Airflow at {self.settings.url}"
        try:
            response = self._http.post(
                self.settings.url + "/auth/token",
                json={"username": self.settings.username, "password": self.settings.password},
                timeout=self.settings.timeout,
            )
        except requests.RequestException as exc:
            raise _unreachable(where, exc) from exc
        if response.status_code in (400, 401, 403):
            raise AirflowAuthError(
                f"{where} refused user {self.settings.username!r} ({response.status_code}: {_detail(response)})",
                fix="check MT_MAGIC_AIRFLOW_USERNAME / MT_MAGIC_AIRFLOW_PASSWORD (or %config "
                "MaterializedMagics.airflow_username / airflow_password)",
            )
        if response.status_code >= 300:
            raise AirflowUnavailableError(
                f"{where} could not log in: {response.status_code} {_detail(response)}",
                fix=_AGAIN,
            )
        return str(response.json()["access_token"])

    def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        dag_id: str = "",
        accept: tuple[int, ...] = (),
    ) -> Any:
        """Airflow's JSON answer; ``accept``: statuses that mean done here (answered as ``{}``)."""
        import requests

        where = f"Airflow at {self.settings.url}"
        for attempt in (1, 2):
            if not self._token:
                self._token = self._login()
            try:
                response = self._http.request(
                    method,
                    self.settings.url + path,
                    json=body,
                    headers={"Authorization": f"Bearer {self._token}"},
                    timeout=self.settings.timeout,
                )
            except requests.RequestException as exc:
                raise _unreachable(where, exc) from exc
            if response.status_code == 401 and attempt == 1 and self.settings.username and self.settings.password:
                self._token = ""  # expired: log in again once
                continue
            break
        if response.status_code in accept:
            return {}
        if response.status_code == 401:
            raise AirflowAuthError(
                f"{where} refused the token ({_detail(response)})",
                fix="set a valid MT_MAGIC_AIRFLOW_TOKEN or a user and password (MT_MAGIC_AIRFLOW_USERNAME / "
                "MT_MAGIC_AIRFLOW_PASSWORD)",
            )
        if response.status_code == 403:
            raise AirflowAuthError(
                f"{where}: user {self.settings.username or '(token)'} may not {method} {path} ({_detail(response)})",
                fix="give it a role that can edit and trigger DAGs",
            )
        if response.status_code == 404 and dag_id:
            raise DagNotFoundError(
                f"{where} has no DAG {dag_id!r} yet: its DAG processor builds it from the catalog at its next parse",
                fix="put a file importing mt_magic.scheduling.airflow_dags in the DAGs folder (see the README's "
                "'Scheduling on Airflow'), then run the statement again",
            )
        if response.status_code >= 500:
            raise AirflowUnavailableError(f"{where} failed: {response.status_code} {_detail(response)}", fix=_AGAIN)
        if response.status_code >= 300:
            raise WorkflowSchedulerError(
                f"{where} refused {method} {path}: {response.status_code} {_detail(response)}",
                fix="mt_magic speaks Airflow 3's REST API (/api/v2): point MT_MAGIC_AIRFLOW_URL at an Airflow 3 API "
                "server, or start one with python -m mt_magic.scheduling.local_airflow",
            )
        return response.json() if response.content else {}


def _part(text: str) -> str:
    return quote(text, safe="")


def _dag(data: Mapping[str, Any]) -> DagInfo:
    return DagInfo(
        str(data["dag_id"]),
        bool(data.get("is_paused")),
        bool(data.get("is_stale")),
        str(data.get("file_token") or ""),
        str(data.get("timetable_summary") or ""),
        data.get("next_dagrun_run_after"),
        data.get("next_dagrun_logical_date"),
        data.get("last_parsed_time"),
    )


def _run(data: Mapping[str, Any]) -> DagRunInfo:
    return DagRunInfo(
        str(data["dag_id"]),
        str(data["dag_run_id"]),
        str(data.get("state") or ""),
        str(data.get("run_type") or ""),
        dict(data.get("conf") or {}),
        data.get("start_date"),
        data.get("end_date"),
    )


def _detail(response: Any) -> str:
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    return str(detail)[:300]


def _unreachable(where: str, exc: Exception) -> AirflowUnavailableError:
    return AirflowUnavailableError(
        f"{where} cannot be reached ({type(exc).__name__}); nothing was changed",
        fix="start it the README's way, `.venv/bin/python -m mt_magic.scheduling.local_airflow` (its DAG file reads "
        "this catalog; a plain `airflow standalone` has neither), or point MT_MAGIC_AIRFLOW_URL / %config "
        "MaterializedMagics.airflow_url at your Airflow's API server",
    )


_AGAIN = "Airflow's API server log says why; run the statement again once it answers"

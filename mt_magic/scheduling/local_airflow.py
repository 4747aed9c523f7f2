"""A local Apache Airflow 3 for trying refresh workflows, for the tests and the benchmark.

``python -m mt_magic.scheduling.local_airflow`` starts Airflow's API server, scheduler and DAG processor on
127.0.0.1 (SQLite, LocalExecutor, ``AIRFLOW_HOME`` under ``$MT_MAGIC_HOME/airflow``), with a DAGs folder holding
the three-line file of :mod:`.airflow_dags`, and prints the settings a notebook needs (``%config
MaterializedMagics.airflow_*``). Airflow runs from its own virtualenv (``scripts/setup.sh --test`` makes
``.venv-airflow``); its processes reach the catalog the way the kernel does (pyiceberg's environment, or the
embedded server of ``MT_MAGIC_HOME``) and run refreshes with this interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mt_magic.loopback import free_port

REPO = Path(__file__).resolve().parents[2]
USER = "mt_admin"
DAG_FILE = """\
from mt_magic.scheduling.airflow_dags import materialized_table_dags

globals().update(materialized_table_dags())
"""
COMMANDS = ("api-server", "scheduler", "dag-processor")


def airflow_venv() -> Path:
    return Path(os.environ.get("MT_MAGIC_AIRFLOW_VENV", REPO / ".venv-airflow"))


@dataclass
class LocalAirflow:
    """Airflow's three processes on loopback, started and stopped by this process."""

    home: Path
    url: str
    password: str
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _logs: list[IO[str]] = field(default_factory=list)

    @property
    def user(self) -> str:
        return USER

    def start(self, timeout: float = 300) -> None:
        """``airflow db migrate``, then the processes; returns once the API server answers.

        Raises:
            RuntimeError: a process exited or the API server did not answer in time (with its log's tail).
        """
        import requests

        airflow = str(airflow_venv() / "bin" / "airflow")
        migrate = subprocess.run([airflow, "db", "migrate"], env=self.env, capture_output=True, text=True)
        if migrate.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{migrate.stdout[-3000:]}\n{migrate.stderr[-3000:]}")
        for command in COMMANDS:
            log = open(self.home / f"{command}.log", "w")  # noqa: SIM115 - closed in stop()
            self._logs.append(log)
            self.processes[command] = subprocess.Popen(
                [airflow, command], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while True:
            for command, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"airflow {command} exited:\n{self.log_tail(command)}")
            try:
                if requests.get(self.url + "/api/v2/monitor/health", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Airflow did not answer in {timeout:.0f} s:\n{self.log_tail('api-server')}")
            time.sleep(1)

    def log_tail(self, command: str, chars: int = 4000) -> str:
        path = self.home / f"{command}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def task_log(self, dag_id: str, run_id: str, attempt: int) -> str:
        """The refresh task's log of one attempt (JSON lines under ``AIRFLOW_HOME/logs``; empty if none yet)."""
        path = (
            self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / "task_id=refresh" / f"attempt={attempt}.log"
        )
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM each process group this object started, SIGKILL what is left after ``timeout``."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in self._logs:
            log.close()


def local_airflow(home: Path, catalog: str, extra_env: dict[str, str] | None = None, port: int = 0) -> LocalAirflow:
    """An Airflow configured under ``home`` for the catalog named ``catalog`` (not started).

    Raises:
        RuntimeError: no Airflow virtualenv (the message says how to make it).
    """
    venv = airflow_venv()
    if not (venv / "bin" / "airflow").exists():
        raise RuntimeError(f"no Airflow at {venv}: run scripts/setup.sh --test (make setup-test) first")
    url = f"http://127.0.0.1:{port or free_port()}"
    dags = home / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    (dags / "materialized_tables.py").write_text(DAG_FILE)
    passwords = home / "passwords.json"
    if not passwords.exists():
        passwords.write_text(json.dumps({USER: secrets.token_urlsafe(12)}))
    password = json.loads(passwords.read_text())[USER]
    port_text = url.rsplit(":", 1)[1]
    settings = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": port_text,
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "3",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3",
        "AIRFLOW__DAG_PROCESSOR__STALE_DAG_THRESHOLD": "10",
        # Parsing imports pyiceberg and reads the catalog: on a loaded machine that outlasts Airflow's 30 s default,
        # and a task whose DAG file times out fails before it starts ("Dag not found during start up").
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "150",
        "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "180",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "MT_MAGIC_CATALOG": catalog,
        "MT_MAGIC_PYTHON": sys.executable,
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTEST", "VIRTUAL_ENV"))}
    env.update(settings)
    env.update(extra_env or {})
    return LocalAirflow(home, url, password, env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mt_magic.scheduling.local_airflow", description=__doc__)
    parser.add_argument("--catalog", default=os.environ.get("MT_MAGIC_CATALOG", "mt"))
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    from mt_magic.catalog.embedded import mt_home

    server = local_airflow(mt_home() / "airflow", args.catalog, port=args.port)
    print(f"starting Airflow in {server.home} (logs there) …", flush=True)
    server.start()
    print(
        f"Airflow is up at {server.url} (user {server.user}, password {server.password}). In a notebook:\n"
        f"  %config MaterializedMagics.airflow_url = '{server.url}'\n"
        f"  %config MaterializedMagics.airflow_username = '{server.user}'\n"
        f"  %config MaterializedMagics.airflow_password = '{server.password}'\n"
        "then CREATE MATERIALIZED TABLE … WITH ('scheduler' = 'airflow') …. For a script\n"
        "(examples/airflow_tables.py):\n"
        f"  export MT_MAGIC_AIRFLOW_URL={server.url} MT_MAGIC_AIRFLOW_USERNAME={server.user} "
        f"MT_MAGIC_AIRFLOW_PASSWORD={server.password}\n"
        "Ctrl-C stops Airflow.",
        flush=True,
    )
    try:
        while all(p.poll() is None for p in server.processes.values()):
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

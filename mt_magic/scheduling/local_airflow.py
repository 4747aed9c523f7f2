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
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mt_magic.errors import MtMagicError
from mt_magic.loopback import HOST, OWNER_ONLY_UMASK, direct_session, free_port, owner_only
from mt_magic.scheduling.stop_signals import StopRequested, StopSignals

REPO = Path(__file__).resolve().parents[2]
USER = "mt_admin"
DAG_FILE = """\
from mt_magic.scheduling.airflow_dags import materialized_table_dags

globals().update(materialized_table_dags())
"""
COMMANDS = ("api-server", "scheduler", "dag-processor")
LAUNCHER = "python -m mt_magic.scheduling.local_airflow"
TAIL_LINES = 15
"""Lines of a process's log a start-up failure shows (the whole log stays in ``AIRFLOW_HOME``)."""


class AirflowStartError(MtMagicError, RuntimeError):
    """Airflow did not start: what failed, the last lines of its log (with the log's path) and the Fix.

    The message is the formatter's headline, then the log's tail (indented), then the Fix on its own line.
    """

    def __init__(self, problem: str, *, fix: str, log: Path | None = None, tail: str = "") -> None:
        self.log, self.tail = log, tail
        super().__init__(problem, fix=fix)

    def message(self) -> str:
        if self.log is None:
            return super().message()
        lines = self.tail.splitlines()[-TAIL_LINES:] or ["(empty)"]
        shown = "\n".join(f"    {line}" for line in lines)
        return f"{self.headline()}\n  last lines of {self.log}:\n{shown}\n{self.fix_line()}"


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
    """The three servers by command."""
    _groups: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """Every process started (``db migrate`` too), each the leader of its own process group."""
    _logs: list[IO[str]] = field(default_factory=list)

    @property
    def user(self) -> str:
        return USER

    def start(self, timeout: float = 300, signals: StopSignals | None = None) -> None:
        """``airflow db migrate``, then the processes; returns once the API server answers.

        Every process is started in a session of its own and recorded before a signal can interrupt (``signals``:
        the launcher's handlers, which hold a signal while a child is being started), so :meth:`stop` in the
        caller's ``finally`` stops all of them, whenever the caller is interrupted.

        Raises:
            AirflowStartError: the port is taken, a process exited, or the API server did not answer in time: what
                failed, its log's tail and path, and the Fix; every process it started is stopped first.
        """
        try:
            self._start(timeout, signals)
        except Exception:
            self.stop()
            raise

    def _start(self, timeout: float, signals: StopSignals | None) -> None:
        port_is_free(self.url)
        migrate = self._spawn("db-migrate", signals, "db", "migrate")
        if migrate.wait() != 0:
            raise self.failed("db-migrate", f"`airflow db migrate` failed (exit code {migrate.returncode})")
        for command in COMMANDS:
            self.processes[command] = self._spawn(command, signals)
        deadline = time.monotonic() + timeout
        while True:
            for command, process in self.processes.items():
                if process.poll() is not None:
                    raise self.failed(command, f"its {command} exited during start-up (exit code {process.returncode})")
            if api_server_healthy(self.url):
                return
            if time.monotonic() > deadline:
                raise self.failed(
                    "api-server", f"its API server did not answer at {self.url} within {timeout:.0f} s", timed_out=True
                )
            time.sleep(1)

    def failed(self, name: str, what: str, *, timed_out: bool = False) -> AirflowStartError:
        """The error for a process ``name`` (``db-migrate`` or a command) that failed to start: ``what`` happened,
        its log's tail, and the Fix its log points to (a taken port, a missing module, a broken database, a home it
        cannot write), else where to read more."""
        log = self.home / f"{name}.log"
        text = self.log_tail(name, chars=20_000)
        port = int(self.url.rsplit(":", 1)[1])
        problem = f"cannot start Airflow (AIRFLOW_HOME {self.home}): {what}"
        fix = start_fix(text, port, self.home)
        if fix is None and timed_out:
            fix = (
                f"the machine may be busy: try again, or read {log} (and the scheduler's and DAG processor's logs "
                "beside it) for what it waits for"
            )
        if fix is None:
            fix = f"read {log} for the cause; once it is fixed, start again: {LAUNCHER} --port {port}"
        return AirflowStartError(f"{problem}; the processes it had started are stopped", fix=fix, log=log, tail=text)

    def _spawn(self, name: str, signals: StopSignals | None, *args: str) -> subprocess.Popen[bytes]:
        """``airflow <args or name>`` in a session (process group) of its own, logging to ``<name>.log``."""
        argv = [str(airflow_venv() / "bin" / "airflow"), *(args or (name,))]
        with signals.deferred() if signals is not None else nullcontext():
            with owner_only():
                log = open(self.home / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
            self._logs.append(log)
            # Airflow's database, logs and task logs: its owner's only, as everything under MT_MAGIC_HOME.
            process = subprocess.Popen(
                argv,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                umask=OWNER_ONLY_UMASK,
            )
            self._groups.append(process)
        return process

    def log_tail(self, command: str, chars: int = 4000) -> str:
        """The last ``chars`` characters of ``<command>.log`` (empty if there is none)."""
        path = self.home / f"{command}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def task_log(self, dag_id: str, run_id: str, attempt: int) -> str:
        """The refresh task's log of one attempt (JSON lines under ``AIRFLOW_HOME/logs``; empty if none yet)."""
        path = (
            self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / "task_id=refresh" / f"attempt={attempt}.log"
        )
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM each process group this object started, SIGKILL what is left after ``timeout`` (and any member
        of a group whose leader already exited); idempotent."""
        for process in self._groups:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self._groups:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(process, signal.SIGKILL)
            process.wait()
        for log in self._logs:
            log.close()
        self._groups.clear()  # a second stop() signals no group id the system may have handed out again
        self._logs.clear()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):  # the group is gone (PermissionError: macOS, a zombie leader)
        pass


def start_fix(log: str, port: int, home: Path) -> str | None:
    """The Fix for a start-up failure whose log reads ``log`` (``None``: no known cause in it)."""
    if "address already in use" in log.lower():
        return (
            f"port {port} was taken while Airflow started: stop what listens there (`ss -ltnp 'sport = :{port}'` "
            f"names it), or start on another port: {LAUNCHER} --port {port + 1}"
        )
    missing = re.findall(r"No module named '([\w.]+)'", log)
    if missing:
        module, venv = missing[-1], airflow_venv()
        if module.startswith("airflow.providers."):
            package = "apache-airflow-providers-" + module.split(".")[2].replace("_", "-")
            return (
                f"Airflow's virtualenv {venv} lacks module {module}: install it ({venv}/bin/pip install {package}), "
                "or remove the setting that needs it"
            )
        return (
            f"Airflow's virtualenv {venv} lacks module {module}: install the package that provides it into "
            f"{venv} ({venv}/bin/pip install …), or make the virtualenv again: scripts/setup.sh --test"
        )
    if any(sign in log for sign in ("file is not a database", "database disk image is malformed")):
        return (
            f"Airflow's database {home / 'airflow.db'} is damaged: move it away (the next start makes a new one), "
            f"then start again: {LAUNCHER}"
        )
    if any(sign in log for sign in ("Permission denied", "Read-only file system", "unable to open database file")):
        return (
            f"Airflow cannot write in {home}: make it writable, or set MT_MAGIC_HOME to a directory you can write "
            f"(Airflow's home is $MT_MAGIC_HOME/airflow)"
        )
    return None


def api_server_healthy(url: str) -> bool:
    """Whether the Airflow API server at ``url`` answers its health check (directly, never through a proxy, when
    it is on loopback: a proxy would answer for it, or not at all)."""
    import requests

    try:
        with direct_session(url) as http:
            return http.get(url + "/api/v2/monitor/health", timeout=5).status_code == 200
    except requests.RequestException:
        return False


def port_is_free(url: str) -> None:
    """Refuse a port something already listens on: Airflow's API server would fail to bind, and the health check
    would get its answer from the other server.

    Raises:
        RuntimeError: the port is taken (what and the Fix).
    """
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a TIME_WAIT is no owner
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise AirflowStartError(
                f"cannot start Airflow on {url}: port {port} on {HOST} is taken ({exc.strerror}), perhaps by an "
                "Airflow started earlier that is still running",
                fix=f"stop what listens there (`ss -ltnp 'sport = :{port}'` names it), or start on another port: "
                f"{LAUNCHER} --port {port + 1}",
            ) from None


def local_airflow(home: Path, catalog: str, extra_env: dict[str, str] | None = None, port: int = 0) -> LocalAirflow:
    """An Airflow configured under ``home`` for the catalog named ``catalog`` (not started).

    Raises:
        RuntimeError: no Airflow virtualenv (the message says how to make it).
    """
    venv = airflow_venv()
    if not (venv / "bin" / "airflow").exists():
        raise AirflowStartError(f"no Airflow at {venv}", fix="run scripts/setup.sh --test (make setup-test) first")
    url = f"http://127.0.0.1:{port or free_port()}"
    dags = home / "dags"
    try:
        with owner_only():
            dags.mkdir(parents=True, exist_ok=True)
            (dags / "materialized_tables.py").write_text(DAG_FILE)
        passwords = password_file(home)
        password = json.loads(passwords.read_text())[USER]
    except OSError as exc:
        raise AirflowStartError(
            f"cannot start Airflow: its home {home} is not a directory it can write ({exc.strerror}: {exc.filename})",
            fix="set MT_MAGIC_HOME to a directory you can write (Airflow's home is $MT_MAGIC_HOME/airflow), or "
            f"remove what is in the way at {exc.filename}",
        ) from None
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


def password_file(home: Path) -> Path:
    """Airflow's password file under ``home`` (``{user: password}``, the simple auth manager's), readable by its
    owner only (0600): made with a generated password on the first start, its mode corrected on the next."""
    path = home / "passwords.json"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        os.chmod(path, 0o600)
    else:
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps({USER: secrets.token_urlsafe(12)}))
    return path


def settings_lines(server: LocalAirflow) -> str:
    """What to paste into a notebook and a shell: the password stays in its file, out of the notebook.

    The URL comes last: the kernel checks Airflow's settings as each one is set, and a URL without credentials
    is refused.
    """
    passwords = server.home / "passwords.json"
    return (
        f"  %config MaterializedMagics.airflow_username = '{server.user}'\n"
        f"  %config MaterializedMagics.airflow_password_file = '{passwords}'\n"
        f"  %config MaterializedMagics.airflow_url = '{server.url}'\n"
        "then CREATE MATERIALIZED TABLE … WITH ('scheduler' = 'airflow') …. For a script\n"
        "(examples/airflow_tables.py):\n"
        f"  export MT_MAGIC_AIRFLOW_USERNAME={server.user} MT_MAGIC_AIRFLOW_PASSWORD_FILE={passwords} "
        f"MT_MAGIC_AIRFLOW_URL={server.url}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mt_magic.scheduling.local_airflow", description=__doc__)
    parser.add_argument("--catalog", default=os.environ.get("MT_MAGIC_CATALOG", "mt"), help="the catalog's name")
    parser.add_argument("--port", type=int, default=8080, help="the API server's port on 127.0.0.1 (8080)")
    args = parser.parse_args(argv)
    from mt_magic.catalog.embedded import mt_home

    with StopSignals() as signals:
        try:
            server = local_airflow(airflow_home(mt_home), args.catalog, port=args.port)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
        except StopRequested as stop:
            return 128 + stop.signum
        try:
            return _run(server, signals)
        except StopRequested as stop:
            print(f"{stop}: stopping Airflow …", flush=True)
            return 128 + stop.signum
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
        finally:
            signals.stopping()
            server.stop()


def airflow_home(mt_home: Callable[[], Path]) -> Path:
    """``$MT_MAGIC_HOME/airflow``.

    Raises:
        AirflowStartError: MT_MAGIC_HOME cannot be made (a file in the way, no permission).
    """
    try:
        return mt_home() / "airflow"
    except OSError as exc:
        raise AirflowStartError(
            f"cannot start Airflow: MT_MAGIC_HOME ({exc.filename}) cannot be made ({exc.strerror})",
            fix="set MT_MAGIC_HOME to a directory you can write (Airflow's home is $MT_MAGIC_HOME/airflow), or "
            f"remove what is in the way at {exc.filename}",
        ) from None


def _run(server: LocalAirflow, signals: StopSignals) -> int:
    """Start Airflow, print its settings and wait until a signal (raised) or one of its processes exits (1)."""
    print(f"starting Airflow in {server.home} (logs there) …", flush=True)
    server.start(signals=signals)
    print(
        f"Airflow is up at {server.url} (user {server.user}; its password is in {server.home / 'passwords.json'}, "
        "readable by you only). In a notebook:\n" + settings_lines(server) + "Ctrl-C stops Airflow.",
        flush=True,
    )
    while all(p.poll() is None for p in server.processes.values()):
        time.sleep(1)
    exited = [c for c, p in server.processes.items() if p.poll() is not None]
    logs = ", ".join(str(server.home / f"{c}.log") for c in exited)
    print(f"airflow {', '.join(exited)} exited (its log: {logs}): stopping the others", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

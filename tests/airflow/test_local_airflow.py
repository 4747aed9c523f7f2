"""The README's launcher, ``python -m mt_magic.scheduling.local_airflow``, as a user runs it: told to stop by SIGTERM
during its start-up or SIGHUP once Airflow is up, it leaves no process behind (every process carrying its
``AIRFLOW_HOME`` is gone); on a port already taken it refuses to start, with a Fix; its password file is 0600 and
its password is not in what it prints.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from waiting import wait_until

from mt_magic.loopback import HOST, free_port
from mt_magic.scheduling.local_airflow import COMMANDS, airflow_venv

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not (airflow_venv() / "bin" / "airflow").exists(), reason="no .venv-airflow (make setup-test)"),
]


class Launcher:
    """The launcher in a process of its own, its output collected as it comes."""

    def __init__(self, mt_home: Path, port: int) -> None:
        env = {**os.environ, "MT_MAGIC_HOME": str(mt_home)}
        self.home = mt_home / "airflow"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mt_magic.scheduling.local_airflow", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.seen: set[psutil.Process] = set()
        """Every process of Airflow's :meth:`tree` found (the fixture kills those left after a failed test)."""
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def tree(self) -> set[psutil.Process]:
        """Airflow's processes: the launcher's descendants now, and any process with its AIRFLOW_HOME (an API
        server rewrites its /proc environment with its process title, a task's process may have left the tree)."""
        found = {*psutil.Process(self.process.pid).children(recursive=True), *airflow_processes(self.home)}
        self.seen |= found
        return found

    def finish(self) -> int:
        code = self.process.wait(timeout=300)
        self._reader.join(timeout=10)
        return code


def airflow_processes(home: Path) -> list[psutil.Process]:
    """Every process on this machine whose environment has ``AIRFLOW_HOME=home`` (all of Airflow's, and only its)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("AIRFLOW_HOME") == str(home):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def servers_started(home: Path) -> bool:
    """The API server, scheduler and DAG processor are being started (their logs are opened just before)."""
    return all((home / f"{command}.log").exists() for command in COMMANDS)


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def describe(processes: list[psutil.Process]) -> list[str]:
    out = []
    for process in processes:
        try:
            out.append(f"{process.pid} {' '.join(process.cmdline())[:100]}")
        except psutil.Error:
            pass
    return out


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[[int], Launcher]]:
    """Starts the launcher with its MT_MAGIC_HOME in ``tmp_path``; a failed test leaves no Airflow running either."""
    launchers: list[Launcher] = []

    def start(port: int) -> Launcher:
        launchers.append(Launcher(tmp_path, port))
        return launchers[-1]

    yield start
    for launcher in launchers:
        for process in {*launcher.seen, *airflow_processes(launcher.home)}:
            if alive(process):
                process.kill()


@pytest.mark.parametrize("when", ["migrating", "start-up", "up"])
def test_a_signal_at_start_up_or_after_leaves_no_process(launch: Callable[[int], Launcher], when: str) -> None:
    port = free_port()
    launcher = launch(port)
    if when == "migrating":  # Ctrl-C while `airflow db migrate` runs (in a session of its own: the launcher stops it)
        migrating = lambda: (launcher.home / "db-migrate.log").exists() and bool(launcher.tree())  # noqa: E731
        wait_until(lambda: migrating() or launcher.process.poll() is not None, 600, "airflow db migrate")
        signum = signal.SIGINT
    elif when == "start-up":
        # The three servers exist but the API server does not answer yet: before the fix they were started outside
        # the launcher's try/finally and outlived it.
        wait_until(lambda: servers_started(launcher.home) or launcher.process.poll() is not None, 600, "the servers")
        signum = signal.SIGTERM
    else:
        wait_until(lambda: "Airflow is up" in launcher.output or launcher.process.poll() is not None, 600, "Airflow")
        signum = signal.SIGHUP
    before = launcher.tree()
    assert launcher.process.poll() is None, launcher.output
    print(f"before {signum.name}:", *describe(sorted(before, key=lambda p: p.pid)), sep="\n  ")
    launcher.process.send_signal(signum)
    assert launcher.finish() == 128 + signum, launcher.output
    left = [p for p in {*before, *airflow_processes(launcher.home)} if alive(p)]
    print(f"after {signum.name}:", *describe(left), sep="\n  ")
    assert before and not left, describe(left)
    with socket.socket() as sock:  # the API server's port is free again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
    assert f"{signum.name}: stopping Airflow" in launcher.output
    if when == "up":
        passwords = launcher.home / "passwords.json"
        assert stat.S_IMODE(passwords.stat().st_mode) == 0o600
        password = json.loads(passwords.read_text())["mt_admin"]
        assert password not in launcher.output and str(passwords) in launcher.output


def test_a_taken_port_is_refused_with_a_fix(launch: Callable[[int], Launcher]) -> None:
    with socket.socket() as other:
        other.bind((HOST, 0))
        other.listen()
        port = other.getsockname()[1]
        launcher = launch(port)
        assert launcher.finish() == 1, launcher.output
    assert f"cannot start Airflow on http://127.0.0.1:{port}: port {port} on 127.0.0.1 is taken" in launcher.output
    assert "Fix: stop what listens there" in launcher.output and f"--port {port + 1}" in launcher.output
    assert "Airflow is up" not in launcher.output and not airflow_processes(launcher.home)


def test_a_port_taken_during_start_up_stops_everything_and_shows_the_api_servers_log(
    launch: Callable[[int], Launcher],
) -> None:
    """The port was free when the launcher checked it and taken before the API server bound it (by a socket this
    test holds): the launcher stops the scheduler and DAG processor it started and says what failed, with the API
    server's log and the Fix (before: 'airflow api-server exited' and the log's text, no path, no Fix)."""
    port = free_port()
    launcher = launch(port)
    wait_until(
        lambda: (launcher.home / "db-migrate.log").exists() or launcher.process.poll() is not None, 600, "migrate"
    )
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind((HOST, port))
        other.listen()
        wait_until(lambda: servers_started(launcher.home) or launcher.process.poll() is not None, 600, "the servers")
        started = launcher.tree()
        assert launcher.finish() == 1, launcher.output
    home = launcher.home
    print(launcher.output)
    assert f"cannot start Airflow (AIRFLOW_HOME {home}): its api-server " in launcher.output
    assert "; the processes it had started are stopped." in launcher.output
    assert f"\n  last lines of {home / 'api-server.log'}:\n    " in launcher.output
    assert "[Errno 98] error while attempting to bind" in launcher.output  # uvicorn's line, in the tail
    assert (
        f"\nFix: port {port} was taken while Airflow started: stop what listens there (`ss -ltnp 'sport = :{port}'` "
        f"names it), or start on another port: python -m mt_magic.scheduling.local_airflow --port {port + 1}.\n"
    ) in launcher.output
    assert "Airflow is up" not in launcher.output
    assert started and not [p for p in {*started, *airflow_processes(home)} if alive(p)]


def test_a_damaged_airflow_database_is_named_with_its_fix(launch: Callable[[int], Launcher], tmp_path: Path) -> None:
    """A bad AIRFLOW_HOME: its SQLite file is not a database, so `airflow db migrate` fails."""
    home = tmp_path / "airflow"  # the launcher's (MT_MAGIC_HOME is tmp_path)
    home.mkdir()
    (home / "airflow.db").write_bytes(b"not a database\n" * 512)
    launcher = launch(free_port())
    assert launcher.finish() == 1, launcher.output
    assert f"cannot start Airflow (AIRFLOW_HOME {home}): `airflow db migrate` failed (exit code 1)" in launcher.output
    assert f"\n  last lines of {home / 'db-migrate.log'}:\n    " in launcher.output
    assert "file is not a database" in launcher.output
    assert (
        f"\nFix: Airflow's database {home / 'airflow.db'} is damaged: move it away (the next start makes a new one), "
        "then start again: python -m mt_magic.scheduling.local_airflow.\n"
    ) in launcher.output
    assert not servers_started(home) and not airflow_processes(home)


def test_an_airflow_home_that_cannot_be_made_is_refused_with_a_fix(
    launch: Callable[[int], Launcher], tmp_path: Path
) -> None:
    (tmp_path / "airflow").write_text("a file where Airflow's home should be")
    launcher = launch(free_port())
    assert launcher.finish() == 1, launcher.output
    assert launcher.output == (
        f"cannot start Airflow: its home {tmp_path / 'airflow'} is not a directory it can write (Not a directory: "
        f"{tmp_path / 'airflow' / 'dags'}). Fix: set MT_MAGIC_HOME to a directory you can write (Airflow's home is "
        f"$MT_MAGIC_HOME/airflow), or remove what is in the way at {tmp_path / 'airflow' / 'dags'}.\n"
    )


def test_a_missing_package_stops_what_started_and_names_the_module(tmp_path: Path) -> None:
    """Airflow's scheduler exits at start-up because its executor's provider is not installed (CeleryExecutor
    without apache-airflow-providers-celery): start() stops the API server and DAG processor it started, and
    says which module is missing and how to install it."""
    from mt_magic.scheduling.local_airflow import AirflowStartError, local_airflow

    home = tmp_path / "airflow"
    server = local_airflow(home, "mt", {"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor"})
    with pytest.raises(AirflowStartError) as failed:
        server.start(timeout=600)
    text = str(failed.value)
    print(text)
    assert text.startswith(f"cannot start Airflow (AIRFLOW_HOME {home}): its scheduler exited during start-up")
    assert f"\n  last lines of {home / 'scheduler.log'}:\n    " in text
    venv = airflow_venv()
    assert text.endswith(
        f"\nFix: Airflow's virtualenv {venv} lacks module airflow.providers.celery: install it ({venv}/bin/pip "
        "install apache-airflow-providers-celery), or remove the setting that needs it."
    )
    assert servers_started(home) and not [p for p in airflow_processes(home) if alive(p)]

"""A Spark standalone cluster on 127.0.0.1 from the installed PySpark: one master and N workers.

For trying mt_magic on a real cluster on one machine: the notebook (or ``connect()``) needs nothing but the
master URL (``MT_MAGIC_SPARK_MASTER=spark://127.0.0.1:7077`` or ``%config MaterializedMagics.spark_master``).
The JVMs run from PySpark's own ``bin/spark-class`` (the wheel has no ``start-master.sh``), detached from the
caller; their pids and logs live in a state directory (0700) so that ``stop`` ends exactly those processes.

Every client must authenticate (``spark.authenticate``): each start makes a fresh secret, which the master and the
workers read from ``spark-defaults.conf`` in the state directory (0600, given as ``--properties-file``; never on a
command line, where every local user reads it). Without it nobody registers an application or submits a driver:
whoever could would run code on the workers as the cluster's owner. A driver of this machine finds the secret in
``cluster.json`` (0600) when the master URL is this user's cluster on the same port and the state directory is
``$MT_MAGIC_HOME/spark-cluster`` (:func:`driver_conf`; kernels, the headless runner and Airflow's tasks find the
catalog's token the same way), and gets it through a properties file too; the workers hand it to executors in their
environment (Spark's own way), which only the owner reads. Elsewhere, put ``spark.authenticate true`` and
``spark.authenticate.secret`` in a ``spark-defaults.conf`` of your own (mode 0600). The master's and workers' web
pages (the workers' show executors' stdout and stderr) admit the owner only, with a token of their own
(:mod:`mt_magic.runtime.spark.ui_auth`, through the same 0600 file): ``start`` and ``status`` print the link that lets
the owner's browser in. A cluster without authentication must be asked for by name (``--insecure-no-auth``), keeps
its pages open too, and says so at start and in ``status``.

    python -m mt_magic.runtime.spark.cluster start [--workers 2] [--port 7077] [--state DIR] [--insecure-no-auth]
    python -m mt_magic.runtime.spark.cluster stop [--state DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from mt_magic.catalog.embedded import mt_home
from mt_magic.errors import RuntimeSetupError
from mt_magic.loopback import OWNER_ONLY_UMASK, is_loopback, owner_only, private_dir, runs
from mt_magic.runtime.spark import ui_auth
from mt_magic.runtime.spark.properties import user_defaults, write_private

HOST = "127.0.0.1"
CONF_NAME = "spark-defaults.conf"
"""The daemons' settings, the secret among them (0600, in the state directory): named by every command line the
cluster starts (``--properties-file``), which is how :meth:`StandaloneCluster.pids` knows its own processes."""
STATE_NAME = "cluster.json"
AUTH_CONF = "spark.authenticate"
SECRET_CONF = "spark.authenticate.secret"
INSECURE_WARNING = (
    "WARNING: no authentication (--insecure-no-auth): every local user and every program that reaches {url} can "
    "register applications and submit drivers there, which run their code on the workers as you (reading your "
    "files, your catalog's token among them), and read the master's and workers' web pages (your executors' output "
    "among them). Start it without --insecure-no-auth unless this machine is yours alone."
)
UI_HINT = "python -m mt_magic.runtime.spark.cluster status prints that link to the cluster's owner."


def default_state_dir() -> Path:
    return mt_home() / "spark-cluster"


@dataclass(frozen=True)
class ClusterSettings:
    """Ports and sizes of a one-machine standalone cluster.

    Attributes:
        workers: how many worker JVMs to start.
        worker_cores: cores each worker offers to executors.
        worker_memory: memory each worker offers to executors (Spark's size syntax).
        port: the master's RPC port (the master URL is ``spark://127.0.0.1:<port>``).
        ui_port: the master's web UI port; its ``/json/`` tells which workers are alive.
        state_dir: pids, logs, the workers' work directories, the settings file and ``cluster.json``.
        authenticate: require ``spark.authenticate`` with a fresh secret (``False``: ``--insecure-no-auth``).
        secret: what every client must know; a fresh one at each start by default.
        ui_token: what the master's and workers' web pages ask for (:mod:`.ui_auth`); a fresh one by default.
    """

    workers: int = 2
    worker_cores: int = 1
    worker_memory: str = "1g"
    port: int = 7077
    ui_port: int = 8080
    state_dir: Path = field(default_factory=default_state_dir)
    authenticate: bool = True
    secret: str = field(default_factory=lambda: secrets.token_hex(32), repr=False)
    ui_token: str = field(default_factory=ui_auth.new_token, repr=False)

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"


def daemon_conf(settings: ClusterSettings) -> dict[str, str]:
    """The master's and workers' settings: authentication with the secret and the token on their web pages; no REST
    submission server (it takes no secret) and no kill links on their web pages (a web page's form could post to
    them)."""
    conf = {"spark.master.rest.enabled": "false", "spark.ui.killEnabled": "false"}
    if settings.authenticate:
        conf.update({AUTH_CONF: "true", SECRET_CONF: settings.secret})
        conf.update(ui_auth.filter_conf(settings.ui_token, UI_HINT))
    return conf


def _spark_class(filter_classes: Path | None) -> tuple[Path, dict[str, str]]:
    import pyspark

    home = Path(pyspark.__file__).parent
    script = home / "bin" / "spark-class"
    if not script.is_file():
        raise RuntimeSetupError(f"{script} is missing: this PySpark install cannot start cluster daemons.")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "SPARK_NO_DAEMONIZE": "1"}
    if filter_classes is not None:  # spark-class puts it on the master's and workers' classpath
        env.update(ui_auth.classpath_env(filter_classes, env, "SPARK_DAEMON_CLASSPATH"))
    return script, env


class StandaloneCluster:
    """Owns the master and worker processes it starts; ``stop()`` ends them (also when started by another
    process, through the pid file)."""

    def __init__(self, settings: ClusterSettings | None = None) -> None:
        self.settings = settings or ClusterSettings()
        self.state_dir = self.settings.state_dir
        self.pid_file = self.state_dir / "pids"
        self.conf_file = self.state_dir / CONF_NAME
        self.state_file = self.state_dir / STATE_NAME
        self._filter_classes: Path | None = None

    @property
    def master_url(self) -> str:
        return self.settings.master_url

    def _launch(self, name: str, args: list[str]) -> int:
        script, env = _spark_class(self._filter_classes)
        with owner_only(), (self.state_dir / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                [str(script), *args, "--properties-file", str(self.conf_file)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                umask=OWNER_ONLY_UMASK,  # the workers' work directories, executors' files and logs: owner only
            )
            with self.pid_file.open("a") as f:
                f.write(f"{proc.pid}\n")
        return proc.pid

    def start(self, timeout: float = 120.0) -> str:
        """Start the master and the workers; return the master URL once every worker is registered.

        Raises:
            RuntimeSetupError: a cluster from this state directory is running, or the workers did not
                register within ``timeout`` seconds (the logs in the state directory say why).
        """
        s = self.settings
        if self.pids():
            raise RuntimeSetupError(f"A cluster from {self.state_dir} is running; stop it first (`... cluster stop`).")
        private_dir(self.state_dir)
        # The web pages' filter, compiled now if need be: without javac the cluster does not start with open pages.
        self._filter_classes = ui_auth.filter_classes() if s.authenticate else None
        # After the user's own spark-defaults.conf, which the daemons would have read without a properties file.
        write_private(self.conf_file, daemon_conf(s), head=user_defaults())
        state: dict[str, object] = {
            "master": self.master_url,
            "port": s.port,
            "ui_port": s.ui_port,
            "authenticate": s.authenticate,
        }
        if s.authenticate:
            state["secret"] = s.secret
            state["ui_token"] = s.ui_token
        with owner_only():
            self.state_file.unlink(missing_ok=True)  # a new file is made 0600, whatever an old one's mode was
            fd = os.open(self.state_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(state, out)
        self._launch(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(s.port),
                "--webui-port",
                str(s.ui_port),
            ],
        )
        for i in range(s.workers):
            work = self.state_dir / f"worker-{i}"
            with owner_only():
                work.mkdir(exist_ok=True)
            self._launch(
                f"worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    HOST,
                    "--cores",
                    str(s.worker_cores),
                    "--memory",
                    s.worker_memory,
                    "--webui-port",
                    "0",
                    "--work-dir",
                    str(work),
                    self.master_url,
                ],
            )
        if not self._wait_for_workers(timeout):
            self.stop()
            raise RuntimeSetupError(
                f"The standalone cluster did not register {s.workers} worker(s) within {timeout:.0f} s; "
                f"see the logs in {self.state_dir}."
            )
        return self.master_url

    @property
    def ui_url(self) -> str:
        return f"http://{HOST}:{self.settings.ui_port}"

    @property
    def ui_token(self) -> str | None:
        """The web pages' token of the running cluster (its ``cluster.json``), ``None`` when they are open."""
        try:
            recorded = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return self.settings.ui_token if self.settings.authenticate else None
        token = recorded.get("ui_token") if isinstance(recorded, dict) else None
        return token if isinstance(token, str) and token else None

    def master_state(self) -> dict[str, object]:
        """The master's ``/json/`` (with the web pages' token).

        Raises:
            OSError: the master does not answer; ValueError: what answers is not JSON.
        """
        token = self.ui_token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
        request = urllib.request.Request(f"{self.ui_url}/json/", headers=headers)
        with direct.open(request, timeout=5) as resp:
            state = json.load(resp)
        if not isinstance(state, dict):
            raise ValueError(f"{self.ui_url}/json/ answered {type(state).__name__}, not a Spark master's state")
        return state

    def alive_workers(self) -> list[str]:
        """Ids of the workers the master reports ALIVE (empty while the master is not up).

        Raises:
            ValueError: what answers on the web UI port is not a Spark master (not JSON).
        """
        try:
            state = self.master_state()
        except OSError:
            return []
        workers = state.get("workers")
        listed = workers if isinstance(workers, list) else []
        return [w["id"] for w in listed if isinstance(w, dict) and w.get("state") == "ALIVE"]

    def _wait_for_workers(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while time.monotonic() < deadline:
            if len(self.alive_workers()) >= self.settings.workers:
                return True
            if not self.pids():
                return False
            pause.wait(0.5)
        return False

    def pids(self) -> list[int]:
        """Pids of this cluster's processes that are still running (this user's processes whose command line names
        this cluster's settings file: a number another process got since is never signalled)."""
        if not self.pid_file.is_file():
            return []
        lines = self.pid_file.read_text().split()
        return [int(line) for line in lines if line.isdigit() and runs(int(line), self.conf_file)]

    @property
    def authenticates(self) -> bool:
        """Whether the running cluster asks its clients for the secret (what its ``cluster.json`` says)."""
        try:
            return bool(json.loads(self.state_file.read_text()).get("authenticate", True))
        except (OSError, ValueError, AttributeError):
            return self.settings.authenticate

    def stop(self) -> None:
        """End the workers, then the master (SIGTERM: they deregister and clean up)."""
        for pid in reversed(self.pids()):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        self.pid_file.unlink(missing_ok=True)
        self.state_file.unlink(missing_ok=True)


def describe_authentication(cluster: StandaloneCluster) -> str:
    """What ``status`` says about the running cluster's authentication."""
    if cluster.authenticates:
        return f"spark.authenticate (the secret is in {cluster.state_file}, 0600); web pages: the owner's only"
    return (
        "NONE (--insecure-no-auth): anyone who reaches the master runs code on the workers as you, and reads its "
        "and the workers' web pages"
    )


def describe_pages(cluster: StandaloneCluster) -> str:
    """The master's web page as its owner opens it: the link with the token (printed to the owner's terminal only)."""
    token = cluster.ui_token
    if token is None:
        return f"web UI: {cluster.ui_url} (open to everyone: --insecure-no-auth)"
    link = ui_auth.entry_link(cluster.ui_url, token)
    return f"web UI (yours only; the link sets a cookie, keep it to yourself): {link}"


def driver_conf(master: str, state_dir: Path | None = None) -> dict[str, str]:
    """What a driver needs to join ``master`` when it is the cluster this user runs on that loopback port from
    ``state_dir`` (default ``$MT_MAGIC_HOME/spark-cluster``): ``spark.authenticate`` and its secret. Empty for any
    other master, a cluster without authentication, or one that no longer runs.

    The secret must reach the driver's ``SparkConf`` when it starts (Spark asks for it then, for a ``spark://``
    master), and not on its command line: :func:`mt_magic.runtime.spark.properties.driver_launch_properties`.
    """
    if not master.startswith("spark://"):
        return {}
    host, _, port = master[len("spark://") :].partition(":")
    if not is_loopback(host) or not port.isdigit():
        return {}
    folder = state_dir or default_state_dir()
    try:
        state = json.loads((folder / STATE_NAME).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(state, dict) or state.get("port") != int(port) or not state.get("authenticate"):
        return {}
    secret = state.get("secret")
    if not isinstance(secret, str) or not secret:
        return {}
    cluster = StandaloneCluster(ClusterSettings(port=int(port), state_dir=folder))
    if not cluster.pids():
        return {}
    return {AUTH_CONF: "true", SECRET_CONF: secret}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mt_magic.runtime.spark.cluster",
        description="A Spark standalone cluster on 127.0.0.1 from the installed PySpark.",
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=7077)
    parser.add_argument("--ui-port", type=int, default=8080)
    parser.add_argument("--state", type=Path, default=None, help="pids and logs (default $MT_MAGIC_HOME/spark-cluster)")
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="start without spark.authenticate: anyone who reaches the master runs code on the workers as you",
    )
    args = parser.parse_args(argv)
    state_dir = args.state or default_state_dir()
    port, ui_port = args.port, args.ui_port
    if args.action != "start":  # the running cluster's own ports, whatever the defaults
        try:
            recorded = json.loads((state_dir / STATE_NAME).read_text())
            port, ui_port = int(recorded["port"]), int(recorded["ui_port"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    settings = ClusterSettings(
        workers=args.workers,
        port=port,
        ui_port=ui_port,
        state_dir=state_dir,
        authenticate=not args.insecure_no_auth,
    )
    cluster = StandaloneCluster(settings)
    try:
        if args.action == "start":
            print(f"{cluster.start()}  (workers: {', '.join(cluster.alive_workers())}; logs in {cluster.state_dir})")
            if settings.authenticate:
                print(
                    f"clients must authenticate (spark.authenticate): drivers of this MT_MAGIC_HOME find the secret in "
                    f"{cluster.state_file}" + ("" if args.state is None else "; drivers of another home do not")
                )
                print(describe_pages(cluster))
            else:
                print(INSECURE_WARNING.format(url=cluster.master_url), file=sys.stderr)
        elif args.action == "stop":
            cluster.stop()
            print("stopped")
        else:
            print(f"{cluster.master_url}: pids {cluster.pids()}, alive workers {cluster.alive_workers()}")
            if cluster.pids():
                print(f"authentication: {describe_authentication(cluster)}")
                print(describe_pages(cluster))
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

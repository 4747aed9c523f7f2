"""A Spark standalone cluster on 127.0.0.1 from the installed PySpark: one master and N workers.

For trying mt_magic on a real cluster on one machine: the notebook (or ``connect()``) needs nothing but the
master URL (``MT_MAGIC_SPARK_MASTER=spark://127.0.0.1:7077`` or ``%config MaterializedMagics.spark_master``).
The JVMs run from PySpark's own ``bin/spark-class`` (the wheel has no ``start-master.sh``), detached from the
caller; their pids and logs live in a state directory so that ``stop`` ends exactly those processes.

    python -m mt_magic.runtime.spark.cluster start [--workers 2] [--port 7077] [--state DIR]
    python -m mt_magic.runtime.spark.cluster stop [--state DIR]
"""

from __future__ import annotations

import argparse
import json
import os
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
from mt_magic.loopback import OWNER_ONLY_UMASK, owner_only, runs

HOST = "127.0.0.1"
DAEMON = "org.apache.spark.deploy."
"""In the command line of every process the cluster starts (its master's and workers' classes)."""


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
        state_dir: pids, logs and the workers' work directories.
    """

    workers: int = 2
    worker_cores: int = 1
    worker_memory: str = "1g"
    port: int = 7077
    ui_port: int = 8080
    state_dir: Path = field(default_factory=default_state_dir)

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"


def _spark_class() -> tuple[Path, dict[str, str]]:
    import pyspark

    home = Path(pyspark.__file__).parent
    script = home / "bin" / "spark-class"
    if not script.is_file():
        raise RuntimeSetupError(f"{script} is missing: this PySpark install cannot start cluster daemons.")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "SPARK_NO_DAEMONIZE": "1"}
    return script, env


class StandaloneCluster:
    """Owns the master and worker processes it starts; ``stop()`` ends them (also when started by another
    process, through the pid file)."""

    def __init__(self, settings: ClusterSettings | None = None) -> None:
        self.settings = settings or ClusterSettings()
        self.state_dir = self.settings.state_dir
        self.pid_file = self.state_dir / "pids"

    @property
    def master_url(self) -> str:
        return self.settings.master_url

    def _launch(self, name: str, args: list[str]) -> int:
        script, env = _spark_class()
        with owner_only(), (self.state_dir / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                [str(script), *args],
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
        with owner_only():
            self.state_dir.mkdir(parents=True, exist_ok=True)
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

    def alive_workers(self) -> list[str]:
        """Ids of the workers the master reports ALIVE (empty while the master is not up)."""
        try:
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
            with direct.open(f"http://{HOST}:{self.settings.ui_port}/json/", timeout=5) as resp:
                state = json.load(resp)
        except OSError:
            return []
        return [w["id"] for w in state.get("workers", []) if w.get("state") == "ALIVE"]

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
        """Pids of this cluster's processes that are still running (this user's Spark daemons: a number another
        process got since is never signalled)."""
        if not self.pid_file.is_file():
            return []
        return [int(line) for line in self.pid_file.read_text().split() if line.isdigit() and runs(int(line), DAEMON)]

    def stop(self) -> None:
        """End the workers, then the master (SIGTERM: they deregister and clean up)."""
        for pid in reversed(self.pids()):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        self.pid_file.unlink(missing_ok=True)


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
    args = parser.parse_args(argv)
    settings = ClusterSettings(
        workers=args.workers, port=args.port, ui_port=args.ui_port, state_dir=args.state or default_state_dir()
    )
    cluster = StandaloneCluster(settings)
    try:
        if args.action == "start":
            print(f"{cluster.start()}  (workers: {', '.join(cluster.alive_workers())}; logs in {cluster.state_dir})")
        elif args.action == "stop":
            cluster.stop()
            print("stopped")
        else:
            print(f"{cluster.master_url}: pids {cluster.pids()}, alive workers {cluster.alive_workers()}")
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

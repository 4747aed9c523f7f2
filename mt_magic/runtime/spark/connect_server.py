"""A Spark Connect server on 127.0.0.1 from the installed PySpark, with Iceberg and the catalog configured on it.

For trying mt_magic with a kernel that has no JVM: the kernel needs only the Connect client and the server's URL
(``MT_MAGIC_SPARK_REMOTE=sc://127.0.0.1:15002`` or ``%config MaterializedMagics.spark_remote``). PySpark 4.x
ships the server (``jars/spark-connect_2.13-*.jar``) but no ``start-connect-server.sh``, so the server class runs
from the wheel's own ``bin/spark-submit``, detached from the caller, with the settings of a session mt_magic would
build (:func:`mt_magic.runtime.spark.session.base_conf`: the Iceberg runtime on the classpath, the SQL extensions,
quiet logs) plus the catalog's ``spark.sql.catalog.<name>.*``: the catalog lives on the server, so a client never
needs its token. Its pid, log and settings live in a state directory (0700) so that ``stop`` ends exactly that
process. The settings go to ``spark-submit`` as a 0600 ``--properties-file``, never as ``--conf`` arguments: a
command line is readable by every local user (``ps``), and the catalog's token is among them.

Every client must authenticate: the server gets a fresh ``spark.connect.authenticate.token`` at each start, kept
in ``connect.json`` (0600, beside the pid) as the embedded catalog keeps its token in ``server.json``. A client of
this machine finds it there (:func:`.connect_token.client_url`, for any ``sc://`` URL on loopback with the same
port) under its ``MT_MAGIC_HOME``, as kernels, the headless runner and Airflow's tasks find the catalog; elsewhere,
give it as ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` or ``;token=`` in the URL (PySpark then sends it over a loopback
channel to ``localhost``, or over TLS to another host). The server's web UI is off, as in every session mt_magic
builds; turned on (``spark.ui.enabled``), it admits its owner only (:mod:`mt_magic.runtime.spark.ui_auth`; ``start``
prints the token that lets the owner's browser in).

    python -m mt_magic.runtime.spark.connect_server start [--port 15002] [--catalog mt] [--state DIR]
    python -m mt_magic.runtime.spark.connect_server stop [--state DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mt_magic.errors import RuntimeSetupError
from mt_magic.loopback import OWNER_ONLY_UMASK, owner_only, runs
from mt_magic.runtime.spark import ui_auth
from mt_magic.runtime.spark.connect_token import CONF_NAME, STATE_NAME, default_state_dir
from mt_magic.runtime.spark.properties import write_private

HOST = "127.0.0.1"
DEFAULT_PORT = 15002
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
TOKEN_CONF = "spark.connect.authenticate.token"
UI_HINT = "python -m mt_magic.runtime.spark.connect_server start printed that token to the server's owner."


@dataclass(frozen=True)
class ConnectServerSettings:
    """Where and how big the server is.

    Attributes:
        port: the gRPC port on 127.0.0.1 (the URL is ``sc://127.0.0.1:<port>``).
        master: the server's Spark master (``local[2]``: the server is the driver and its executors).
        driver_memory: the server JVM's heap.
        catalog_conf: ``spark.sql.catalog.<name>.*`` settings of the catalog the server serves.
        extra: further ``spark.*`` settings, applied last.
        state_dir: the pid file, the log, the settings file and ``connect.json``.
        token: what every client must send (``spark.connect.authenticate.token``); a fresh one by default.
    """

    port: int = DEFAULT_PORT
    master: str = "local[2]"
    driver_memory: str = "3g"
    catalog_conf: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    state_dir: Path = field(default_factory=default_state_dir)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"


def server_jar() -> Path:
    """The Spark Connect server jar of the installed PySpark.

    Raises:
        RuntimeSetupError: this PySpark ships none (PySpark 3.5's wheel does not; 4.x does).
    """
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("spark-connect_*.jar"))
    if not jars:
        raise RuntimeSetupError(
            f"PySpark {pyspark.__version__} ships no Spark Connect server jar; a local server needs PySpark 4 "
            "(`make setup-other` makes .venv-pyspark-4.1.4)."
        )
    return jars[0]


def server_conf(settings: ConnectServerSettings) -> dict[str, str]:
    """Every ``--conf`` of the server: an mt_magic session's settings, the gRPC binding and the catalog."""
    from mt_magic.runtime.spark.cluster import driver_conf as cluster_driver_conf
    from mt_magic.runtime.spark.session import SparkSettings, base_conf, local_driver_auth

    conf = base_conf(SparkSettings(master=settings.master, driver_memory=settings.driver_memory))
    conf.update(
        {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(settings.port),
            # Progress for the cards (the client's progress handlers) more often than the 2 s default.
            "spark.connect.progress.reportInterval": "500ms",
            TOKEN_CONF: settings.token,
        }
    )
    conf.update(local_driver_auth(settings.master, conf))  # the server's own RPC and block manager ports
    conf.update(cluster_driver_conf(settings.master))  # a master that is this user's standalone cluster: its secret
    conf.update(settings.catalog_conf)
    conf.update(settings.extra)
    guard, _ = ui_auth.guarded_driver_conf(conf, UI_HINT)  # a web UI asked for: its owner's only, or off
    conf.update(guard)
    return conf


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


class ConnectServer:
    """Owns the server process it starts; ``stop()`` ends it (also when started by another process, through the
    pid file)."""

    def __init__(self, settings: ConnectServerSettings | None = None) -> None:
        self.settings = settings or ConnectServerSettings()
        self.state_dir = self.settings.state_dir
        self.pid_file = self.state_dir / "pid"
        self.log_file = self.state_dir / "server.log"
        self.conf_file = self.state_dir / CONF_NAME
        self.state_file = self.state_dir / STATE_NAME
        self._started: int | None = None

    @property
    def url(self) -> str:
        return self.settings.url

    def command(self) -> list[str]:
        """``spark-submit`` with the server's settings in :attr:`conf_file` (written by :meth:`start`)."""
        import pyspark

        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        return [
            str(submit),
            "--class",
            SERVER_CLASS,
            "--master",
            self.settings.master,
            "--properties-file",
            str(self.conf_file),
            str(server_jar()),
        ]

    def write_conf(self) -> None:
        """Every setting of the server into :attr:`conf_file`, readable by its owner only (it holds tokens)."""
        write_private(self.conf_file, server_conf(self.settings))

    def start(self, timeout: float = 180.0) -> str:
        """Start the server; return its URL once it accepts connections.

        Raises:
            RuntimeSetupError: a server from this state directory is running, the port is taken, or the server
                did not come up within ``timeout`` seconds (its log in the state directory says why).
        """
        from mt_magic.runtime.spark.session import check_java

        check_java()
        if self.pid() is not None:
            raise RuntimeSetupError(f"A Spark Connect server from {self.state_dir} is running; stop it first.")
        if _port_open(self.settings.port):
            raise RuntimeSetupError(f"Port {self.settings.port} on {HOST} is taken; pass another --port.")
        import pyspark

        env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_LOCAL_IP": HOST}
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        self.write_conf()
        if self.ui_token() is not None:  # the web UI's filter on the server's classpath
            env.update(ui_auth.classpath_env(ui_auth.filter_classes(), env))
        with owner_only():  # the log, the pid file and the server's own files (its warehouse writes): owner only
            with self.log_file.open("ab") as log:
                proc = subprocess.Popen(
                    self.command(),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    umask=OWNER_ONLY_UMASK,
                )
            self.pid_file.write_text(f"{proc.pid}\n")
            state = {"url": self.url, "port": self.settings.port, "pid": proc.pid, "token": self.settings.token}
            fd = os.open(self.state_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(state, out)
        self._started = proc.pid
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise RuntimeSetupError(
                    f"The Spark Connect server exited with code {proc.returncode}; see {self.log_file}."
                )
            if _port_open(self.settings.port):
                return self.url
            pause.wait(0.5)
        self.stop()
        raise RuntimeSetupError(
            f"The Spark Connect server did not listen on {HOST}:{self.settings.port} within {timeout:.0f} s; "
            f"see {self.log_file}."
        )

    def ui_token(self) -> str | None:
        """The token of the server's web UI (from its settings file), ``None`` when it has no UI of mt_magic's."""
        try:
            lines = self.conf_file.read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        prefix = f"{ui_auth.TOKEN_CONF}="
        return next((line[len(prefix) :] for line in lines if line.startswith(prefix)), None)

    def pid(self) -> int | None:
        """The server's pid while it runs (from the pid file, else the one this object started): only a process of
        this user whose command line names this server's settings file, so ``stop`` never signals another."""
        try:
            pid = int(self.pid_file.read_text().strip()) if self.pid_file.is_file() else self._started
        except (OSError, ValueError):
            return None
        return pid if pid is not None and runs(pid, self.conf_file) else None

    def stop(self, timeout: float = 30.0) -> None:
        """End the server's process group (spark-submit and its JVM) and wait for it to exit."""
        pid = self.pid()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.monotonic() + timeout
            pause = threading.Event()
            while time.monotonic() < deadline and self.pid() is not None:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                pause.wait(0.2)
        self.pid_file.unlink(missing_ok=True)
        self.state_file.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mt_magic.runtime.spark.connect_server",
        description="A Spark Connect server on 127.0.0.1 from the installed PySpark, with Iceberg and the catalog.",
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--catalog", default="mt", help="the catalog the server serves (default: mt, embedded)")
    parser.add_argument("--state", type=Path, default=None, help="pid and log (default $MT_MAGIC_HOME/spark-connect)")
    args = parser.parse_args(argv)
    state = args.state or default_state_dir()
    try:
        catalog_conf: dict[str, str] = {}
        if args.action == "start":
            from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf

            catalog_conf = spark_catalog_conf(resolve_catalog(args.catalog))
        server = ConnectServer(
            ConnectServerSettings(port=args.port, master=args.master, catalog_conf=catalog_conf, state_dir=state)
        )
        if args.action == "start":
            url = server.start()
            print(f"{url}  (catalog {args.catalog!r} on the server; log in {server.log_file})")
            print(f"use it: export MT_MAGIC_SPARK_REMOTE={url}")
            print(f"clients must authenticate: its token is in {server.state_file} (read by clients of this home)")
            token = server.ui_token()
            if token is not None:
                print(f"its web UI is yours only: open it once with /?token={token} after its address (in the log)")
        elif args.action == "stop":
            server.stop()
            print("stopped")
        else:
            print(f"{server.url}: pid {server.pid()}")
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

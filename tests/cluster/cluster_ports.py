"""Start the test's standalone cluster on ports nobody else took, and make sure what answers is Spark's master.

A port from :func:`~mt_magic.loopback.free_port` is free when asked, not when Spark binds it: another server of the
suite (each pytest process starts catalogs, JupyterLab, Airflow) can take it in between. Spark then binds the next
port silently (``spark.port.maxRetries``) and the cluster's ``/json/`` reads the other server's page. So a start
counts only when the master itself reports the addresses asked for — its ``/json/`` names the master URL, its log
the web UI's address — and a start that did not is stopped and tried again on new ports.
"""

from __future__ import annotations

import http.server
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mt_magic.errors import RuntimeSetupError
from mt_magic.loopback import free_port
from mt_magic.runtime.spark.cluster import ClusterSettings, StandaloneCluster

ATTEMPTS = 4
UI_BOUND = re.compile(r"Bound MasterWebUI to \S+, and started at http://[^:]+:(\d+)")


def master_state(cluster: StandaloneCluster) -> dict[str, Any]:
    """The master's ``/json/`` answer, asked with its web pages' token; raises ``ValueError`` when what answers is not
    JSON (not Spark)."""
    return cluster.master_state()


def reported_ui_port(log: Path) -> int | None:
    """The web UI port the master's log says it bound (``None`` before it says so)."""
    found = UI_BOUND.search(log.read_text(errors="replace")) if log.is_file() else None
    return int(found.group(1)) if found else None


def spark_master_problem(cluster: StandaloneCluster) -> str | None:
    """Why what answers on the cluster's ports is not its Spark master (``None``: it is)."""
    settings = cluster.settings
    bound = reported_ui_port(cluster.state_dir / "master.log")
    if bound != settings.ui_port:
        return f"the master's log says its web UI bound {bound}, not {settings.ui_port}"
    try:
        state = master_state(cluster)
    except (OSError, ValueError) as exc:
        return f"{settings.ui_port}/json/ is not a Spark master's: {exc}"
    if state.get("url") != cluster.master_url or state.get("status") != "ALIVE" or "workers" not in state:
        return f"{settings.ui_port}/json/ is not this master's ALIVE state: {sorted(state)[:8]} url={state.get('url')}"
    return None


class NotSpark(http.server.BaseHTTPRequestHandler):
    """Another server of the suite: an HTML page on every path (JupyterLab's, a catalog's)."""

    asked: list[str] = []
    port = 0

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).asked.append(self.path)
        body = b"<html><body>not Spark</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class ClusterStart:
    """A started cluster and the attempts that were refused on the way (port, ui_port, why)."""

    cluster: StandaloneCluster
    refused: list[tuple[int, int, str]] = field(default_factory=list)


def free_ports() -> Iterator[tuple[int, int]]:
    while True:
        yield free_port(), free_port()


def start_cluster(
    state_dir: Path,
    ports: Iterator[tuple[int, int]] | None = None,
    settings: Callable[[int, int, Path], ClusterSettings] | None = None,
) -> ClusterStart:
    """A one-worker cluster whose master answers on the ports it was given; retried on new ports otherwise. Its
    state is ``state_dir`` (``$MT_MAGIC_HOME/spark-cluster`` for the drivers that are to find its secret).

    Raises:
        RuntimeSetupError: :data:`ATTEMPTS` starts in a row did not give a Spark master on the ports asked for.
    """
    ports = ports or free_ports()
    make = settings or (
        lambda port, ui_port, folder: ClusterSettings(
            workers=1, worker_cores=1, worker_memory="1g", port=port, ui_port=ui_port, state_dir=folder
        )
    )
    refused: list[tuple[int, int, str]] = []
    for attempt in range(ATTEMPTS):
        port, ui_port = next(ports)
        cluster = StandaloneCluster(make(port, ui_port, state_dir))
        try:
            cluster.start()
            problem = spark_master_problem(cluster)
        except (RuntimeSetupError, ValueError) as exc:  # ValueError: another server's page is not JSON
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            return ClusterStart(cluster, refused)
        cluster.stop()
        # The next try starts in the same folder (drivers of its home find the cluster there); this one's logs
        # move aside, so the next master's log is read alone.
        state_dir.rename(state_dir.with_name(f"{state_dir.name}.refused-{attempt}"))
        refused.append((port, ui_port, problem))
    raise RuntimeSetupError(f"no Spark master on the ports asked for in {ATTEMPTS} starts: {refused}")

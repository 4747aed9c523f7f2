"""One standalone cluster for the package's tests (a master and a worker: two JVMs, ~20 s to start), its state in
``<home>/spark-cluster`` so that drivers started with ``MT_MAGIC_HOME=<home>`` find its secret as a kernel would.

Its start is first tried on a web UI port another HTTP server holds, as happened in ``make test`` (issue 51), and
must be refused (:mod:`cluster_ports`)."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from cluster_ports import ClusterStart, NotSpark, free_ports, start_cluster

from mt_magic.loopback import HOST, free_port
from mt_magic.runtime.spark.cluster import StandaloneCluster

# Acting as a second local user and reading every command line: the security suite's probes (imported by name).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))


@pytest.fixture(scope="package")
def cluster_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``MT_MAGIC_HOME`` of the cluster's state and of the drivers that use it (in a 0755 folder, as a Debian
    home is: only the modes mt_magic sets decide what another user reaches)."""
    parent = tmp_path_factory.mktemp("cluster")
    parent.chmod(0o755)
    return parent / "home"


@pytest.fixture(scope="package")
def started(cluster_home: Path) -> Iterator[ClusterStart]:
    decoy = ThreadingHTTPServer((HOST, 0), NotSpark)
    serving = threading.Thread(target=decoy.serve_forever, name="not-spark", daemon=True)
    serving.start()
    try:
        NotSpark.port = decoy.server_address[1]
        taken = (free_port(), NotSpark.port)  # the race: the UI port is another server's by now
        start = start_cluster(cluster_home / "spark-cluster", itertools.chain([taken], free_ports()))
    finally:
        decoy.shutdown()
        decoy.server_close()
    yield start
    start.cluster.stop()


@pytest.fixture(scope="package")
def cluster(started: ClusterStart) -> StandaloneCluster:
    return started.cluster

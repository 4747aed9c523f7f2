"""The Spark Connect line of the test suite: ``MT_TEST_SPARK_CONNECT=1`` runs the chosen tests with no JVM in the
test process or the kernels, their Spark being a real Spark Connect server on loopback.

The root conftest calls :func:`start` once per run (before any item, notebooks included, since nbval items get
no fixtures) and :func:`stop` at the end. The server is the installed PySpark's (4.x ships
``spark-connect_2.13-*.jar``), with the Iceberg runtime on its classpath and both of the run's catalogs configured
*on the server*: ``mt``, the run's embedded catalog the notebooks' kernels use, and ``mtit``, the one
``tests/conftest.py`` serves to the integration tests (a second embedded server, so the two never share
namespaces), also as ``mtcached`` with Iceberg's default caching. ``MT_MAGIC_SPARK_REMOTE`` points every kernel
and runner the tests start at it.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

from mt_magic.loopback import free_port

ENV = "MT_TEST_SPARK_CONNECT"
TEST_CATALOG_HOME = "tests-catalog"


def enabled() -> bool:
    return os.environ.get(ENV, "") == "1"


CACHING_CATALOG = "mtcached"
"""The integration tests' catalog once more, as a team's server would define it: with Iceberg's default caching
(``tests/spark_connect/test_session_cache.py``)."""


def caching_catalog_conf(catalog_conf: dict[str, str]) -> dict[str, str]:
    """``catalog_conf`` without mt_magic's ``cache-enabled=false``: Iceberg's default, a caching catalog."""
    return {key: value for key, value in catalog_conf.items() if not key.endswith(".cache-enabled")}


def test_catalog_home(home: Path) -> Path:
    """Where the integration tests' catalog (``mtit``) of this run lives."""
    return home / TEST_CATALOG_HOME


def start(home: Path) -> str:
    """Start both catalogs and the Connect server for the run in ``home``; return the server's URL."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for shared_catalog
    from shared_catalog import CATALOG

    from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf
    from mt_magic.runtime.spark.connect_server import ConnectServer, ConnectServerSettings

    test_catalog = resolve_catalog(CATALOG, test_catalog_home(home))
    catalog_conf = {
        **spark_catalog_conf(resolve_catalog("mt", home)),
        **spark_catalog_conf(test_catalog),
        **caching_catalog_conf(spark_catalog_conf(test_catalog, CACHING_CATALOG)),
    }
    server, url = _started_on_a_free_port(ConnectServer, ConnectServerSettings, catalog_conf, home / "spark-connect")
    # Stopped at exit, after every Connect client's own exit hook (atexit runs last what it registered first):
    # a client whose server is gone retries for minutes before it gives up.
    atexit.register(server.stop)
    os.environ["MT_MAGIC_SPARK_REMOTE"] = url
    return url


START_ATTEMPTS = 3


def _started_on_a_free_port(server_type, settings_type, catalog_conf, state_dir):  # type: ignore[no-untyped-def]
    """The server and its URL, once its own process listens on the port it was given. Another server of the run can
    take a free port before Spark binds it (Spark then binds the next port, or start() finds the port taken): such
    a start is stopped and made again on another port."""
    from listening import listens

    for attempt in range(START_ATTEMPTS):
        server = server_type(settings_type(port=free_port(), catalog_conf=catalog_conf, state_dir=state_dir))
        try:
            url = server.start()
        except Exception:
            server.stop()
            if attempt == START_ATTEMPTS - 1:
                raise
            continue
        pid = server.pid()
        if pid is not None and listens(pid, server.settings.port):
            return server, url
        server.stop()
    raise RuntimeError(f"the Spark Connect server listened on none of {START_ATTEMPTS} free ports")


def stop(home: Path) -> None:
    """Stop the integration tests' catalog (the kernels' one is the root conftest's; the server stops at exit)."""
    from mt_magic.catalog.embedded import stop_embedded_server

    stop_embedded_server(test_catalog_home(home))

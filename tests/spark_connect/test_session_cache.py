"""The kernel's own session reads every commit on a catalog with Iceberg's default caching (issue 35).

The catalog ``mtcached`` is the integration tests' catalog defined as a team would define it, before mt_magic
and without ``cache-enabled=false``: on the classic lines in the session before it connects (and loaded, so the
session's ``CachingCatalog`` exists), on the Connect line in the server's own settings (``line.py``). Each
refresh and statement commits from elsewhere (a child session, pyiceberg); the session must read the commit at
once all the same. The control half shows the cache is real: without the session forgetting the table, the
same read keeps answering the table as first loaded.
"""

from __future__ import annotations

import itertools
import os
from datetime import datetime, timezone

import pytest
from spark_connect import line as connect_line

from mt_magic.runtime.spark.session_cache import SessionCache

pytestmark = pytest.mark.spark

CACHED = connect_line.CACHING_CATALOG
_namespaces = itertools.count()


def _run(service, cell: str) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.sql import parse_cell

    for statement in parse_cell(cell):
        result = service.execute(statement)
        if result.refresh is not None:
            result.refresh.result(timeout=300)


@pytest.fixture
def cached_connection(spark, catalog_server):  # type: ignore[no-untyped-def]
    """A connection to ``mtcached`` in the shared session, whose definition of it caches tables."""
    from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf
    from mt_magic.runtime.connection import ConnectionSettings, connect

    prefix = f"PYICEBERG_CATALOG__{CACHED.upper()}__"
    os.environ[prefix + "URI"] = catalog_server.uri
    os.environ[prefix + "TYPE"] = "rest"
    if catalog_server.token:
        os.environ[prefix + "TOKEN"] = catalog_server.token
    if not connect_line.enabled():  # the user's session defines the catalog itself, before mt_magic
        conf = connect_line.caching_catalog_conf(spark_catalog_conf(resolve_catalog(CACHED)))
        for key, value in conf.items():
            spark.conf.set(key, value)
    namespace = f"cache{next(_namespaces)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CACHED}.{namespace}").collect()  # the session's catalog is loaded
    connection = connect(
        ConnectionSettings(catalog_name=CACHED, namespace=namespace, start_manager=False, use_namespace=False)
    )
    yield connection, f"{CACHED}.{namespace}"
    connection.close()


def test_the_kernels_session_reads_each_commit_on_a_caching_catalog(spark, cached_connection, monkeypatch) -> None:
    from mt_magic.runtime.status import RefreshRequest
    from mt_magic.vocabulary import RefreshTrigger

    connection, namespace = cached_connection
    service = connection.service
    notice = service.engine.session_cache.notice
    assert notice is not None and f"spark.sql.catalog.{CACHED}.cache-enabled=false" in notice
    counts = f"{namespace}.counts"

    def groups() -> list[tuple]:
        return sorted(tuple(r) for r in spark.table(counts).collect())

    def refresh() -> None:
        service.engine.refresh(RefreshRequest(counts, RefreshTrigger.MANUAL, datetime.now(timezone.utc)))

    spark.sql(f"CREATE TABLE {namespace}.src (k STRING) USING iceberg").collect()
    spark.sql(f"INSERT INTO {namespace}.src VALUES ('a'), ('b')").collect()
    _run(
        service,
        f"CREATE MATERIALIZED TABLE {counts} FRESHNESS = INTERVAL '1' MINUTE "
        f"AS SELECT k, count(*) AS n FROM {namespace}.src GROUP BY k",
    )
    assert groups() == [("a", 1), ("b", 1)]
    spark.sql(f"INSERT INTO {namespace}.src VALUES ('c'), ('a')").collect()
    refresh()
    assert groups() == [("a", 2), ("b", 1), ("c", 1)]  # read at once, though read just before
    _run(
        service,
        f"ALTER MATERIALIZED TABLE {counts} AS SELECT k, count(*) AS n, max(k) AS top FROM {namespace}.src GROUP BY k",
    )
    assert spark.table(counts).columns == ["k", "n", "top"]  # the statement's commit too

    monkeypatch.setattr(SessionCache, "forget", lambda self, *tables: None)  # the control: nothing forgotten
    spark.sql(f"INSERT INTO {namespace}.src VALUES ('d')").collect()
    refresh()
    assert ("d", 1, "d") not in groups(), "the catalog does not cache here: this test proves nothing"
    monkeypatch.undo()
    _run(service, f"DROP MATERIALIZED TABLE {counts}")
    assert not spark.catalog.tableExists(counts)

"""A refresh loads its table once and passes it on (issue 37): the catalog is asked for the table at the start, then
again only where a fresh read is the point — the commit's conflict check and the read back of what Spark committed
(the in-process path's commit returns the new metadata itself) — and each source once. Counted on the REST client
mt_magic's own catalog reads go through (Spark's Java client reads for its own plans), for every kind of refresh.
Before, the snapshot retention after the commit loaded the table once more."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from mt_testing import catalog_requests, run
from shared_catalog import CATALOG

from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshTrigger

pytestmark = pytest.mark.spark


def table_reads(mt):  # type: ignore[no-untyped-def]
    """The GETs of each table's metadata the catalog client sends, by table name."""

    def table(request):  # type: ignore[no-untyped-def]
        path = request.url.split("?")[0]
        return path.rsplit("/", 1)[-1] if request.method == "GET" and "/tables/" in path else None

    return catalog_requests(mt, table)


@pytest.mark.parametrize(
    ("name", "definition", "kind", "engine"),
    [
        ("loads_full", "REFRESH_MODE = FULL AS SELECT k, count(*) AS n FROM loads_src GROUP BY k", "full", "Spark"),
        ("loads_merge", "AS SELECT k, count(*) AS n FROM loads_src GROUP BY k", "incremental", "Spark"),
        ("loads_append", "AS SELECT k FROM loads_src WHERE k > 0", "incremental", "in process (DuckDB)"),
    ],
)
def test_a_refresh_loads_its_table_once(mt, spark, name: str, definition: str, kind: str, engine: str) -> None:
    spark.sql("CREATE TABLE IF NOT EXISTS loads_src (k BIGINT) USING iceberg")
    spark.sql("INSERT INTO loads_src SELECT id FROM range(1, 1001)")  # a change small enough to stay incremental
    pinned = "WITH ('incremental.engine' = 'spark') " if engine == "Spark" else ""
    run(mt, f"CREATE MATERIALIZED TABLE {name} {pinned}FRESHNESS = INTERVAL '1' MINUTE {definition}")
    spark.sql("INSERT INTO loads_src VALUES (3)")
    table = f"{CATALOG}.{mt.workspace.default_namespace}.{name}"
    request = RefreshRequest(table, RefreshTrigger.MANUAL, datetime.now(timezone.utc), job_group=f"loads-{name}")
    with table_reads(mt) as reads:
        outcome = mt.engine.refresh(request)
    assert (outcome.kind, outcome.engine) == (RefreshKind(kind), RefreshEngine(engine)), outcome.strategy
    start_check_and_read_back = 2 if outcome.engine is RefreshEngine.IN_PROCESS else 3
    assert reads == {name: start_check_and_read_back, "loads_src": 1}, dict(reads)

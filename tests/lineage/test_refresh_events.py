"""OpenLineage events of real refreshes (real Spark, the real REST catalog, a real HTTP consumer on 127.0.0.1):
a START and a COMPLETE or FAIL per refresh, for CREATE, scheduled, manual, cascaded and failed refreshes, every
event valid against the published schema; a consumer that is down fails nothing."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator

import pytest
from mt_testing import run, utc
from openlineage_schema import problems
from receiver import closed_port_url, receiving
from shared_catalog import CATALOG

from mt_magic.runtime.refresh.engine import Engine
from mt_magic.runtime.service import MaterializedTables
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshTrigger

pytestmark = pytest.mark.spark


@pytest.fixture
def environ() -> Iterator[None]:
    """The OpenLineage client adds variables of its own to ``os.environ``: all are put back after the test."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def lineage_service(mt, url: str) -> MaterializedTables:
    """``mt``'s workspace with an engine configured the way OpenLineage users configure a client."""
    os.environ["OPENLINEAGE_URL"] = url
    os.environ["OPENLINEAGE_NAMESPACE"] = "analytics"
    os.environ["OPENLINEAGE_API_KEY"] = "secret-key-1"
    os.environ["OPENLINEAGE_PARENT_ID"] = "airflow/mt__demo.refresh/01890a5b-3c4d-7e8f-9a0b-1c2d3e4f5a6b"
    engine = Engine(mt.workspace, mt.engine.jobs)
    assert engine.lineage is not None
    return MaterializedTables.inline(engine)


def runs_of(events: list[dict]) -> dict[str, list[dict]]:
    by_run: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        by_run[event["run"]["runId"]].append(event)
    return by_run


def test_every_refresh_sends_a_start_and_an_outcome(mt, spark, environ) -> None:
    ns = mt.workspace.default_namespace
    spark.sql("CREATE TABLE orders (region STRING, amount INT) USING iceberg")
    spark.sql("INSERT INTO orders VALUES ('eu', 5), ('us', 7)")
    spark.sql("CREATE TABLE readings (v INT) USING iceberg")
    spark.sql("INSERT INTO readings VALUES (1)")
    with receiving() as consumer:
        service = lineage_service(mt, consumer.url)
        engine = service.engine
        run(
            service,
            "CREATE MATERIALIZED TABLE totals FRESHNESS = INTERVAL '1' HOUR AS "
            "SELECT region, SUM(amount) AS total FROM orders GROUP BY region;"
            "CREATE MATERIALIZED TABLE big FRESHNESS = INTERVAL '1' HOUR AS "
            "SELECT region AS area, total FROM totals WHERE total > 6;"
            "CREATE MATERIALIZED TABLE checked FRESHNESS = INTERVAL '1' HOUR AS "
            "SELECT CASE WHEN v > 100 THEN raise_error('sensor overflow') ELSE v END AS v FROM readings",
        )
        totals, checked = f"{CATALOG}.{ns}.totals", f"{CATALOG}.{ns}.checked"
        spark.sql("INSERT INTO orders VALUES ('eu', 4)")
        engine.refresh(RefreshRequest(totals, RefreshTrigger.SCHEDULED, utc(2026, 1, 1, 3)))
        run(service, "ALTER MATERIALIZED TABLE totals REFRESH", cascade=True)  # manual, then big cascades
        spark.sql("INSERT INTO readings VALUES (500)")
        with pytest.raises(Exception, match="sensor overflow"):
            engine.refresh(RefreshRequest(checked, RefreshTrigger.MANUAL, utc(2026, 1, 1)))
        assert engine.lineage.flush(60)
        events = list(consumer.events)
        headers = list(consumer.headers)

    for event in events:
        assert problems(event) == [], event
    by_run = runs_of(events)
    assert all(
        [e["eventType"] for e in run_events] in (["START", "COMPLETE"], ["START", "FAIL"])
        for run_events in by_run.values()
    )
    outcomes = [run_events[-1] for run_events in by_run.values()]
    seen = {
        (e["job"]["name"].rsplit(".", 1)[-1], e["run"]["facets"]["mt_magic_refresh"]["trigger"], e["eventType"])
        for e in outcomes
    }
    assert {
        (f"{CATALOG}_{ns}_totals", "initial", "COMPLETE"),
        (f"{CATALOG}_{ns}_big", "initial", "COMPLETE"),
        (f"{CATALOG}_{ns}_totals", "scheduled", "COMPLETE"),
        (f"{CATALOG}_{ns}_totals", "manual", "COMPLETE"),
        (f"{CATALOG}_{ns}_big", "cascade", "COMPLETE"),
        (f"{CATALOG}_{ns}_checked", "manual", "FAIL"),
    } <= seen
    assert all(h.get("Authorization") == "Bearer secret-key-1" for h in headers)

    scheduled = next(e for e in outcomes if e["run"]["facets"]["mt_magic_refresh"]["trigger"] == "scheduled")
    assert scheduled["job"] == {
        **scheduled["job"],
        "namespace": "analytics",
        "name": f"mt_magic.refresh_materialized_table.{CATALOG}_{ns}_totals",
    }
    parent = scheduled["run"]["facets"]["parent"]["job"]
    assert (parent["namespace"], parent["name"]) == ("airflow", "mt__demo.refresh")
    decision = scheduled["run"]["facets"]["mt_magic_refresh"]
    assert (
        decision["kind"] in ("incremental", "full")
        and decision["rowsWritten"] >= 1
        and "wallSeconds" in decision["cost"]
    )
    (source,) = scheduled["inputs"]
    orders = mt.workspace.catalog.load(f"{CATALOG}.{ns}.orders")
    assert source["facets"]["version"]["datasetVersion"] == str(orders.current_snapshot_id)
    assert source["facets"]["symlinks"]["identifiers"][0]["name"] == f"{ns}.orders"
    assert [f["name"] for f in source["facets"]["schema"]["fields"]] == ["region", "amount"]
    assert source["namespace"] == "file" and source["name"].endswith("orders")
    (output,) = scheduled["outputs"]
    table = mt.workspace.catalog.load(totals)
    assert output["facets"]["version"]["datasetVersion"] == str(decision["snapshotId"])
    assert decision["snapshotId"] in table.known_snapshot_ids
    total = output["facets"]["columnLineage"]["fields"]["total"]["inputFields"]
    assert [(f["name"], f["field"], f["transformations"][0]["subtype"]) for f in total] == [
        (source["name"], "amount", "AGGREGATION")
    ]
    cascaded = next(e for e in outcomes if e["run"]["facets"]["mt_magic_refresh"]["trigger"] == "cascade")
    assert cascaded["inputs"][0]["name"] == output["name"]  # the upstream table's output is this run's input
    area = cascaded["outputs"][0]["facets"]["columnLineage"]["fields"]["area"]["inputFields"]
    assert [(f["name"], f["field"]) for f in area] == [(output["name"], "region")]
    failed = next(e for e in outcomes if e["eventType"] == "FAIL")
    message = failed["run"]["facets"]["errorMessage"]["message"]  # Spark's class, not its text (it can quote rows)
    assert message.startswith(f"RefreshError: refresh of {checked} failed: ") and "sensor overflow" not in message
    assert all("secret-key-1" not in str(e) for e in events)


def test_a_consumer_that_is_down_fails_no_refresh(mt, spark, environ) -> None:
    ns = mt.workspace.default_namespace
    spark.sql("CREATE TABLE clicks (page STRING) USING iceberg")
    spark.sql("INSERT INTO clicks VALUES ('a'), ('b')")
    service = lineage_service(mt, closed_port_url())
    run(service, "CREATE MATERIALIZED TABLE pages AS SELECT page, count(*) AS n FROM clicks GROUP BY page")
    spark.sql("INSERT INTO clicks VALUES ('a')")
    outcome = service.engine.refresh(RefreshRequest(f"{CATALOG}.{ns}.pages", RefreshTrigger.MANUAL, utc(2026, 1, 1)))

    assert outcome.rows_written >= 1
    assert sorted(spark.sql("SELECT page, n FROM pages").collect()) == [("a", 2), ("b", 1)]
    assert service.engine.lineage.flush(30)
    emitter = service.engine.lineage.emitter
    assert (emitter.failed, emitter.dropped) == (1, 3)  # two runs, two events each: the first tried, the rest paused
    service.engine.close()

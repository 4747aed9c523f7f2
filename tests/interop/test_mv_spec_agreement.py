"""The spec-only reader (:mod:`mv_spec_reader`, no mt_magic in it) and ``%mt status`` agree on every table of a
chain: orders → revenue → top, ``legacy`` on orders, whose last refresh was written the old way (the
``refresh-state`` of releases before the draft's shape: ``catalog`` in each entry, no ``view-version-id``), and
``refunds`` on a source that had no snapshot. "up to date" in mt_magic's status is the reader's fresh; "behind"
its stale or invalid. Another engine's view versions are part of the chain: one that keeps the query (a second
dialect) and one that changes it; the spec calls the storage table invalid after either until a refresh records
the current version, which mt_magic's refresh can do only for the first: after the second it refuses (what, where,
Fix) and the manager holds the table until ``ALTER … AS`` takes the view over."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import pytest
import requests
from mt_testing import run
from mv_spec_reader import SpecReader, State, violations

from mt_magic.errors import InvalidTableError
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import JobState, RefreshKind, RefreshTrigger

pytestmark = pytest.mark.spark


class OneNamespace:
    """The real engine, discovering this test's namespace only, its daily cron 22 to 23 hours from the test's clock
    (no scheduled refresh starts within the test, whose polls move the clock about 12 hours)."""

    def __init__(self, engine: Any, prefix: str, cron: str) -> None:
        self._engine, self._prefix, self._cron = engine, prefix, cron

    def discover(self, reuse: Any = frozenset()) -> Any:
        tables = [t for t in self._engine.discover(reuse) if t.name.startswith(self._prefix)]
        return [replace(t, cron=self._cron) if t.cron else t for t in tables]

    def __getattr__(self, attribute: str) -> object:
        return getattr(self._engine, attribute)


@dataclass(frozen=True)
class Watched:
    service: Any
    clock: Any


@pytest.fixture
def watched(mt) -> Iterator[Watched]:  # type: ignore[no-untyped-def]
    """A refresh manager polling staleness as a kernel's does, on a clock the test moves."""
    from mt_magic.runtime.manager.loop import InlineExecutor
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.runtime.workspace import utc_now
    from mt_magic.testing import FakeClock

    prefix = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}."
    clock = FakeClock(utc_now())
    cron = f"0 {(clock().hour + 23) % 24} * * *"  # twelve hours ahead was crossed when the test began late in an hour
    manager = RefreshManager(OneNamespace(mt.engine, prefix, cron), clock=clock, executor=InlineExecutor())
    yield Watched(MaterializedTables(mt.engine, manager, background=False), clock)
    manager.stop()


def mt_says(watched: Watched, table: str) -> State:
    """mt_magic's status at its next poll, as the reader's terms: up to date is fresh, behind is not."""
    from mt_magic.widgets.badges import freshness_badge

    watched.clock.advance(minutes=15)
    assert watched.service.manager.step() == [], "the manager started a refresh of its own"
    workspace = watched.service.workspace
    status = watched.service.status(f"{workspace.catalog.spark_name}.{workspace.default_namespace}.{table}")
    assert status.staleness is not None, f"{table}: mt_magic does not know its staleness"
    return State.FRESH if "up to date" in freshness_badge(status).label else State.STALE


def write_the_old_way(spark, catalog: str, namespace: str, table: str, reader: SpecReader) -> None:  # type: ignore[no-untyped-def]
    """A refresh commit as releases before the draft's shape wrote it: the same rows, the older record."""
    state = reader.refresh_state([namespace], table)
    assert state is not None
    older = {
        "source-states": [
            {**{k: v for k, v in s.items() if k != "type"}, "type": "table", "catalog": catalog}
            for s in state["source-states"]
        ],
        "refresh-start-timestamp-ms": state["refresh-start-timestamp-ms"],
    }
    (
        spark.table(f"{catalog}.{namespace}.{table}")
        .writeTo(f"{catalog}.{namespace}.{table}")
        .option("snapshot-property.refresh-state", json.dumps(older))
        .option("snapshot-property.mt.refresh-kind", "full")
        .option("snapshot-property.mt.refresh-trigger", "manual")
        .option("snapshot-property.mt.definition-version", "1")
        .overwritePartitions()
    )


def another_engines_version(reader: SpecReader, namespace: str, view: str, sql: str | None = None) -> int:
    """A new current version of ``view`` committed over plain REST as another engine would: the current version's
    query, namespace and ``storage-table`` with a ``trino`` representation added (``sql=None``), or its ``spark``
    query replaced by ``sql``; the other engine's summary, none of mt_magic's."""
    meta = reader.view([namespace], view)
    assert meta is not None
    current = next(v for v in meta["versions"] if v["version-id"] == meta["current-version-id"])
    spark = next(r for r in current["representations"] if r["dialect"] == "spark")
    representations = [{**spark, "sql": sql or spark["sql"]}, {"type": "sql", "dialect": "trino", "sql": "SELECT 1"}]
    version = {
        **current,
        "version-id": max(v["version-id"] for v in meta["versions"]) + 1,
        "timestamp-ms": int(time.time() * 1000),
        "summary": {"engine-name": "trino", "engine-version": "479"},
        "representations": representations,
    }
    body = {
        "identifier": {"namespace": [namespace], "name": view},
        "requirements": [{"type": "assert-view-uuid", "uuid": meta["view-uuid"]}],
        "updates": [
            {"action": "add-view-version", "view-version": version},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    base = reader.uri.rstrip("/")
    headers = {"Authorization": f"Bearer {reader.token}"} if reader.token else {}
    answer = requests.post(f"{base}/v1/namespaces/{namespace}/views/{view}", json=body, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["metadata"]["current-version-id"])


def test_the_reader_and_mt_status_agree_through_a_chain(mt, watched: Watched, connection) -> None:  # type: ignore[no-untyped-def]
    props = connection.catalog_config.properties
    reader = SpecReader(str(props["uri"]), props.get("token"))
    spark, catalog, ns = connection.spark, mt.workspace.catalog.spark_name, str(mt.workspace.default_namespace)
    tables = ("revenue", "top", "legacy", "refunds")

    def agree() -> tuple[State, ...]:
        says = tuple(
            State.FRESH if (s := reader.state([ns], f"{t}__mv", recursive=True)) is State.FRESH else s for t in tables
        )
        ours = tuple(mt_says(watched, t) for t in tables)
        assert tuple(State.FRESH if s is State.FRESH else State.STALE for s in says) == ours, (says, ours)
        return says

    def record(table: str) -> dict[str, Any]:
        state = reader.refresh_state([ns], table)
        assert state is not None and violations(state) == [], (table, state)
        return state

    spark.sql("CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) USING iceberg")
    spark.sql("INSERT INTO orders VALUES (1, 'ann', 10.0), (2, 'bob', 5.5)")
    spark.sql("CREATE TABLE returns (id BIGINT, amount DOUBLE) USING iceberg")
    run(
        mt,
        "CREATE MATERIALIZED TABLE revenue FRESHNESS = INTERVAL '1' DAY "
        "AS SELECT customer, sum(amount) AS total FROM orders GROUP BY customer;"
        "CREATE MATERIALIZED TABLE top FRESHNESS = INTERVAL '1' DAY AS SELECT max(total) AS top FROM revenue;"
        "CREATE MATERIALIZED TABLE legacy FRESHNESS = INTERVAL '1' DAY AS SELECT count(*) AS n FROM orders;"
        "CREATE MATERIALIZED TABLE refunds FRESHNESS = INTERVAL '1' DAY AS SELECT sum(amount) AS s FROM returns",
    )
    fresh = (State.FRESH,) * 4
    assert agree() == fresh
    revenue__mv = reader.view([ns], "revenue__mv")
    assert revenue__mv is not None
    assert [(s["type"], s["name"]) for s in record("top")["source-states"]] == [
        ("table", "revenue"),
        ("view", "revenue__mv"),  # an upstream materialized view: its storage table and its view
    ]
    assert record("top")["source-states"][1]["version-id"] == revenue__mv["current-version-id"]
    assert [s["snapshot-id"] for s in record("refunds")["source-states"]] == [-1]  # the spec's "no snapshot"

    write_the_old_way(spark, catalog, ns, "legacy", reader)
    assert agree() == (State.FRESH, State.FRESH, State.INVALID, State.FRESH)  # no view-version-id: not trusted

    spark.sql("INSERT INTO orders VALUES (3, 'ann', 100.0)")
    spark.sql("INSERT INTO returns VALUES (1, 2.0)")
    assert agree() == (State.STALE, State.STALE, State.INVALID, State.STALE)
    from mt_magic.widgets.badges import freshness_badge

    top = watched.service.status(f"{catalog}.{ns}.top")  # behind because its upstream is: the badge says which
    assert top.behind_upstream == f"{catalog}.{ns}.revenue" and "(upstream revenue)" in freshness_badge(top).label

    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH; ALTER MATERIALIZED TABLE legacy REFRESH")
    run(mt, "ALTER MATERIALIZED TABLE refunds REFRESH")
    assert agree() == (State.FRESH, State.STALE, State.FRESH, State.FRESH)  # the old record still reads
    record("legacy")

    spark.sql(
        f"CALL {catalog}.system.rewrite_data_files(table => '{ns}.revenue', options => map('rewrite-all', 'true'))"
    )
    run(mt, "ALTER MATERIALIZED TABLE top REFRESH")
    assert agree() == fresh  # a compaction keeps the refresh state in force

    # Another engine's version of revenue's view, the same query in a second dialect: invalid until a refresh
    # records it; mt_magic's refresh ran that query, so it records the other engine's version.
    trino = another_engines_version(reader, ns, "revenue__mv")
    assert agree() == (State.INVALID, State.STALE, State.FRESH, State.FRESH)
    scheduled = RefreshRequest(f"{catalog}.{ns}.revenue", RefreshTrigger.SCHEDULED, datetime.now(timezone.utc))
    assert mt.engine.refresh(scheduled).kind is not RefreshKind.NOOP  # no source moved, yet it is invalid
    run(mt, "ALTER MATERIALIZED TABLE top REFRESH")
    assert agree() == fresh and record("revenue")["view-version-id"] == trino

    # Another engine's version with another query: mt_magic's refresh would run its own definition, which the view
    # no longer holds, and leave the table invalid, so it is refused with the Fix, writes nothing, and the manager
    # holds the table's schedule (no retry) until a statement takes the view over.
    other = another_engines_version(reader, ns, "revenue__mv", sql=f"SELECT customer, 0D AS total FROM {ns}.orders")
    assert agree() == (State.INVALID, State.STALE, State.FRESH, State.FRESH)
    name, before = f"{catalog}.{ns}.revenue", reader.refresh_state([ns], "revenue")
    refused = rf"revenue__mv is at version {other}, written by trino.*Fix: CREATE OR ALTER MATERIALIZED TABLE {name} "
    with pytest.raises(InvalidTableError, match=refused):
        run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH")
    with pytest.raises(InvalidTableError, match=refused):  # the manager's scheduled refresh: refused, then held
        watched.service.refresh(name, trigger=RefreshTrigger.SCHEDULED).refresh.result(timeout=300)
    status = watched.service.status(name)
    assert status.state is not JobState.RETRYING and status.last_error and "Fix: CREATE OR ALTER" in status.last_error
    watched.clock.advance(minutes=15)  # past any backoff (at most 10 minutes): nothing starts
    assert watched.service.manager.step() == [] and reader.refresh_state([ns], "revenue") == before
    assert agree() == (State.INVALID, State.STALE, State.FRESH, State.FRESH)

    run(
        mt,
        "ALTER MATERIALIZED TABLE revenue AS "
        "SELECT customer, sum(amount) AS total, count(*) AS n FROM orders GROUP BY customer",
    )
    assert agree() == (State.INVALID, State.STALE, State.FRESH, State.FRESH)  # mt_magic's new version: invalid
    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH; ALTER MATERIALIZED TABLE top REFRESH")
    assert agree() == fresh

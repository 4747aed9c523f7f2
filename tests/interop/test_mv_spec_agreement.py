"""The spec-only reader (:mod:`mv_spec_reader`, no mt_magic in it) and ``%mt status`` agree on every table of a
chain: orders → revenue → top, and ``legacy`` on orders, whose last refresh was written the old way (the
``refresh-state`` of releases before the draft's shape: ``catalog`` in each entry, no ``view-version-id``).
"up to date" in mt_magic's status is the reader's fresh; "behind" its stale or invalid."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from mt_testing import run
from mv_spec_reader import SpecReader, State

pytestmark = pytest.mark.spark


class OneNamespace:
    """The real engine, discovering this test's namespace only, its daily cron twelve hours from the test's clock
    (no scheduled refresh starts within the test)."""

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
    cron = f"0 {(clock().hour + 12) % 24} * * *"
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


def test_the_reader_and_mt_status_agree_through_a_chain(mt, watched: Watched, connection) -> None:  # type: ignore[no-untyped-def]
    props = connection.catalog_config.properties
    reader = SpecReader(str(props["uri"]), props.get("token"))
    spark, catalog, ns = connection.spark, mt.workspace.catalog.spark_name, str(mt.workspace.default_namespace)
    tables = ("revenue", "top", "legacy")

    def agree() -> tuple[State, ...]:
        says = tuple(
            State.FRESH if (s := reader.state([ns], f"{t}__mv", recursive=True)) is State.FRESH else s for t in tables
        )
        ours = tuple(mt_says(watched, t) for t in tables)
        assert tuple(State.FRESH if s is State.FRESH else State.STALE for s in says) == ours, (says, ours)
        return says

    spark.sql("CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) USING iceberg")
    spark.sql("INSERT INTO orders VALUES (1, 'ann', 10.0), (2, 'bob', 5.5)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE revenue FRESHNESS = INTERVAL '1' DAY "
        "AS SELECT customer, sum(amount) AS total FROM orders GROUP BY customer;"
        "CREATE MATERIALIZED TABLE top FRESHNESS = INTERVAL '1' DAY AS SELECT max(total) AS top FROM revenue;"
        "CREATE MATERIALIZED TABLE legacy FRESHNESS = INTERVAL '1' DAY AS SELECT count(*) AS n FROM orders",
    )
    assert agree() == (State.FRESH, State.FRESH, State.FRESH)

    write_the_old_way(spark, catalog, ns, "legacy", reader)
    assert agree() == (State.FRESH, State.FRESH, State.INVALID)  # no view-version-id: not to be trusted

    spark.sql("INSERT INTO orders VALUES (3, 'ann', 100.0)")
    assert agree() == (State.STALE, State.STALE, State.INVALID)

    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH; ALTER MATERIALIZED TABLE legacy REFRESH")
    assert agree() == (State.FRESH, State.STALE, State.FRESH)  # the old record still reads: legacy refreshes

    spark.sql(
        f"CALL {catalog}.system.rewrite_data_files(table => '{ns}.revenue', options => map('rewrite-all', 'true'))"
    )
    run(mt, "ALTER MATERIALIZED TABLE top REFRESH")
    assert agree() == (State.FRESH, State.FRESH, State.FRESH)  # a compaction keeps the refresh state in force

    run(
        mt,
        "ALTER MATERIALIZED TABLE revenue AS "
        "SELECT customer, sum(amount) AS total, count(*) AS n FROM orders GROUP BY customer",
    )
    assert agree() == (State.INVALID, State.STALE, State.FRESH)  # another view version: invalid until refreshed

"""An idle kernel's discovery against the real catalog server (issue 37): every 30 s it lists the catalog, but asks
about a long-freshness table itself only every hundredth of its freshness — and a change made here is never undone
by an older answer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

from mt_magic.catalog.definitions import MaterializedTableDefinition, RefreshState, SourceState
from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.refresh.engine import Engine, managed_table
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.freshness import FreshnessRules
from mt_magic.testing import FakeClock
from mt_magic.vocabulary import RefreshKind, RefreshMode, RefreshTrigger

ROWS = pa.table({"k": pa.array([1], pa.int64())})
TABLES = 3
DAILY = MaterializedTableDefinition(
    query="SELECT k FROM orders",
    expanded_query="SELECT k FROM mt_test.{ns}.orders",
    freshness="INTERVAL '1' DAY",
    refresh_mode=RefreshMode.FULL,
    interval=timedelta(days=1),
    cron="0 0 1 1 *",  # nothing falls due while the test runs
    upstream=("mt_test.{ns}.orders",),
)


@pytest.fixture
def loads(rest, ns: str) -> Iterator[list[str]]:  # type: ignore[no-untyped-def]
    """The names of this test's materialized tables the client asked the catalog about (each load, 200 or 304)."""
    asked: list[str] = []

    def record(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        path = response.request.path_url.split("?")[0]
        if response.request.method == "GET" and f"/namespaces/{ns}/tables/t" in path:
            asked.append(path.rsplit("/", 1)[-1])

    hooks = rest._session.hooks["response"]
    hooks.append(record)
    yield asked
    hooks.remove(record)


def _daily_tables(rest, ns: str) -> list[str]:  # type: ignore[no-untyped-def]
    source = rest.create_table((ns, "orders"), schema=ROWS.schema)
    definition = MaterializedTableDefinition.from_properties(
        {k: v.replace("{ns}", ns) for k, v in DAILY.to_properties().items()}
    )
    assert definition is not None
    now = datetime.now(timezone.utc)
    state = RefreshState(
        (SourceState((ns,), "orders", str(source.metadata.table_uuid), None, "mt_test"),),
        now,
        RefreshKind.FULL,
        RefreshTrigger.SCHEDULED,
        now,
    )
    for number in range(TABLES):
        table = rest.create_table((ns, f"t{number}"), schema=ROWS.schema, properties=definition.to_properties())
        table.append(ROWS, snapshot_properties=state.to_summary())
    return [f"mt_test.{ns}.t{number}" for number in range(TABLES)]


def test_an_idle_daily_table_is_asked_about_every_hundredth_of_its_freshness_and_local_changes_stay(  # type: ignore[no-untyped-def]
    rest, ns: str, loads: list[str]
) -> None:
    names = _daily_tables(rest, ns)
    catalog = MaterializedCatalog(rest, "mt_test")
    clock = FakeClock(datetime.now(timezone.utc))
    workspace = Workspace(spark=None, catalog=catalog, default_namespace=ns, rules=FreshnessRules(), clock=clock)  # type: ignore[arg-type]
    manager = RefreshManager(Engine(workspace, None), clock=clock, rediscover_every=timedelta(seconds=30))  # type: ignore[arg-type]
    manager.step()
    assert {status.name for status in manager.statuses()} >= set(names)

    loads.clear()
    clock.advance(seconds=31)
    manager.step()  # the listing shows the same tables; none of them is asked about (before: one load each)
    assert loads == []

    elsewhere, here = names[0], names[1]
    weekly = {"mt.freshness": "INTERVAL '7' DAY", "mt.freshness-seconds": str(7 * 86400)}
    assert set(weekly) <= set(DAILY.to_properties())
    catalog.update_properties(elsewhere, weekly)  # another process's ALTER … SET FRESHNESS
    catalog.update_properties(here, weekly)  # this process's: the catalog, then the manager
    manager.upsert(managed_table(catalog.load(here), set(names)))
    clock.advance(seconds=31)
    manager.step()
    assert manager.status(here).freshness == timedelta(days=7)  # not put back by the answer of 31 s ago
    assert manager.status(elsewhere).freshness == timedelta(days=1)

    clock.advance(timedelta(days=1) / 100)  # 14.4 minutes: the daily ones are asked about again, the change shows
    loads.clear()
    manager.step()
    assert sorted(set(loads)) == ["t0", "t2"]  # t1 is weekly now: asked about every 100.8 minutes
    assert manager.status(elsewhere).freshness == timedelta(days=7)


def test_a_statements_graph_asks_about_unchanged_tables_without_fetching_them_again(  # type: ignore[no-untyped-def]
    rest, ns: str
) -> None:
    """DROP, RENAME, a conversion and a cascade read every table's sources (the graph): a table unchanged since this
    process read it is not asked about nor parsed again (the embedded server tells every table's ETag in one answer),
    so a statement's cost does not grow with what the catalog holds (issue 37); a changed table is read again."""
    from mt_magic.runtime.graph import lineage

    names = _daily_tables(rest, ns)
    answers: list[tuple[str, int]] = []

    def record(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        path = response.request.path_url.split("?")[0]
        if response.request.method == "GET" and f"/namespaces/{ns}/tables/t" in path:
            answers.append((path.rsplit("/", 1)[-1], response.status_code))

    rest._session.hooks["response"].append(record)
    try:
        catalog = MaterializedCatalog(rest, "mt_test")
        workspace = Workspace(
            spark=None,
            catalog=catalog,
            default_namespace=ns,
            rules=FreshnessRules(),
            clock=FakeClock(datetime.now(timezone.utc)),
        )  # type: ignore[arg-type]
        first = lineage(workspace).reads
        assert {name: first[name] for name in names} == {name: (f"mt_test.{ns}.orders",) for name in names}
        answers.clear()
        catalog.update_properties(names[0], {"comment": "changed elsewhere"})
        answers.clear()
        assert lineage(workspace).reads == first
        assert sorted(answers) == [("t0", 200)]
    finally:
        rest._session.hooks["response"].remove(record)


def test_a_namespace_named_with_a_brace_does_not_hide_the_catalog(rest, ns: str) -> None:  # type: ignore[no-untyped-def]
    """pyiceberg writes a parent namespace into a format string, so listing inside one named ``x{y`` raises; such a
    name (another test's, a user's) once made every discovery fail ("trying again in 30 s"), whatever else the
    catalog held (found by ``make test-spark`` in two processes, where a module that makes one ran first)."""
    names = _daily_tables(rest, ns)
    odd = f"brace{{{ns}"
    rest.create_namespace(odd)
    try:
        found = {info.name for info in MaterializedCatalog(rest, "mt_test").list_materialized()}
    finally:
        rest.drop_namespace(odd)
    assert found >= set(names)

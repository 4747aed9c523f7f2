"""A reader of Iceberg materialized views written from the draft's text alone (apache/iceberg PR #11041,
``format/view-spec.md``, as its review thread shows it in September 2026), run against what mt_magic writes.

The reader (everything above the tests) imports nothing of mt_magic: pyiceberg's REST catalog for tables and
plain HTTP for the view endpoints (pyiceberg 0.10 loads no views). It finds the storage table through the view's
current version (``storage-table``), reads the ``refresh-state`` of the storage table's current snapshot, checks
every field the draft requires, and judges the view:

* **invalid** -- there is no refresh state to use, or it was written for another view version than the current
  one (a changed definition: the draft says such a snapshot is not fresh and is not to be consumed until a
  refresh);
* **stale** -- a recorded source no longer is at the recorded state (table: the ``snapshot-id`` of its ``ref``,
  ``main`` when unset, and its ``uuid``; view: ``version-id`` and ``uuid``);
* **fresh** -- otherwise.

The draft leaves recursion into upstream materialized views to the consumer ("optionally recursive
verification"; its Appendix B recurses): ``recursive=True`` also requires every recorded source that is itself a
storage table (its current snapshot has a ``refresh-state``) to be fresh.

The tests compare the verdict with mt_magic's own: the staleness in its status (the card's "up to date" or
"… behind"), polled by a refresh manager as a kernel's would."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
import requests

# --- the reader: pyiceberg and HTTP only -----------------------------------------------------------------------

REQUIRED_STATE = {"view-version-id": int, "source-states": list, "refresh-start-timestamp-ms": int}
TABLE_FIELDS = {"type", "name", "namespace", "catalog", "uuid", "snapshot-id", "ref"}
VIEW_FIELDS = {"type", "name", "namespace", "catalog", "uuid", "version-id"}
NO_SNAPSHOT = -1
"""The table spec's ``current-snapshot-id`` for a table without one (pyiceberg reads it as ``None``)."""


class Verdict(enum.Enum):
    """The draft's interpretation of a materialized view's storage table."""

    FRESH = "fresh"
    """The refresh state names the current view version and every recorded source is still at its state."""
    STALE = "stale"
    """A recorded source changed since the refresh."""
    INVALID = "invalid"
    """No refresh state to use, or one written for another view version."""


class DraftViolation(AssertionError):
    """What the writer wrote is not what the draft specifies."""


@dataclass(frozen=True)
class DraftReader:
    """A consumer of one REST catalog: ``uri`` and ``token`` as any client would be given them."""

    uri: str
    token: str | None

    @property
    def catalog(self) -> Any:
        from pyiceberg.catalog import load_catalog

        return load_catalog("draft_reader", type="rest", uri=self.uri, **({"token": self.token} if self.token else {}))

    def view(self, namespace: Sequence[str], name: str) -> dict[str, Any] | None:
        """The view's metadata over plain HTTP (``LoadViewResult.metadata``), ``None`` on 404."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        base = self.uri.rstrip("/")
        config = requests.get(f"{base}/v1/config", headers=headers, timeout=30).json()
        prefix = config.get("overrides", {}).get("prefix")
        root = f"{base}/v1/{prefix}" if prefix else f"{base}/v1"
        url = f"{root}/namespaces/{chr(0x1F).join(namespace)}/views/{name}"
        response = requests.get(url, headers=headers, timeout=30)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()["metadata"]

    def refresh_state(self, namespace: Sequence[str], name: str) -> dict[str, Any] | None:
        """The ``refresh-state`` of the table's current snapshot, checked against the draft; ``None``: none."""
        snapshot = self.catalog.load_table((*namespace, name)).current_snapshot()
        summary = {} if snapshot is None or snapshot.summary is None else snapshot.summary.additional_properties
        raw = summary.get("refresh-state")
        if raw is None:
            return None
        state = json.loads(raw)
        for key, kind in REQUIRED_STATE.items():
            if not isinstance(state.get(key), kind):
                raise DraftViolation(f"refresh-state of {name}: {key} is {state.get(key)!r}, not a {kind.__name__}")
        for entry in state["source-states"]:
            _check_entry(name, entry)
        return state

    def judge(self, namespace: Sequence[str], view: str, recursive: bool = False) -> Verdict:
        """The draft's verdict on the materialized view ``namespace.view``."""
        meta = self.view(namespace, view)
        if meta is None:
            raise LookupError(f"no view {'.'.join(namespace)}.{view}")
        current = next(v for v in meta["versions"] if v["version-id"] == meta["current-version-id"])
        pointer = current.get("storage-table")
        if pointer is None:
            raise LookupError(f"{view} is a common view: its current version has no storage-table")
        if set(pointer) != {"namespace", "name"}:
            raise DraftViolation(f"storage-table of {view} has the fields {sorted(pointer)}, not namespace and name")
        state = self.refresh_state(pointer["namespace"], pointer["name"])
        if state is None or state["view-version-id"] != meta["current-version-id"]:
            return Verdict.INVALID
        return self._sources(state, recursive, seen={(tuple(pointer["namespace"]), pointer["name"])})

    def _sources(self, state: Mapping[str, Any], recursive: bool, seen: set[tuple[tuple[str, ...], str]]) -> Verdict:
        for entry in state["source-states"]:
            if "catalog" in entry:  # the only catalog this consumer knows is the view's own
                raise LookupError(f"source {entry['name']} is in catalog {entry['catalog']!r}, which is not at hand")
            namespace, name = tuple(entry["namespace"]), entry["name"]
            if entry["type"] == "view":
                meta = self.view(namespace, name)
                if meta is None or (meta["view-uuid"], meta["current-version-id"]) != (
                    entry["uuid"],
                    entry["version-id"],
                ):
                    return Verdict.STALE
                continue
            table = self.catalog.load_table((*namespace, name))
            ref = table.metadata.refs.get(entry.get("ref") or "main")
            current = NO_SNAPSHOT if ref is None else ref.snapshot_id
            if (str(table.metadata.table_uuid), current) != (entry["uuid"], entry["snapshot-id"]):
                return Verdict.STALE
            if recursive and (namespace, name) not in seen:
                upstream = self.refresh_state(namespace, name)
                if (
                    upstream is not None
                    and self._sources(upstream, True, seen | {(namespace, name)}) is not Verdict.FRESH
                ):
                    return Verdict.STALE
        return Verdict.FRESH


def _check_entry(table: str, entry: Mapping[str, Any]) -> None:
    kind = entry.get("type")
    allowed, counter = (TABLE_FIELDS, "snapshot-id") if kind == "table" else (VIEW_FIELDS, "version-id")
    if kind not in ("table", "view"):
        raise DraftViolation(f"refresh-state of {table}: source type {kind!r} is neither table nor view")
    if set(entry) - allowed:
        raise DraftViolation(f"refresh-state of {table}: fields {sorted(set(entry) - allowed)} are not the draft's")
    for key, check in (
        ("name", lambda v: isinstance(v, str) and v != ""),
        ("namespace", lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v)),
        ("uuid", lambda v: isinstance(v, str) and v != ""),
        (counter, lambda v: isinstance(v, int) and not isinstance(v, bool)),
        ("catalog", lambda v: isinstance(v, str) and v != ""),
        ("ref", lambda v: isinstance(v, str) and v != ""),
    ):
        missing = key not in entry and key not in ("catalog", "ref")
        if missing or (key in entry and not check(entry[key])):
            raise DraftViolation(
                f"refresh-state of {table}: {kind} {entry.get('name')!r} has {key} = {entry.get(key)!r}"
            )


# --- the tests: mt_magic writes, the reader judges, mt_magic's status agrees -------------------------------------


class Namespace:
    """The real engine, with discovery narrowed to one namespace (the session's catalog holds other tests') and the
    daily cron moved to ``cron``: the tables' last refresh is the real time, so at 23:00 UTC the real ``0 0 * * *``
    would start a scheduled refresh within the test's two hours of clock (the CI run of ``a62745c`` failed so)."""

    def __init__(self, engine: Any, prefix: str, cron: str) -> None:
        self._engine, self._prefix, self._cron = engine, prefix, cron

    def discover(self, reuse: Any = frozenset()) -> Any:
        tables = [t for t in self._engine.discover(reuse) if t.name.startswith(self._prefix)]
        return [replace(t, cron=self._cron) if t.cron else t for t in tables]

    def __getattr__(self, attribute: str) -> object:
        return getattr(self._engine, attribute)


@pytest.fixture
def reader(connection) -> DraftReader:  # type: ignore[no-untyped-def]
    props = connection.catalog_config.properties
    return DraftReader(str(props["uri"]), props.get("token"))


@dataclass(frozen=True)
class Watched:
    """A service whose refresh manager polls staleness as a kernel's does, on a clock the test moves."""

    service: Any
    clock: Any


@pytest.fixture
def watched(mt) -> Iterator[Watched]:  # type: ignore[no-untyped-def]
    """mt_magic's view of the tables: a refresh manager polling staleness, as a kernel's does (FULL tables with a
    daily FRESHNESS: polled every 14.4 min of the clock; their cron twelve hours away, so no scheduled
    run falls within the test's hours whenever it runs)."""
    from mt_magic.runtime.manager.loop import InlineExecutor
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.runtime.workspace import utc_now
    from mt_magic.testing import FakeClock

    prefix = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}."
    clock = FakeClock(utc_now())
    far_from_now = f"0 {(clock().hour + 12) % 24} * * *"  # still daily, twelve hours from the test's clock
    manager = RefreshManager(Namespace(mt.engine, prefix, far_from_now), clock=clock, executor=InlineExecutor())
    yield Watched(MaterializedTables(mt.engine, manager, background=False), clock)
    manager.stop()


def mt_says(watched: Watched, table: str) -> str:
    """``up to date`` or ``behind``, as mt_magic's status (``%mt``, the card's badge) says it at its next poll."""
    from mt_magic.widgets.badges import freshness_badge

    watched.clock.advance(minutes=15)
    assert watched.service.manager.step() == [], "the manager started a refresh of its own"
    workspace = watched.service.workspace
    status = watched.service.status(f"{workspace.catalog.spark_name}.{workspace.default_namespace}.{table}")
    assert status.staleness is not None, f"{table}: mt_magic does not know its staleness"
    label = freshness_badge(status).label
    return "up to date" if "up to date" in label else "behind"


@pytest.fixture
def revenue(mt, connection) -> str:  # type: ignore[no-untyped-def]
    from mt_testing import run

    connection.spark.sql("CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) USING iceberg")
    connection.spark.sql("INSERT INTO orders VALUES (1, 'ann', 10.0), (2, 'bob', 5.5)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE revenue FRESHNESS = INTERVAL '1' DAY "
        "AS SELECT customer, sum(amount) AS total FROM orders GROUP BY customer",
    )
    return str(mt.workspace.default_namespace)


def test_the_written_refresh_state_is_the_drafts_record(mt, reader: DraftReader, revenue: str) -> None:  # type: ignore[no-untyped-def]
    """The record itself: the draft's three fields, one ``table`` entry per source in the draft's fields only, no
    ``catalog`` (the source is in the view's own catalog); mt_magic's own facts in ``mt.`` keys beside it."""
    state = reader.refresh_state([revenue], "revenue")
    assert state is not None and set(state) == set(REQUIRED_STATE)
    orders = reader.catalog.load_table((revenue, "orders"))
    assert state["source-states"] == [
        {
            "type": "table",
            "namespace": [revenue],
            "name": "orders",
            "uuid": str(orders.metadata.table_uuid),
            "snapshot-id": orders.metadata.current_snapshot_id,
        }
    ]
    summary = reader.catalog.load_table((revenue, "revenue")).current_snapshot().summary.additional_properties
    assert summary["mt.source-catalog"] == mt.workspace.catalog.spark_name
    assert "mt.refresh-state" not in summary


def test_fresh_after_create_stale_after_a_source_append_fresh_after_refresh(
    mt, reader: DraftReader, watched: Watched, revenue: str, connection
) -> None:  # type: ignore[no-untyped-def]
    from mt_testing import run

    assert reader.judge([revenue], "revenue__mv") is Verdict.FRESH
    assert mt_says(watched, "revenue") == "up to date"

    connection.spark.sql("INSERT INTO orders VALUES (3, 'cid', 1.0)")
    assert reader.judge([revenue], "revenue__mv") is Verdict.STALE
    assert mt_says(watched, "revenue") == "behind"

    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH")
    assert reader.judge([revenue], "revenue__mv") is Verdict.FRESH
    assert mt_says(watched, "revenue") == "up to date"


def test_alter_as_is_invalid_until_the_next_refresh(mt, reader: DraftReader, watched: Watched, revenue: str) -> None:  # type: ignore[no-untyped-def]
    """ALTER … AS adds a view version; the stored rows still hold the old query's result. The draft: not fresh,
    not to be consumed, until refreshed; mt_magic's status: behind since the ALTER (it said "up to date" before
    ``pending_since`` compared the last refresh's definition version with the table's)."""
    from mt_testing import run

    run(
        mt,
        "ALTER MATERIALIZED TABLE revenue AS SELECT customer, sum(amount) AS total, count(*) AS n "
        "FROM orders GROUP BY customer",
    )
    assert reader.judge([revenue], "revenue__mv") is Verdict.INVALID
    assert mt_says(watched, "revenue") == "behind"

    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH")
    assert reader.judge([revenue], "revenue__mv") is Verdict.FRESH
    assert mt_says(watched, "revenue") == "up to date"


def test_a_table_on_a_table(mt, reader: DraftReader, watched: Watched, revenue: str, connection) -> None:  # type: ignore[no-untyped-def]
    """The upstream table is recorded as a ``table`` source: its storage table's snapshot. Judged on its recorded
    sources alone the downstream table is fresh while only its upstream is behind; the draft's recursive check
    (Appendix B) calls it stale then, and so does mt_magic's status (its rows come from behind rows: the badge
    names the upstream table, the staleness is measured from its oldest unreflected change)."""
    from mt_testing import run

    run(mt, "CREATE MATERIALIZED TABLE top FRESHNESS = INTERVAL '1' DAY AS SELECT max(total) AS top FROM revenue")
    state = reader.refresh_state([revenue], "top")
    assert state is not None and [(s["type"], s["name"]) for s in state["source-states"]] == [("table", "revenue")]
    assert reader.judge([revenue], "top__mv") is Verdict.FRESH
    assert reader.judge([revenue], "top__mv", recursive=True) is Verdict.FRESH
    assert (mt_says(watched, "revenue"), mt_says(watched, "top")) == ("up to date", "up to date")

    connection.spark.sql("INSERT INTO orders VALUES (3, 'ann', 100.0)")
    assert reader.judge([revenue], "revenue__mv") is Verdict.STALE
    assert reader.judge([revenue], "top__mv") is Verdict.FRESH
    assert reader.judge([revenue], "top__mv", recursive=True) is Verdict.STALE
    assert (mt_says(watched, "revenue"), mt_says(watched, "top")) == ("behind", "behind")
    from mt_magic.widgets.badges import freshness_badge

    namespace = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}"
    top, upstream = watched.service.status(f"{namespace}.top"), watched.service.status(f"{namespace}.revenue")
    assert top.behind_upstream == f"{namespace}.revenue" and top.staleness == upstream.staleness
    assert "(upstream revenue)" in freshness_badge(top).label

    run(mt, "ALTER MATERIALIZED TABLE revenue REFRESH")
    assert reader.judge([revenue], "revenue__mv") is Verdict.FRESH
    assert reader.judge([revenue], "top__mv") is Verdict.STALE
    assert (mt_says(watched, "revenue"), mt_says(watched, "top")) == ("up to date", "behind")

    run(mt, "ALTER MATERIALIZED TABLE top REFRESH")
    assert reader.judge([revenue], "top__mv", recursive=True) is Verdict.FRESH
    assert mt_says(watched, "top") == "up to date"


def test_a_source_without_a_snapshot(mt, reader: DraftReader, watched: Watched, connection) -> None:  # type: ignore[no-untyped-def]
    """A source that had no snapshot when the refresh read it: ``snapshot-id`` -1 (the draft's field is a required
    long; -1 is the table spec's "no current snapshot"), fresh until the source's first commit."""
    from mt_testing import run

    namespace = str(mt.workspace.default_namespace)
    connection.spark.sql("CREATE TABLE returns (id BIGINT, amount DOUBLE) USING iceberg")
    run(mt, "CREATE MATERIALIZED TABLE refunds FRESHNESS = INTERVAL '1' DAY AS SELECT sum(amount) AS s FROM returns")
    state = reader.refresh_state([namespace], "refunds")
    assert state is not None and [s["snapshot-id"] for s in state["source-states"]] == [NO_SNAPSHOT]
    assert reader.judge([namespace], "refunds__mv") is Verdict.FRESH
    assert mt_says(watched, "refunds") == "up to date"

    connection.spark.sql("INSERT INTO returns VALUES (1, 2.0)")
    assert reader.judge([namespace], "refunds__mv") is Verdict.STALE
    assert mt_says(watched, "refunds") == "behind"


# --- the writer's record without Spark: the draft's shape, and the older shape still read ---------------------


@pytest.mark.parametrize("snapshot_id", [42, None])
def test_the_record_round_trips_in_the_drafts_shape(snapshot_id: int | None) -> None:
    from dataclasses import replace
    from datetime import datetime, timezone

    from mt_magic.catalog.definitions import RefreshState, SourceState
    from mt_magic.vocabulary import RefreshKind, RefreshTrigger

    at = datetime(2026, 11, 28, tzinfo=timezone.utc)
    source = SourceState(("sales",), "orders", "5f0c-uuid", snapshot_id, "mtit")
    state = RefreshState((source,), at, RefreshKind.FULL, RefreshTrigger.MANUAL, at, view_version_id=3)
    summary = state.to_summary()
    record = json.loads(summary["refresh-state"])
    assert record == {
        "view-version-id": 3,
        "source-states": [
            {
                "type": "table",
                "namespace": ["sales"],
                "name": "orders",
                "uuid": "5f0c-uuid",
                "snapshot-id": NO_SNAPSHOT if snapshot_id is None else snapshot_id,
            }
        ],
        "refresh-start-timestamp-ms": int(at.timestamp() * 1000),
    }
    for entry in record["source-states"]:
        _check_entry("t", entry)
    assert RefreshState.from_summary(summary) == state

    without_view = replace(state, view_version_id=None)
    written = without_view.to_summary()
    assert "refresh-state" not in written  # the draft requires view-version-id: mt_magic's own key instead
    assert RefreshState.from_summary(written) == without_view


def test_the_older_shape_is_still_read() -> None:
    from mt_magic.catalog.definitions import RefreshState

    older = {
        "refresh-state": json.dumps(
            {
                "source-states": [
                    {
                        "type": "table",
                        "catalog": "mtit",
                        "namespace": ["s"],
                        "name": "a",
                        "uuid": "u",
                        "snapshot-id": 7,
                    },
                    {
                        "type": "table",
                        "catalog": "mtit",
                        "namespace": ["s"],
                        "name": "b",
                        "uuid": "v",
                        "snapshot-id": None,
                    },
                ],
                "refresh-start-timestamp-ms": 1000,
            }
        ),
        "mt.refresh-kind": "full",
    }
    state = RefreshState.from_summary(older)
    assert state is not None and state.view_version_id is None
    assert [(s.qualified_name, s.snapshot_id) for s in state.source_states] == [("mtit.s.a", 7), ("mtit.s.b", None)]

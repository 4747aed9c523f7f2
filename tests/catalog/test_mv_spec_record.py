"""The materialized-view spec's records as mt_magic writes and reads them, without Spark (apache/iceberg PR #11041
as voted): the ``refresh-state`` record with an upstream materialized table as a ``table`` and a ``view`` entry,
the older record still read, the view version a refresh records, and when the voted text calls a storage table
invalid."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from mt_magic.catalog.definitions import NO_SNAPSHOT, RefreshState, SourceState, ViewState
from mt_magic.catalog.views import ForeignVersion, ViewInfo, ViewVersionInfo, foreign_version, invalid_since
from mt_magic.runtime.refresh.run import refused
from mt_magic.vocabulary import RefreshKind, RefreshTrigger

AT = datetime(2026, 11, 28, tzinfo=timezone.utc)


def state(view_version_id: int | None = 3, snapshot_id: int | None = 42) -> RefreshState:
    sources = (SourceState(("sales",), "revenue", "5f0c-uuid", snapshot_id, "mtit"),)
    views = (ViewState(("sales",), "revenue__mv", "9a1d-uuid", 2, "mtit"),)
    return RefreshState(
        sources, AT, RefreshKind.FULL, RefreshTrigger.MANUAL, AT, view_version_id=view_version_id, view_states=views
    )


@pytest.mark.parametrize("snapshot_id", [42, None])
def test_the_record_is_the_specs_with_an_upstream_view_entry(snapshot_id: int | None) -> None:
    written = state(snapshot_id=snapshot_id)
    summary = written.to_summary()
    assert json.loads(summary["refresh-state"]) == {
        "view-version-id": 3,
        "source-states": [
            {
                "type": "table",
                "namespace": ["sales"],
                "name": "revenue",
                "uuid": "5f0c-uuid",
                "snapshot-id": NO_SNAPSHOT if snapshot_id is None else snapshot_id,
            },
            {"type": "view", "namespace": ["sales"], "name": "revenue__mv", "uuid": "9a1d-uuid", "version-id": 2},
        ],
        "refresh-start-timestamp-ms": int(AT.timestamp() * 1000),
    }
    assert RefreshState.from_summary(summary) == written

    without_view = replace(written, view_version_id=None, view_states=())
    assert "refresh-state" not in without_view.to_summary()  # the spec requires view-version-id: mt_magic's key
    assert RefreshState.from_summary(without_view.to_summary()) == without_view


def test_the_older_record_is_still_read() -> None:
    entry = {"type": "table", "catalog": "mtit", "namespace": ["s"]}
    older = {
        "refresh-state": json.dumps(
            {
                "source-states": [
                    {
                        **entry,
                        "name": "a",
                        "uuid": "u",
                        "snapshot-id": 7,
                    },
                    {
                        **entry,
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
    read = RefreshState.from_summary(older)
    assert read is not None and read.view_version_id is None and read.view_states == ()
    assert [(s.qualified_name, s.snapshot_id) for s in read.source_states] == [("mtit.s.a", 7), ("mtit.s.b", None)]
    assert invalid_since(read, older, AT, None) == AT  # the voted text requires view-version-id: invalid


def version(version_id: int, sql: str, definition_version: int | None, at: datetime = AT) -> ViewVersionInfo:
    return ViewVersionInfo(
        version_id,
        sql,
        ("sales", "revenue"),
        definition_version,
        0,
        ("sales",),
        timestamp_ms=int(at.timestamp() * 1000),
    )


def view(*versions: ViewVersionInfo, log: tuple[tuple[int, int], ...] = ()) -> ViewInfo:
    return ViewInfo("mtit.sales.revenue__mv", "9a1d", versions[-1].version_id, versions, {}, version_log=log)


def test_a_refresh_records_the_current_version_when_it_holds_the_definition_that_ran() -> None:
    ours = version(1, "SELECT a FROM t", 1)
    assert view(ours).version_for(1) == 1
    assert view(ours, version(2, "SELECT a FROM t", None)).version_for(1) == 2  # another engine's, same query
    assert view(ours, version(2, "SELECT b FROM t", None)).version_for(1) == 1  # another query: not current
    assert view(ours, version(2, "SELECT b FROM t", 2)).version_for(1) == 1  # an ALTER … AS since: not current


def test_a_storage_table_is_invalid_from_when_the_view_moved_past_its_recorded_version() -> None:
    later = AT + timedelta(hours=2)
    summary = state().to_summary()
    ours, theirs = version(3, "SELECT a FROM t", 1), version(4, "SELECT a FROM t", None, at=later)
    assert invalid_since(state(), summary, AT, view(ours)) is None
    assert invalid_since(state(), summary, AT, None) is None  # no view to check against
    assert invalid_since(state(), summary, AT, view(ours, theirs)) == later
    logged = int((later + timedelta(minutes=5)).timestamp() * 1000)  # made current after it was written
    assert invalid_since(state(), summary, AT, view(ours, theirs, log=((3, 0), (4, logged)))) == later + timedelta(
        minutes=5
    )
    early = version(4, "SELECT a FROM t", None, at=AT - timedelta(days=1))  # current before the refresh ran
    assert invalid_since(state(), summary, AT, view(ours, early)) == AT


def test_a_refresh_is_refused_only_when_it_could_not_record_the_views_current_version() -> None:
    ours, table = version(1, "SELECT a FROM t", 1), "mtit.sales.revenue"
    assert foreign_version(table, None, 1) is None  # no view to check against
    assert foreign_version(table, view(ours, version(2, "SELECT a FROM t", None)), 1) is None  # another's, adopted
    assert foreign_version(table, view(ours, version(2, "SELECT b FROM t", 2)), 2) is None  # ALTER … AS: recorded
    theirs = replace(version(2, "SELECT b FROM t", None), engine="trino")
    foreign = foreign_version(table, view(ours, theirs), 1)
    assert foreign == ForeignVersion(table, "mtit.sales.revenue__mv", 2, "trino")  # the catalog's fact
    refusal = refused(foreign)  # the runtime's error
    with pytest.raises(
        type(refusal), match=r"^mtit\.sales\.revenue: its view mtit\.sales\.revenue__mv is at version 2, "
    ):
        raise refusal
    assert "written by trino" in str(refusal) and "Nothing was refreshed" in str(refusal)
    assert str(refusal).endswith(
        "Fix: CREATE OR ALTER MATERIALIZED TABLE mtit.sales.revenue … AS SELECT … to make mt_magic's definition the "
        "view's current version again, or DROP MATERIALIZED TABLE mtit.sales.revenue."
    )
    unnamed = foreign_version(table, view(ours, version(2, "SELECT b FROM t", None)), 1)
    assert unnamed is not None and "written by an engine that names none" in str(refused(unnamed))

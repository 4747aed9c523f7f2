"""The service's named entry points (the widgets', the Python API's, the runner's) run the statement they stand for
through its handler (issue 37): one mapping of statement to check and apply, HANDLERS, so adding a statement is one
handler plus its grammar. Spark-free: each handler's check is replaced by one that refuses, and every entry point
must be refused by it, its statement's type in hand."""

from __future__ import annotations

import pytest

from mt_magic.runtime.service import MaterializedTables
from mt_magic.runtime.statements.registry import HANDLERS
from mt_magic.sql import parse_cell
from mt_magic.sql.ddl import statements as s
from mt_magic.vocabulary import RefreshMode, RefreshTrigger


class Checked(Exception):
    """Raised by a handler's check: the entry point chose that handler."""


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[type, str]]:
    """Every handler's check refuses: ``check_current`` (a statement on its own, whose check hands what it read to
    its apply; a refresh with the runner's trigger)."""
    seen: list[tuple[type, str]] = []
    for kind, handler in HANDLERS.items():

        def refuse(rt, stmt, cascade, kind=kind):  # type: ignore[no-untyped-def]
            seen.append((kind, str(stmt.name)))
            raise Checked(kind.__name__)

        monkeypatch.setattr(handler, "check_current", refuse)
    return seen


def test_each_entry_point_is_checked_by_its_statement_s_handler(checked: list[tuple[type, str]]) -> None:
    service = object.__new__(MaterializedTables)  # nothing of it is reached before the check refuses
    [create] = parse_cell("CREATE MATERIALIZED TABLE mt.ns.t AS SELECT 1 AS one")
    [freshness] = parse_cell("ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '1' HOUR")
    calls = {
        s.CreateMaterializedTable: lambda: service.create(create),  # type: ignore[arg-type]
        s.AlterQuery: lambda: service.alter_query("mt.ns.t", "SELECT 2 AS two"),
        s.AlterFreshness: lambda: service.set_freshness("mt.ns.t", freshness.freshness),  # type: ignore[union-attr]
        s.AlterRefreshMode: lambda: service.set_refresh_mode("mt.ns.t", RefreshMode.FULL),
        s.AlterScheduler: lambda: service.set_scheduler("mt.ns.t", "airflow"),
        s.AlterRename: lambda: service.rename("mt.ns.t", "mt.ns.u"),
        s.AlterSuspend: lambda: service.suspend("mt.ns.t"),
        s.AlterResume: lambda: service.resume("mt.ns.t"),
        s.AlterRefresh: lambda: service.refresh("mt.ns.t"),
        s.DropMaterializedTable: lambda: service.drop("mt.ns.t", False, False),
    }
    for kind, call in calls.items():
        with pytest.raises(Checked, match=kind.__name__):
            call()
        assert checked[-1] == (kind, "mt.ns.t")
    with pytest.raises(Checked, match="AlterRefresh"):  # the runner's and a stale read's trigger too
        service.refresh("mt.ns.t", trigger=RefreshTrigger.SCHEDULED)

"""One handler per statement (issue 37): every statement type of the grammar has one, and a cell's checks, undo
order and undo messages come from the handlers (Spark-free: a stand-in service, the handlers' undo paths recorded)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mt_magic.errors import CellNotAppliedError, MtMagicError, NoSuchMaterializedTableError, WorkflowSchedulerError
from mt_magic.loopback import free_port
from mt_magic.runtime.cell import execute_cell
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements.base import Handler
from mt_magic.runtime.statements.registry import HANDLERS, handler_for
from mt_magic.runtime.workflows import Workflows
from mt_magic.scheduling.airflow_api import AirflowSettings
from mt_magic.sql import parse_cell
from mt_magic.sql.ddl.statements import STATEMENT_STARTS, STATEMENT_TYPES, Statement
from mt_magic.sql.names import TableName
from mt_magic.vocabulary import RefreshMode, StatementAction, WorkflowSchedulerKind


def test_every_statement_type_of_the_grammar_has_one_handler() -> None:
    assert set(HANDLERS) == set(STATEMENT_TYPES), "a statement type without a handler, or a handler without a type"
    assert all(isinstance(handler, Handler) for handler in HANDLERS.values())
    assert len({id(handler) for handler in HANDLERS.values()}) == len(HANDLERS)
    with pytest.raises(TypeError, match="unknown statement"):
        handler_for(Statement("x", None))  # type: ignore[arg-type]


def test_each_statement_type_says_how_it_begins() -> None:
    """Completion's statement keywords and ``%mt explain``'s statement words are read from here."""
    assert all(kind.starts for kind in STATEMENT_TYPES)
    for start in STATEMENT_STARTS:  # each one begins a statement the grammar parses
        text = start + " t" + (" SUSPEND" if start.startswith("ALTER") else "")
        if start.startswith("CREATE"):
            text += " AS SELECT 1"
        if start.endswith("TABLES"):
            text = start
        assert parse_cell(text)


def test_the_verb_of_a_missing_table_comes_from_its_handler() -> None:
    verbs = {kind.__name__: HANDLERS[kind].verb for kind in STATEMENT_TYPES}
    assert verbs["DropMaterializedTable"] == "DROP"
    assert verbs["CreateMaterializedTable"] == "CREATE OR ALTER"
    assert verbs["ShowCreateMaterializedTable"] == "SHOW CREATE"
    assert verbs["DescribeMaterializedTable"] == "DESCRIBE"
    assert verbs["ShowMaterializedTables"] is None
    assert {v for k, v in verbs.items() if k.startswith("Alter")} == {"ALTER"}


class _Catalog:
    """Every table but ``missing`` exists; those named ``air…`` are scheduled by Airflow."""

    def __init__(self, missing: set[str]) -> None:
        self.missing = missing

    def exists(self, name: str) -> bool:
        return name not in self.missing

    def load_materialized(self, name: str) -> tuple[object, object]:
        if name in self.missing:
            raise NoSuchMaterializedTableError(f"{name} does not exist")
        definition = SimpleNamespace(
            freshness="INTERVAL '1' MINUTE",
            declared_refresh_mode=None,
            refresh_mode=RefreshMode.CONTINUOUS,
            options={"scheduler": "airflow"} if name.split(".")[-1].startswith("air") else {},
            upstream=(),
        )
        return SimpleNamespace(name=name), definition

    def list_materialized(self, namespace: str | None = None, **reuse: object) -> list[object]:
        """DROP's listing: the tables these cells drop, none read by another."""
        names = [f"mt.ns.{table}" for table in ("c", "air_c")]
        return [SimpleNamespace(name=n, definition=self.load_materialized(n)[1]) for n in names if self.exists(n)]


class _Workspace:
    def __init__(self, missing: set[str]) -> None:
        self.catalog = _Catalog(missing)

    def qualify(self, name: TableName, namespace: str | None = None) -> str:
        return f"mt.{name.namespace or namespace or 'ns'}.{name.name}"


class _Service:
    """What a cell needs of the service: its workspace, its workflow schedulers (the real ones: Airflow, when
    configured, is asked over HTTP) and ``execute`` (here: statement ``fail_at`` fails)."""

    def __init__(self, fail_at: int, missing: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.workspace = _Workspace(set(missing))
        self.workflows = Workflows()
        self.fail_at = fail_at
        self.applied: list[str] = []

    def execute(
        self, stmt: Statement, cascade: bool = False, *, checked: bool = False, plan: object = None
    ) -> StatementResult:
        if len(self.applied) + 1 == self.fail_at:
            raise MtMagicError("the apply failed")
        self.applied.append(type(stmt).__name__)
        return StatementResult(StatementAction.ALTERED, (), "ok")


@pytest.fixture
def undone(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The handlers' undo paths, recorded instead of run."""
    from mt_magic.runtime.statements import alter, rename

    calls: list[tuple[str, ...]] = []

    def record(what: str):  # type: ignore[no-untyped-def]
        return lambda rt, *args: calls.append((what, *map(str, args)))

    monkeypatch.setattr(alter, "resume", record("resume"))
    monkeypatch.setattr(alter, "suspend", record("suspend"))
    monkeypatch.setattr(alter, "set_freshness", record("set_freshness"))
    monkeypatch.setattr(alter, "set_refresh_mode", record("set_refresh_mode"))
    monkeypatch.setattr(rename, "rename", record("rename"))
    return calls


def test_a_failed_apply_undoes_through_the_handlers_in_reverse_order(undone: list[tuple[str, ...]]) -> None:
    cell = (
        "ALTER MATERIALIZED TABLE a SUSPEND;"
        "ALTER MATERIALIZED TABLE b SET FRESHNESS = INTERVAL '5' MINUTE;"
        "DROP MATERIALIZED TABLE c;"
        "ALTER MATERIALIZED TABLE d REFRESH;"
        "SHOW MATERIALIZED TABLES;"
        "ALTER MATERIALIZED TABLE e RENAME TO f;"
        "ALTER MATERIALIZED TABLE g AS SELECT 1;"
        "ALTER MATERIALIZED TABLE h SET REFRESH_MODE = FULL;"
        "ALTER MATERIALIZED TABLE i RESUME;"
        "ALTER MATERIALIZED TABLE a RESUME"
    )
    service = _Service(fail_at=10)
    with pytest.raises(CellNotAppliedError) as failed:
        execute_cell(service, parse_cell(cell))  # type: ignore[arg-type]
    assert str(failed.value) == (
        "Statement 10 of the cell failed: the apply failed\n"
        "Undone, so the cell changed nothing: resumed mt.ns.i; set the refresh mode of mt.ns.h; renamed mt.ns.e to "
        "mt.ns.f; refreshed mt.ns.d; set the freshness of mt.ns.b; suspended mt.ns.a.\n"
        "Kept, as they cannot be undone: changed mt.ns.g; dropped mt.ns.c."
    )
    assert undone == [
        ("suspend", "mt.ns.i"),
        ("set_refresh_mode", "mt.ns.h", "RefreshMode.CONTINUOUS"),
        ("rename", "mt.ns.f", "mt.ns.e"),
        ("set_freshness", "mt.ns.b", "INTERVAL '1' MINUTE"),
        ("resume", "mt.ns.a", "()"),
    ]


def test_a_cell_is_checked_by_the_handlers_before_anything_is_applied(undone: list[tuple[str, ...]]) -> None:
    """RENAME leaves the old name missing for the statements after it; DROP IF EXISTS needs no table."""
    service = _Service(fail_at=0, missing={"mt.ns.gone"})
    with pytest.raises(NoSuchMaterializedTableError, match="Statement 3 of the cell: mt.ns.e does not exist"):
        execute_cell(
            service,  # type: ignore[arg-type]
            parse_cell(
                "DROP MATERIALIZED TABLE IF EXISTS gone;"
                "ALTER MATERIALIZED TABLE e RENAME TO f;"
                "ALTER MATERIALIZED TABLE e SUSPEND"
            ),
        )
    assert service.applied == [] and undone == []
    execute_cell(
        service,  # type: ignore[arg-type]
        parse_cell("ALTER MATERIALIZED TABLE e RENAME TO f; ALTER MATERIALIZED TABLE f SUSPEND"),
    )
    assert service.applied == ["AlterRename", "AlterSuspend"]


def test_a_cell_is_checked_against_airflow_before_anything_is_applied(
    undone: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Airflow unreachable (a closed port): a cell whose second statement changes a table on Airflow applies
    nothing, and the error names that statement and says nothing was changed. The first statement alone applies
    (the kernel's tables need no Airflow)."""
    monkeypatch.delenv("MT_MAGIC_AIRFLOW_URL", raising=False)
    service = _Service(fail_at=0)
    closed = AirflowSettings(url=f"http://127.0.0.1:{free_port()}", token="t", timeout=5)
    service.workflows.configure(WorkflowSchedulerKind.KERNEL, closed)
    cell = "ALTER MATERIALIZED TABLE a SUSPEND; ALTER MATERIALIZED TABLE air SET FRESHNESS = INTERVAL '5' MINUTE"
    with pytest.raises(
        WorkflowSchedulerError, match=r"^Statement 2 of the cell: .*cannot be reached.*nothing was changed"
    ):
        execute_cell(service, parse_cell(cell))  # type: ignore[arg-type]
    assert service.applied == [] and undone == []
    execute_cell(service, parse_cell("ALTER MATERIALIZED TABLE a SUSPEND; ALTER MATERIALIZED TABLE b RESUME"))  # type: ignore[arg-type]
    assert service.applied == ["AlterSuspend", "AlterResume"]

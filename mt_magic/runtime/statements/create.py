"""``CREATE [OR ALTER] MATERIALIZED TABLE``: a new table and its first refresh; over an existing materialized table
a new query (CREATE OR ALTER); over a plain Iceberg table a conversion in place (:mod:`.convert`).

A new table is one catalog commit (two with a primary key: CREATE TABLE, then identifier fields), undone by dropping
it; its Iceberg view is registered after it and the table dropped when that fails (:mod:`.iceberg_view`). Its query
is parsed and its sources qualified once (:func:`~.definition.create_sources`), for its grants, its cell's check and
its definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.errors import MaterializedTableExistsError
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter_commit, convert, iceberg_view
from mt_magic.runtime.statements import schema as schema_rules
from mt_magic.runtime.statements.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.statements.definition import BuiltDefinition, Sources, build_definition, create_sources
from mt_magic.runtime.statements.drop import drop, drop_tables
from mt_magic.sql.ddl.statements import CreateMaterializedTable
from mt_magic.vocabulary import StatementAction

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace


@dataclass(frozen=True)
class CreatePlan:
    """What CREATE's check read that its apply uses: the query with its sources qualified (``None``: a query that
    cannot be read, refused when the definition is built) and, in a cell, the definition analysed by Spark
    (:func:`build_definition`; ``None``: the apply builds it), so a CREATE's query is analysed once."""

    sources: Sources | None = None
    built: BuiltDefinition | None = None


class Create(Handler[CreateMaterializedTable, CreatePlan]):
    verb = "CREATE OR ALTER"

    def apply(
        self, rt: Runtime, stmt: CreateMaterializedTable, cascade: bool, plan: CreatePlan | None = None
    ) -> StatementResult:
        return create_table(rt, stmt, plan)

    def check(
        self, rt: Runtime, stmt: CreateMaterializedTable, names: CellNames, where: str, cascade: bool = False
    ) -> CreatePlan | None:
        """The name is free (or OR ALTER), a CREATE whose sources all exist already is validated in full, and its
        scheduler can take it (:func:`check_schedulers`). Returns its sources and, when the apply can write it as
        it is, the definition so validated."""
        ws = rt.workspace
        name = ws.qualify(stmt.name)
        exists = names.present(name)
        if exists and not stmt.or_alter:
            raise MaterializedTableExistsError(
                f"{where} (CREATE MATERIALIZED TABLE {stmt.name}): {name} already exists (nothing of the "
                "cell was applied). Fix: use CREATE OR ALTER MATERIALIZED TABLE to change its query, or DROP it "
                "first."
            )
        plan = None
        if not exists:
            sources = create_sources(ws, stmt)
            check_grants(rt, stmt, sources)
            built = None
            if sources is None or not any(source.lower() in names.created for source in sources[1]):
                # as the apply would write it
                built = build_definition(ws, rt.workflows.for_create(stmt, name)[0], sources=sources)
                # Its schema and start were read from its sources before the cell: a source an earlier statement of
                # the cell changes (ALTER … AS, CREATE OR ALTER, RENAME, DROP, REFRESH) may give another, so the
                # apply builds it again then.
                if names.changed_any(built[0].upstream, cascade):
                    built = None
            plan = CreatePlan(sources, built)
        if not (exists and names.made_here(name)):
            check_schedulers(rt, stmt, exists)
        if not exists:
            names.created.add(name.lower())
        names.exists[name] = True
        return plan

    def check_current(self, rt: Runtime, stmt: CreateMaterializedTable, cascade: bool) -> CreatePlan | None:
        """CREATE's checks before anything changes, on its own (its grants, :func:`check_schedulers`, the table's
        existence read from the catalog for CREATE OR ALTER). Returns the sources it qualified, for the build."""
        exists = stmt.or_alter and rt.workspace.catalog.exists(rt.workspace.qualify(stmt.name))
        plan = None
        if not exists:
            plan = CreatePlan(create_sources(rt.workspace, stmt))
            check_grants(rt, stmt, plan.sources)
        check_schedulers(rt, stmt, exists)
        return plan

    def undo(self, rt: Runtime, stmt: CreateMaterializedTable) -> tuple[str, Undo | None]:
        name = rt.workspace.qualify(stmt.name)
        if stmt.or_alter and rt.workspace.catalog.exists(name):
            return f"replaced the query of {name}", None
        return f"created {name}", lambda: drop(rt, name, True, False)


def check_grants(rt: Runtime, stmt: CreateMaterializedTable, sources: Sources | None) -> None:
    """A new table's grants, before anything is written (:func:`mt_magic.catalog.access.check_create`), on the
    sources its check qualified (``None``: a query that cannot be read is refused when the definition is built, at
    its place in the cell)."""
    from mt_magic.catalog.access import check_create

    if sources is None:
        return
    ws = rt.workspace
    check_create(ws.catalog, f"CREATE MATERIALIZED TABLE {stmt.name}", ws.qualify(stmt.name), sources[1])


def check_schedulers(rt: Runtime, stmt: CreateMaterializedTable, exists: bool) -> None:
    """CREATE's checks against the schedulers before anything changes: a new table's scheduler (named, or the
    default) is reachable; CREATE OR ALTER of an existing materialized table checks its scheduler and, when its WITH
    names another, the move; a plain table converted in place asks no scheduler."""
    ws = rt.workspace
    name = ws.qualify(stmt.name)
    if not exists:
        rt.workflows.check_create(stmt, name)
        return
    definition = ws.catalog.load(name).definition
    if definition is None:
        return
    rt.workflows.check(ws, name, exists=False)
    rt.workflows.check_move(name, definition.options, stmt.options_dict)


def create_table(rt: Runtime, stmt: CreateMaterializedTable, plan: CreatePlan | None = None) -> StatementResult:
    """CREATE (or CREATE OR ALTER), checked before (:func:`check_schedulers`); inline, a failed first refresh
    drops the table again. ``plan``: what the check read of the new table (not used when the table exists: CREATE
    OR ALTER changes it, or converts it, from what it holds)."""
    ws = rt.workspace
    name = ws.qualify(stmt.name)
    if stmt.or_alter and ws.catalog.exists(name):
        existing = ws.catalog.load(name)
        if existing.definition is None:  # a plain Iceberg table: converted only when the option asks
            convert.convert_table(ws, stmt, existing)
            return _populate(rt, name, f"Converted {name} in place (its rows and history stay)")
        with (
            rt.workflows.changing(ws, name, rt.workflows.scheduler(ws, name)),
            rt.workflows.moving(rt.kernel, name, existing.definition.options, stmt.options_dict) as moved,
        ):
            altered = alter_commit.created_over(ws, name, stmt, options=moved)
            alter_commit.alter_query(ws, altered)
        rt.retrack(name)
        return StatementResult(
            StatementAction.ALTERED, (name,), f"{name} exists: its query was replaced (CREATE OR ALTER)."
        )
    stmt, elsewhere = rt.workflows.for_create(stmt, name)
    name, definition = write_table(ws, stmt, plan or CreatePlan())
    if elsewhere is not None:
        rt.manager.upsert(rt.managed(name))  # shown on cards and in %mt; refreshed by its scheduler
        return rt.workflows.created(elsewhere, name, definition, ws)
    try:
        future = rt.manager.add(rt.managed(name), initial=True)
    except BaseException:
        drop_tables(ws, [name])
        raise
    assert future is not None
    rt.drive()
    # Inline: all-or-nothing for catalog and manager; subscribers see the table appear, fail and go. With the
    # thread, CREATE returned before the first refresh ended: a failure stays on the card, the table stays.
    if not rt.background and future.exception() is not None:
        rt.manager.remove(name)
        rt.drive()  # delivers the removal to subscribers now, not with the next statement
        drop_tables(ws, [name])
        raise future.exception()  # type: ignore[misc]
    mode = definition.refresh_mode.value
    return StatementResult(
        StatementAction.CREATED,
        (name,),
        f"Created {name} ({mode}, {definition.freshness}); populating it as its first refresh.",
        future,
    )


def _populate(rt: Runtime, name: str, what: str) -> StatementResult:
    """A converted table joins the manager and its first refresh starts, as after CREATE; a failure of that
    refresh stays on the card (the conversion is not undone: the table's rows and history are the user's)."""
    _, definition = rt.workspace.catalog.load_materialized(name)
    future = rt.manager.add(rt.managed(name), initial=True)
    assert future is not None
    rt.drive()
    mode = f"{definition.refresh_mode.value}, {definition.freshness}"
    return StatementResult(StatementAction.CREATED, (name,), f"{what} ({mode}); its first refresh runs now.", future)


def write_table(
    ws: Workspace, stmt: CreateMaterializedTable, plan: CreatePlan
) -> tuple[str, MaterializedTableDefinition]:
    """Create the (empty) Iceberg table with its definition and its view; the first refresh populates it. ``plan``:
    the query as the check qualified it, and the definition when the check built it already.

    Raises:
        MaterializedTableExistsError: the name is taken (use CREATE OR ALTER to change its query).
        DefinitionError: the statement cannot be applied; nothing was created.
    """
    name = ws.qualify(stmt.name)
    if ws.catalog.exists(name):
        raise MaterializedTableExistsError(
            f"CREATE MATERIALIZED TABLE {stmt.name}: {name} already exists",
            fix="use CREATE OR ALTER MATERIALIZED TABLE to change its query, or DROP MATERIALIZED TABLE first",
        )
    iceberg_view.check_free(ws, f"CREATE MATERIALIZED TABLE {stmt.name}", name)
    definition, schema = plan.built or build_definition(ws, stmt, sources=plan.sources)
    schema_rules.create_iceberg_table(ws.spark, name, schema, definition, stmt.comment)
    iceberg_view.register(ws, name, definition)
    return name, definition

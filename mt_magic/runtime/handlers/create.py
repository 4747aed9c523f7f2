"""``CREATE [OR ALTER] MATERIALIZED TABLE``: a new table and its first refresh; over an existing materialized table
a new query (CREATE OR ALTER); over a plain Iceberg table a conversion in place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.errors import DefinitionError, MaterializedTableExistsError, MtMagicError
from mt_magic.runtime.handlers.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.handlers.drop import drop
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter, convert, create
from mt_magic.runtime.statements import drop as drop_statement
from mt_magic.runtime.statements.definition import BuiltDefinition, build_definition
from mt_magic.sql.ddl.statements import CreateMaterializedTable
from mt_magic.vocabulary import StatementAction

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace


class Create(Handler[CreateMaterializedTable, BuiltDefinition]):
    """Its plan is the new table's definition, analysed by Spark (:func:`build_definition`), which the apply
    writes: a CREATE's query is analysed once, in a cell too."""

    verb = "CREATE OR ALTER"

    def apply(
        self, rt: Runtime, stmt: CreateMaterializedTable, cascade: bool, plan: BuiltDefinition | None = None
    ) -> StatementResult:
        return create_table(rt, stmt, plan)

    def check(
        self, rt: Runtime, stmt: CreateMaterializedTable, names: CellNames, where: str, cascade: bool = False
    ) -> BuiltDefinition | None:
        """The name is free (or OR ALTER), a CREATE whose sources all exist already is validated in full, and its
        scheduler can take it (:func:`check_schedulers`). Returns the definition so validated when the apply can
        write it as it is."""
        ws = rt.workspace
        name = ws.qualify(stmt.name)
        exists = names.present(name)
        if exists and not stmt.or_alter:
            raise MaterializedTableExistsError(
                f"{where} (CREATE MATERIALIZED TABLE {stmt.name}): {name} already exists (nothing of the "
                "cell was applied). Fix: use CREATE OR ALTER MATERIALIZED TABLE to change its query, or DROP it "
                "first."
            )
        built = None
        if not exists:
            check_grants(rt, stmt)
        if not exists and not _reads_any(ws, stmt, names.created):
            built = build_definition(ws, rt.workflows.for_create(stmt, name)[0])  # as the apply would write it
            # Its schema and start were read from its sources before the cell: a source an earlier statement of
            # the cell changes (ALTER … AS, CREATE OR ALTER, RENAME, DROP, REFRESH) may give another, so the
            # apply builds it again then.
            if names.changed_any(built[0].upstream, cascade):
                built = None
        if not (exists and names.made_here(name)):
            check_schedulers(rt, stmt, exists)
        if not exists:
            names.created.add(name.lower())
        names.exists[name] = True
        return built

    def check_current(self, rt: Runtime, stmt: CreateMaterializedTable, cascade: bool) -> None:
        check_create(rt, stmt)

    def undo(self, rt: Runtime, stmt: CreateMaterializedTable) -> tuple[str, Undo | None]:
        name = rt.workspace.qualify(stmt.name)
        if stmt.or_alter and rt.workspace.catalog.exists(name):
            return f"replaced the query of {name}", None
        return f"created {name}", lambda: drop(rt, name, True, False)


def check_create(rt: Runtime, stmt: CreateMaterializedTable) -> None:
    """CREATE's checks before anything changes, on its own (:func:`check_schedulers`, the table's existence read
    from the catalog for CREATE OR ALTER)."""
    exists = stmt.or_alter and rt.workspace.catalog.exists(rt.workspace.qualify(stmt.name))
    if not exists:
        check_grants(rt, stmt)
    check_schedulers(rt, stmt, exists)


def check_grants(rt: Runtime, stmt: CreateMaterializedTable) -> None:
    """A new table's grants, before anything is written (:func:`mt_magic.catalog.access.check_create`)."""
    from mt_magic.catalog.access import check_create
    from mt_magic.runtime.statements.definition import qualified_sources

    ws, statement = rt.workspace, f"CREATE MATERIALIZED TABLE {stmt.name}"
    try:
        _, sources = qualified_sources(ws, statement, stmt.query)
    except DefinitionError:
        return  # a query that cannot be read is refused when the definition is built, at its place in the cell
    check_create(ws.catalog, statement, ws.qualify(stmt.name), sources)


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


def create_table(rt: Runtime, stmt: CreateMaterializedTable, built: BuiltDefinition | None = None) -> StatementResult:
    """CREATE (or CREATE OR ALTER), checked before (:func:`check_schedulers`); inline, a failed first refresh
    drops the table again. ``built``: the new table's definition as its cell's check built it (else built here;
    not used when the table exists: CREATE OR ALTER changes it, or converts it, from what it holds)."""
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
            altered = alter.altered_query(
                ws,
                name,
                stmt.query,
                stmt.columns,
                stmt.start_mode,
                stmt.options_dict,
                query_position=stmt.query_position,
                options=moved,
                expectations=stmt.expectations,
            )
            alter.alter_query(ws, altered)
        rt.retrack(name)
        return StatementResult(
            StatementAction.ALTERED, (name,), f"{name} exists: its query was replaced (CREATE OR ALTER)."
        )
    stmt, elsewhere = rt.workflows.for_create(stmt, name)
    name, definition = create.create_table(ws, stmt, built)
    if elsewhere is not None:
        rt.manager.upsert(rt.managed(name))  # shown on cards and in %mt; refreshed by its scheduler
        return rt.workflows.created(elsewhere, name, definition, ws)
    try:
        future = rt.manager.add(rt.managed(name), initial=True)
    except BaseException:
        drop_statement.drop_tables(ws, [name])
        raise
    assert future is not None
    rt.drive()
    # Inline: all-or-nothing for catalog and manager; subscribers see the table appear, fail and go. With the
    # thread, CREATE returned before the first refresh ended: a failure stays on the card, the table stays.
    if not rt.background and future.exception() is not None:
        rt.manager.remove(name)
        rt.drive()  # delivers the removal to subscribers now, not with the next statement
        drop_statement.drop_tables(ws, [name])
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


def _reads_any(ws: Workspace, stmt: CreateMaterializedTable, names: set[str]) -> bool:
    """Whether the CREATE's query reads one of ``names`` (lower case: tables the cell creates before it)."""
    if not names:
        return False
    from mt_magic.runtime.statements.definition import qualified_sources

    try:
        _, upstream = qualified_sources(ws, "", stmt.query)
    except MtMagicError:
        return False  # refused when it is validated, with its position
    return any(source.lower() in names for source in upstream)

"""The Iceberg view alongside each materialized table (``catalog.views``), kept in step by the statements.

Each function is one statement's view write, ordered and undone so that a failure leaves the catalog as it was:
CREATE registers the view after the table (a failed view write drops the new table), ALTER … AS adds the view
version before the table's commit (a failed commit makes the previous version current again), DROP drops the
view before the table (a failed table drop registers the view again), RENAME renames and re-points the view
after the table (undone in reverse by the caller's failure path). Checks run before the first write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.views import MaterializedViews, ViewInfo, view_name
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.query.hidden_keys import visible_query

if TYPE_CHECKING:
    import pyarrow as pa

    from mt_magic.catalog.tables import TableInfo


def check_free(ws: Workspace, label: str, table: str) -> None:
    """Before the first write: the view name of ``table`` must be free (raises ``DefinitionError``)."""
    MaterializedViews(ws.catalog).check_free(label, table)


def shown(definition: MaterializedTableDefinition) -> MaterializedTableDefinition:
    """What the view holds of ``definition``: its query without the hidden key columns (``sql.query.hidden_keys``;
    the view's schema leaves them out too, ``catalog.views``), so ``SELECT *`` through the view shows the user's
    columns only."""
    return replace(definition, expanded_query=visible_query(definition.expanded_query))


def register(ws: Workspace, table: str, definition: MaterializedTableDefinition) -> ViewInfo | None:
    """CREATE: register the view of the just-created ``table``; if that fails, the table is dropped."""
    try:
        return MaterializedViews(ws.catalog).create(table, shown(definition))
    except BaseException:
        ws.catalog.drop(table, purge=True)
        raise


@contextmanager
def defining(
    ws: Workspace, label: str, table: str, definition: MaterializedTableDefinition, appended: pa.Schema | None
) -> Iterator[ViewInfo | None]:
    """ALTER … AS: a new current view version with ``definition`` before the table's commit (the body); if the
    body fails, the previous version is current again (a view registered here, for a table that had none, goes)."""
    views = MaterializedViews(ws.catalog)
    view = views.of_table(table, ws.catalog.load(table).uuid)
    created = view is None
    if view is None:
        views.check_free(label, table)
        view = views.create(table, shown(definition))
    if view is None:  # the catalog serves no views
        yield None
        return
    previous = view.current_version_id
    try:
        view = views.add_version(view, table, shown(definition), appended)
        yield view
    except BaseException:
        if created:
            views.drop(view)
        else:
            views.set_current(view, previous)
        raise


def drop_with_view(ws: Workspace, table: str, info: TableInfo | None = None) -> None:
    """DROP: the view, then the table (purged); if the table drop fails, the view is registered again. ``info``:
    the table as the DROP's plan read it (else loaded here)."""
    info = info or ws.catalog.load(table)
    views = MaterializedViews(ws.catalog)
    view = views.of_table(table, info.uuid)
    if view is not None:
        views.drop(view)
    try:
        ws.catalog.drop(table, purge=True)
    except BaseException:
        if view is not None and info.definition is not None:
            views.create(table, shown(info.definition))
        raise


def nothing() -> None:
    """Nothing to undo."""


def redefine(ws: Workspace, table: str, definition: MaterializedTableDefinition) -> Callable[[], None]:
    """RENAME of a source: a reader's rewritten query as a new current version of its view (if it has one), before
    the reader's own commit. Returns the undo: the previous version current again."""
    views = MaterializedViews(ws.catalog)
    view = views.of_table(table, ws.catalog.load(table).uuid)
    if view is None:
        return nothing
    previous = view.current_version_id
    updated = views.add_version(view, table, shown(definition))

    def undo() -> None:
        views.set_current(updated, previous)

    return undo


def follow_rename(ws: Workspace, old: str, new: str) -> Callable[[], None]:
    """RENAME, after the table was renamed: the view takes the new name's view name and a version pointing at
    ``new``. Returns the undo (for the caller's failure path); a failure here undoes its own part first."""
    views = MaterializedViews(ws.catalog)
    info = ws.catalog.load(new)
    view = views.of_table(old, info.uuid)
    if view is None or info.definition is None:
        return nothing
    previous = view.current_version_id
    moved = views.rename(view, view_name(new))
    try:
        moved = views.add_version(moved, new, shown(info.definition))
    except BaseException:
        views.rename(moved, view.name)
        raise

    def undo() -> None:
        views.rename(views.set_current(moved, previous), view.name)

    return undo

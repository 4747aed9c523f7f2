"""A table's folders are its own: its location and ``write.*.path`` folders never hold or share another table's,
a view's, a namespace's folder or the warehouse root.

The client chooses those folders (create, stage-create, a commit's ``set-properties`` or ``set-location``), and
vended credentials reach exactly them (:mod:`~mt_magic.catalog.server.storage_credentials`): a table placed over the
warehouse root would hand its writer every table's files. So every request that sets them is refused when they
overlap anything else's, and credentials are never vended for folders that do (a table made before this rule).
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Identifier

from mt_magic.catalog.server.errors_http import INPUT_FAULTS, RestError
from mt_magic.catalog.server.locations import Place, place_within, places_overlap, resolved, table_places


class TableFolders(NamedTuple):
    """Where one table keeps its files."""

    table: Identifier
    location: str
    folders: tuple[Place | None, ...]
    """Its location and ``write.*.path`` folders, links resolved (``None``: not comparable)."""


class TablesFolders:
    """Every table's location and folders (links resolved), each metadata file read once while it is its table's
    current one: in a catalog of thousands of tables each create read all their metadata files again (the parsed
    metadata cache holds 256). A table's folder that becomes a symbolic link (or lies under a folder that becomes one)
    after its metadata file was read is seen at that table's next commit: local warehouses are their owner's alone,
    and vended credentials, the other way in, are for S3 places only."""

    def __init__(self, read: Callable[[str], TableMetadata]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._by_file: dict[str, tuple[str, tuple[Place | None, ...]]] = {}

    def current(self, tables: Sequence[tuple[Identifier, str]]) -> list[TableFolders]:
        """The folders of ``tables``, (table, current metadata file) of every table of the catalog; an unreadable table
        has no folders to protect here and is left out."""
        with self._lock:
            known = dict(self._by_file)
        found: dict[str, tuple[str, tuple[Place | None, ...]]] = {}
        for _, metadata_file in tables:
            entry = known.get(metadata_file)
            if entry is None:
                try:
                    metadata = self._read(metadata_file)
                except (OSError, ValueError, *INPUT_FAULTS):
                    continue
                places = table_places(metadata.location, metadata.properties)
                entry = (metadata.location, tuple(resolved(place) for place in places))
            found[metadata_file] = entry
        with self._lock:
            self._by_file = found
        return [TableFolders(table, *found[file]) for table, file in tables if file in found]


def view_folder(metadata_location: str) -> str:
    """A view's folder, from its metadata file (``<folder>/metadata/<n>.metadata.json`` unless redirected)."""
    if "/metadata/" in metadata_location:
        return metadata_location.rsplit("/metadata/", 1)[0]
    return posixpath.dirname(metadata_location)


def check_own_places(
    what: str,
    places: Sequence[str],
    others: Iterable[tuple[str, Sequence[Place | None]]],
    folders: Iterable[tuple[str, str]],
) -> None:
    """Refuse ``places`` (``what``'s folders) when one overlaps another object's or holds a folder of ``folders``.

    Args:
        others: (description, folders resolved by :func:`~mt_magic.catalog.server.locations.resolved`) of every
            other table and view: no overlap either way.
        folders: (description, folder) of the warehouse root and every namespace: a place may lie inside one, never
            hold one.

    Raises:
        RestError: 403 ``ForbiddenException`` naming the place, what it reaches and a Fix.
    """
    for place in places:
        mine = resolved(place)
        if mine is None:  # fails closed: a place we cannot compare is no table's own
            _refuse(what, place, "no place that can be compared with other folders (not an absolute location)")
        for owner, folder in folders:
            if place_within(resolved(folder), mine):
                _refuse(what, place, f"the folder of {owner} ({folder!r})")
        for owner, theirs in others:
            if any(places_overlap(mine, folder) for folder in theirs):
                _refuse(what, place, f"the files of {owner}")


def _refuse(what: str, place: str, reached: str) -> None:
    raise RestError(
        403,
        "ForbiddenException",
        f"The folder {place!r} of {what} reaches {reached}: a table's location and write.*.path folders must be its "
        "own, since its writers' credentials reach all of them. Fix: omit the location and write.*.path properties "
        "to use the table's default folder, or choose a folder no other table, view or namespace uses",
    )

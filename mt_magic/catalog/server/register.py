"""Registering a table never makes a second way into another table's files.

``POST …/register`` adds an existing metadata file as a table. Were it another table's (or one whose location lies
inside another's, or holds one), the new name would reach that table's files: a purging drop of the alias would
delete the original's data. So the metadata file and the locations it names are checked against every other
table's folders, with symbolic links resolved; re-registering a table over itself (``overwrite``) stays allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Identifier

from mt_magic.catalog.server.errors_http import RestError
from mt_magic.catalog.server.locations import place_within, places_overlap, resolved, table_places
from mt_magic.catalog.server.own_places import TableFolders
from mt_magic.catalog.server.wire import display


def check_not_anothers(
    ident: Identifier,
    metadata_location: str,
    metadata: TableMetadata,
    tables: Iterable[TableFolders],
) -> None:
    """Refuse ``metadata`` for ``ident`` when it reaches another table's folders.

    Args:
        tables: the folders of every table of the catalog.

    Raises:
        RestError: 403 ``ForbiddenException`` naming the other table and its location.
    """
    places = [(place, resolved(place)) for place in table_places(metadata.location, metadata.properties)]
    metadata_place = resolved(metadata_location)
    for other, their_location, theirs in tables:
        if other == ident:
            continue
        mine = next((p for p, here in places for there in theirs if places_overlap(here, there)), None)
        inside = any(place_within(metadata_place, there) for there in theirs)
        if mine is None and not inside:
            continue
        raise RestError(
            403,
            "ForbiddenException",
            f"Cannot register table {display(ident)}: its metadata {metadata_location!r} "
            f"(location {mine or metadata.location!r}) reaches the files of table {display(other)} at "
            f"{their_location!r}, so dropping one with purge would delete the other's data. Fix: load "
            f"{display(other)} itself, or copy its files to a location of their own and register that copy",
        )

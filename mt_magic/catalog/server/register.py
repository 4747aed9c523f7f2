"""Registering a table never makes a second way into another table's files.

``POST …/register`` adds an existing metadata file as a table. Were it another table's (or one whose location lies
inside another's, or holds one), the new name would reach that table's files: a purging drop of the alias would
delete the original's data. So the metadata file and the locations it names are checked against every other
table's folders, with symbolic links resolved; re-registering a table over itself (``overwrite``) stays allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Identifier

from mt_magic.catalog.server.errors_http import INPUT_FAULTS, RestError
from mt_magic.catalog.server.locations import inside_any, overlaps, table_places
from mt_magic.catalog.server.wire import display


def check_not_anothers(
    ident: Identifier,
    metadata_location: str,
    metadata: TableMetadata,
    tables: Sequence[tuple[Identifier, str]],
    read: Callable[[str], TableMetadata],
) -> None:
    """Refuse ``metadata`` for ``ident`` when it reaches another table's folders.

    Args:
        tables: (identifier, current metadata file) of every table of the catalog.
        read: reads (and caches) a metadata file.

    Raises:
        RestError: 403 ``ForbiddenException`` naming the other table and its location.
    """
    places = table_places(metadata.location, metadata.properties)
    for other, other_metadata in tables:
        if other == ident:
            continue
        try:
            theirs = read(other_metadata)
        except (OSError, ValueError, *INPUT_FAULTS):  # an unreadable table has no files to protect here
            continue
        their_places = table_places(theirs.location, theirs.properties)
        mine = next((p for p in places for q in their_places if overlaps(p, q)), None)
        if mine is None and not inside_any(metadata_location, their_places):
            continue
        raise RestError(
            403,
            "ForbiddenException",
            f"Cannot register table {display(ident)}: its metadata {metadata_location!r} "
            f"(location {mine or metadata.location!r}) reaches the files of table {display(other)} at "
            f"{theirs.location!r}, so dropping one with purge would delete the other's data. Fix: load "
            f"{display(other)} itself, or copy its files to a location of their own and register that copy",
        )

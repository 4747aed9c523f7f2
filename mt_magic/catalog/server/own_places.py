"""A table's folders are its own: its location and ``write.*.path`` folders never hold or share another table's,
a view's, a namespace's folder or the warehouse root.

The client chooses those folders (create, stage-create, a commit's ``set-properties`` or ``set-location``), and
vended credentials reach exactly them (:mod:`~mt_magic.catalog.server.storage_credentials`): a table placed over the
warehouse root would hand its writer every table's files. So every request that sets them is refused when they
overlap anything else's, and credentials are never vended for folders that do (a table made before this rule).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from mt_magic.catalog.server.errors_http import RestError
from mt_magic.catalog.server.locations import overlaps, resolved


def view_folder(metadata_location: str) -> str:
    """A view's folder, from its metadata file (``<folder>/metadata/<n>.metadata.json`` unless redirected)."""
    if "/metadata/" in metadata_location:
        return metadata_location.rsplit("/metadata/", 1)[0]
    return posixpath.dirname(metadata_location)


def _holds(place: str, folder: str) -> bool:
    """Whether ``folder`` lies inside ``place`` (or is it)."""
    inner, outer = resolved(folder), resolved(place)
    return inner is not None and outer is not None and inner.within(outer)


def check_own_places(
    what: str, places: Sequence[str], others: Iterable[tuple[str, Sequence[str]]], folders: Iterable[tuple[str, str]]
) -> None:
    """Refuse ``places`` (``what``'s folders) when one overlaps another object's or holds a folder of ``folders``.

    Args:
        others: (description, folders) of every other table and view: no overlap either way.
        folders: (description, folder) of the warehouse root and every namespace: a place may lie inside one, never
            hold one.

    Raises:
        RestError: 403 ``ForbiddenException`` naming the place, what it reaches and a Fix.
    """
    for place in places:
        if resolved(place) is None:  # fails closed: a place we cannot compare is no table's own
            _refuse(what, place, "no place that can be compared with other folders (not an absolute location)")
        for owner, folder in folders:
            if _holds(place, folder):
                _refuse(what, place, f"the folder of {owner} ({folder!r})")
        for owner, theirs in others:
            if any(overlaps(place, folder) for folder in theirs):
                _refuse(what, place, f"the files of {owner}")


def _refuse(what: str, place: str, reached: str) -> None:
    raise RestError(
        403,
        "ForbiddenException",
        f"The folder {place!r} of {what} reaches {reached}: a table's location and write.*.path folders must be its "
        "own, since its writers' credentials reach all of them. Fix: omit the location and write.*.path properties "
        "to use the table's default folder, or choose a folder no other table, view or namespace uses",
    )

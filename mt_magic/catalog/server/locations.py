"""Where tables and views may keep files: inside the warehouse, or inside storage roots the operator allows.

Any client holding the token can choose a table's location and its ``write.data.path`` /
``write.metadata.path``; the server writes metadata there and, on a purging drop, deletes files there. So
every location a request brings (create, register, commit, view create/replace, namespace ``location``) is
checked against :class:`StorageRoots`, and a purge deletes nothing outside them. Locations are compared
after normalization (``file:/x``, ``file:///x`` and ``/x`` are one place; ``..`` is resolved), and
percent-encoded dots, slashes and backslashes are refused outright, so names cannot smuggle a traversal in.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from mt_magic.catalog.server.errors_http import BadRequest, RestError

# Table properties that redirect where files are written (Java and pyiceberg location providers).
PATH_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path")
MAX_LOCATION_CHARS = 900  # the catalog database keeps metadata locations in 1000 characters
_ENCODED_SEPARATORS = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
_LOCAL_SCHEMES = ("", "file")


@dataclass(frozen=True)
class Place:
    """A normalized location: scheme (``file`` for local paths), authority and a clean absolute path."""

    scheme: str
    authority: str
    path: str

    def within(self, root: Place) -> bool:
        if (self.scheme, self.authority) != (root.scheme, root.authority):
            return False
        return self.path == root.path or self.path.startswith(root.path.rstrip("/") + "/")


def normalize(location: str) -> Place | None:
    """The :class:`Place` of a location, ``None`` if it is not an absolute location we can reason about."""
    if not isinstance(location, str) or "\x00" in location or _ENCODED_SEPARATORS.search(location):
        return None
    parts = urlsplit(location.strip())
    scheme = parts.scheme.lower()
    if scheme in _LOCAL_SCHEMES:
        if parts.netloc not in ("", "localhost"):
            return None
        scheme, authority = "file", ""
    else:
        authority = parts.netloc.lower()
    path = parts.path
    if not path.startswith("/"):
        return None
    path = re.sub("/+", "/", posixpath.normpath(path))
    return Place(scheme, authority, path)


@dataclass(frozen=True)
class StorageRoots:
    """The warehouse plus the locations an operator allows (``serve --allow-location``)."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, warehouse: str, allowed: Iterable[str] = ()) -> StorageRoots:
        roots = (warehouse, *allowed)
        for root in roots:
            if normalize(root) is None:
                raise ValueError(f"Storage root {root!r} is not an absolute location (a path or a URI)")
        return cls(tuple(r.rstrip("/") for r in roots))

    def contains(self, location: str) -> bool:
        place = normalize(location)
        return place is not None and any(place.within(normalize(root)) for root in self.roots)  # type: ignore[arg-type]

    def check(self, location: str, what: str) -> str:
        """Return ``location`` if it is inside a root.

        Raises:
            BadRequest: it is not an absolute location, or too long for the catalog database.
            RestError: 403 ``ForbiddenException`` when it is outside every root.
        """
        if normalize(location) is None:
            raise BadRequest(
                f"Invalid location {location!r} for {what}: use an absolute path or URI without "
                "percent-encoded '.', '/' or '\\\\'"
            )
        if len(location) > MAX_LOCATION_CHARS:
            raise BadRequest(f"Invalid location for {what}: {len(location)} characters, at most {MAX_LOCATION_CHARS}")
        if not self.contains(location):
            raise RestError(
                403,
                "ForbiddenException",
                f"Location {location!r} for {what} is outside the catalog's storage ({', '.join(self.roots)}); "
                "omit the location to use the default one, or ask the operator to allow it "
                "(python -m mt_magic.catalog serve --allow-location URI)",
            )
        return location

    def check_all(self, location: str, properties: Mapping[str, str], what: str) -> None:
        """Check a table's or view's location and every path property that redirects its files."""
        self.check(location, what)
        for key in PATH_PROPERTIES:
            if key in properties:
                self.check(properties[key], f"{what} (property {key})")


def table_places(location: str, properties: Mapping[str, str]) -> list[str]:
    """Where a table keeps its files: its location and the folders its path properties redirect them to."""
    return [location, *(properties[key] for key in PATH_PROPERTIES if key in properties)]


def resolved(location: str) -> Place | None:
    """The :class:`Place` of a location, a local one with its symbolic links resolved (``os.path.realpath``): a
    link inside a table's folder may lead anywhere."""
    place = normalize(location)
    if place is None or place.scheme != "file":
        return place
    return Place("file", "", os.path.realpath(place.path))


def places_overlap(a: Place | None, b: Place | None) -> bool:
    """Whether one resolved place is inside the other (or they are one); a place that is ``None`` overlaps nothing."""
    return place_within(a, b) or place_within(b, a)


def place_within(inner: Place | None, outer: Place | None) -> bool:
    """Whether resolved ``inner`` lies inside resolved ``outer`` (or is it); ``None`` is inside nothing."""
    return inner is not None and outer is not None and inner.within(outer)


def inside_any(location: str, places: Iterable[str]) -> bool:
    """Whether ``location``, links resolved, lies inside one of ``places`` (links resolved too)."""
    place = resolved(location)
    return any(place_within(place, root) for root in map(resolved, places))

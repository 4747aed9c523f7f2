"""Loading a table's metadata again only when it changed: the REST catalog's ``ETag`` / ``If-None-Match``.

The refresh manager polls each table and its sources every fifth of the freshness (the card's staleness). Each
poll used to fetch and parse the whole table metadata, whose size grows with every snapshot a table keeps: at 360
snapshots a parse alone costs about 20 ms of CPU, for an answer that is almost always "nothing changed". The
Iceberg REST spec lets a client send the ``ETag`` of its last load as ``If-None-Match``; a server that supports it
answers ``304 Not Modified`` with no body when the metadata is still the same (the embedded server does: its ETag
is a hash of the metadata file's location, which changes with every commit). Then the last
:class:`~mt_magic.catalog.tables.TableInfo` is exact and is reused.

Anything else — a server without ETags, a catalog that is not pyiceberg's REST client, an error status — loads
the table as before, with the same errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

T = TypeVar("T")


class Revalidated(Generic[T]):
    """The last answer per table and its ETag, reused while the catalog says it has not changed.

    Args:
        catalog: the pyiceberg catalog the answers come from.
        build: turns a loaded table into the answer kept (``table_info`` with the table's Spark name).
    """

    def __init__(self, catalog: Catalog, build: Callable[[str, Table], T]) -> None:
        self.catalog = catalog
        self.build = build
        self._last: dict[str, tuple[str, T]] = {}
        self._lock = threading.Lock()

    def last(self, name: str) -> T | None:
        """The last answer kept for ``name``, without asking the catalog (``None`` when there is none)."""
        with self._lock:
            kept = self._last.get(name)
        return kept[1] if kept is not None else None

    def get(self, name: str, identifier: tuple[str, ...]) -> T | None:
        """The answer for ``name``, from the last one when the server answers 304 to its ETag; ``None`` when
        this catalog cannot revalidate or answered anything but 200 or 304 (the caller then loads as usual)."""
        from pyiceberg.catalog.rest import Endpoints, RestCatalog, TableResponse

        catalog = self.catalog
        if not isinstance(catalog, RestCatalog) or catalog.properties.get("snapshot-loading-mode"):
            return None
        with self._lock:
            last = self._last.get(name)
        url = catalog.url(Endpoints.load_table, prefixed=True, **catalog._split_identifier_for_path(identifier))
        headers = {"If-None-Match": last[0]} if last else {}
        response = catalog._session.get(url, headers=headers)
        if response.status_code == 304 and last is not None:
            return last[1]
        if response.status_code != 200:
            return None
        table = catalog._response_to_table(identifier, TableResponse.model_validate_json(response.text))
        answer = self.build(name, table)
        etag = response.headers.get("ETag")
        with self._lock:
            if etag:
                self._last[name] = (etag, answer)
            else:
                self._last.pop(name, None)
        return answer

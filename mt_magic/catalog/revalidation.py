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

A listing that must be exact about every table (DROP's and RENAME's dependents: a reader another kernel created a
moment ago must be found) asks the embedded server for every table's ETag in one request (``GET /v1/mt/table-etags``,
mt_magic's own endpoint, not in the Iceberg REST spec): a table whose ETag is the one of the answer kept is
unchanged and its answer is reused without a request of its own, the others are loaded. A conditional request per
table would be as exact, but each costs the server about 2 ms of CPU and the client 1 (the 121 of a DROP among 120
tables took 277 ms): the listing's cost then grew with the catalog. Any other server (Iceberg's reference server
answers the unknown path with an error) is asked once, then listed table by table as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

T = TypeVar("T")
TABLE_ETAGS = "mt/table-etags"
"""The embedded server's own endpoint (not in the Iceberg REST spec): every table's ETag in one answer."""
NAMESPACE_SEPARATOR = "\x1f"
NOT_OFFERED = frozenset({400, 404, 405, 406, 501})
"""How a server without :data:`TABLE_ETAGS` answers it (a 404 naming a missing namespace is an answer)."""


def _no_such_namespace(body: str) -> bool:
    return "NoSuchNamespaceException" in body


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
        self._unloadable: dict[str, str] = {}
        """Tables a listing named but that could not be loaded, with the ETag they had (see :meth:`unloadable`)."""
        self._lock = threading.Lock()
        self._no_etags = False

    def last(self, name: str) -> T | None:
        """The last answer kept for ``name``, without asking the catalog (``None`` when there is none)."""
        with self._lock:
            kept = self._last.get(name)
        return kept[1] if kept is not None else None

    def unchanged(self, name: str, etag: str) -> T | None:
        """The last answer kept for ``name`` if the catalog's current ``etag`` is the one it was read with."""
        with self._lock:
            kept = self._last.get(name)
        return kept[1] if kept is not None and kept[0] == etag else None

    def unloadable(self, name: str, etag: str) -> bool:
        """Whether ``name`` could not be loaded when the catalog last gave it this ``etag`` (a name this client
        cannot address, or a table dropped between the listing and its load): not asked again until it changes."""
        with self._lock:
            return self._unloadable.get(name) == etag

    def mark_unloadable(self, name: str, etag: str) -> None:
        with self._lock:
            self._unloadable[name] = etag

    def etags(self, namespace: tuple[str, ...] | None = None) -> dict[tuple[str, ...], str] | None:
        """Every table's current ETag (identifier → ETag), or those directly in ``namespace``, in one request;
        ``None`` when this catalog cannot say (not the embedded server: asked once, then never again) or answered
        an error (the caller lists table by table). A namespace that does not exist has no tables."""
        from pyiceberg.catalog.rest import RestCatalog

        catalog = self.catalog
        if self._no_etags or not isinstance(catalog, RestCatalog) or catalog.properties.get("snapshot-loading-mode"):
            return None
        params = {"namespace": NAMESPACE_SEPARATOR.join(namespace)} if namespace is not None else {}
        response = catalog._session.get(catalog.url(TABLE_ETAGS, prefixed=True), params=params)
        if response.status_code == 404 and namespace is not None and _no_such_namespace(response.text):
            return {}
        if response.status_code in NOT_OFFERED:
            self._no_etags = True
        if response.status_code != 200:
            return None
        try:
            tables = response.json()["tables"]
            return {(*t["identifier"]["namespace"], t["identifier"]["name"]): str(t["etag"]) for t in tables}
        except (ValueError, KeyError, TypeError):  # not our answer: some other server's page at that path
            self._no_etags = True
            return None

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

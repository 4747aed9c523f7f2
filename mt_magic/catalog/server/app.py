"""The embedded Iceberg REST catalog server: a FastAPI app over pyiceberg's ``SqlCatalog``.

It follows ``rest-catalog-open-api.yaml`` closely enough that Spark's and pyiceberg's own REST clients use it
unchanged: ``/v1/config`` advertises exactly the endpoints implemented, errors use the spec's
``IcebergErrorResponse`` shape, and commits are serialized and compare-and-swapped so none is lost.
The catalog lives in a SQL database (SQLite file by default, any SQLAlchemy URL) and a warehouse directory.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from fastapi import Depends, FastAPI, Request, Response
from pyiceberg.catalog.sql import SqlCatalog
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, ProgrammingError

from mt_magic.catalog.embedded import EmbeddedServer, display_database, remove_state, warehouse_uri, write_state
from mt_magic.catalog.server import routes_access, routes_namespaces, routes_tables, routes_views
from mt_magic.catalog.server.access_store import AccessStore
from mt_magic.catalog.server.authz import NOT_AUTHENTICATED, authorize
from mt_magic.catalog.server.browser import BrowserGuard, allowed_hosts
from mt_magic.catalog.server.edge import RestPathDecoding
from mt_magic.catalog.server.errors_http import error_response, install_error_handlers
from mt_magic.catalog.server.service import build_service
from mt_magic.catalog.server.storage_credentials import CredentialVendor, S3Storage
from mt_magic.catalog.server.views_store import create_view_table
from mt_magic.loopback import LOOPBACK_NAMES, OWNER_ONLY_UMASK

log = logging.getLogger(__name__)
CATALOG_NAME = "mt"

ENDPOINTS = tuple(
    f"{verb} /v1/{{prefix}}{path}"
    for verb, path in (
        ("GET", "/namespaces"),
        ("POST", "/namespaces"),
        ("GET", "/namespaces/{namespace}"),
        ("HEAD", "/namespaces/{namespace}"),
        ("DELETE", "/namespaces/{namespace}"),
        ("POST", "/namespaces/{namespace}/properties"),
        ("GET", "/namespaces/{namespace}/tables"),
        ("POST", "/namespaces/{namespace}/tables"),
        ("GET", "/namespaces/{namespace}/tables/{table}"),
        ("HEAD", "/namespaces/{namespace}/tables/{table}"),
        ("POST", "/namespaces/{namespace}/tables/{table}"),
        ("DELETE", "/namespaces/{namespace}/tables/{table}"),
        ("POST", "/namespaces/{namespace}/register"),
        ("POST", "/namespaces/{namespace}/tables/{table}/metrics"),
        ("GET", "/namespaces/{namespace}/tables/{table}/credentials"),
        ("POST", "/tables/rename"),
        ("POST", "/transactions/commit"),
        ("GET", "/namespaces/{namespace}/views"),
        ("POST", "/namespaces/{namespace}/views"),
        ("GET", "/namespaces/{namespace}/views/{view}"),
        ("HEAD", "/namespaces/{namespace}/views/{view}"),
        ("POST", "/namespaces/{namespace}/views/{view}"),
        ("DELETE", "/namespaces/{namespace}/views/{view}"),
        ("POST", "/views/rename"),
        ("POST", "/namespaces/{namespace}/register-view"),
    )
)


def open_sql_catalog(
    database: str, warehouse: str | Path, name: str = CATALOG_NAME, file_io: Mapping[str, str] = {}
) -> SqlCatalog:
    """pyiceberg's ``SqlCatalog`` on a SQLAlchemy URL, with SQLite set up for a multi-threaded server; ``file_io``:
    the FileIO settings it writes metadata with (an S3 warehouse's endpoint and the server's own key).

    Raises:
        ValueError: an in-memory SQLite URL (each connection would see its own empty database).
    """
    url = make_url(database)
    if url.get_backend_name() == "sqlite":
        if url.database in (None, "", ":memory:"):
            raise ValueError(f"{database!r} is an in-memory SQLite database; the server needs a file")
        Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    catalog = _create_tables(lambda: SqlCatalog(name, uri=database, warehouse=warehouse_uri(warehouse), **file_io))
    _create_tables(lambda: create_view_table(catalog.engine))
    _create_tables(lambda: AccessStore(catalog.engine).create_tables())
    if url.get_backend_name() == "sqlite":
        with catalog.engine.connect() as conn:  # readers never block the single writer
            conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    return catalog


T = TypeVar("T")


def _create_tables(create: Callable[[], T], attempts: int = 5) -> T:
    """Run a ``CREATE TABLE IF NOT EXISTS`` step, retrying when another server process creates the same
    tables at the same moment (PostgreSQL then reports a duplicate type or key)."""
    for attempt in range(attempts):
        try:
            return create()
        except (IntegrityError, ProgrammingError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def create_app(
    catalog: SqlCatalog,
    token: str | None = None,
    *,
    warehouse: str,
    allowed_locations: Sequence[str] = (),
    hosts: frozenset[str] = frozenset(LOOPBACK_NAMES),
    storage: S3Storage | None = None,
) -> FastAPI:
    """The REST catalog as an ASGI app.

    Args:
        catalog: pyiceberg ``SqlCatalog`` holding the rows (see :func:`open_sql_catalog`).
        token: the admin's token (:data:`~mt_magic.catalog.privileges.ADMIN`); when set, every request must carry
            ``Authorization: Bearer <token>`` with it or a principal's token (else 401), and
            :mod:`~mt_magic.catalog.server.authz` decides what a principal may do. Without it, a request without a
            token is the admin's.
        warehouse: where new tables and views go by default (a URI or a local directory); their files
            must stay inside it ...
        allowed_locations: ... or inside one of these storage roots.
        hosts: the ``Host`` names it answers besides IP addresses (``*``: any); bodies must be JSON
            (:class:`~mt_magic.catalog.server.browser.BrowserGuard`). No CORS header is ever sent.
        storage: the S3-compatible store of an ``s3://`` warehouse: loads and creates that send
            ``X-Iceberg-Access-Delegation: vended-credentials`` get credentials scoped to the table
            (:mod:`~mt_magic.catalog.server.storage_credentials`); ``None``: none are handed out.

    Returns:
        The FastAPI application; serve it with uvicorn (see :func:`serve`).
    """
    app = FastAPI(title="mt_magic Iceberg REST catalog", docs_url=None, redoc_url=None, openapi_url=None)
    vendor = CredentialVendor(storage) if storage is not None else None
    app.state.service = build_service(catalog, warehouse_uri(warehouse), allowed_locations, vendor)
    app.state.admin_token = token or None
    install_error_handlers(app)

    if token:

        @app.middleware("http")
        async def _bearer_required(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            """A request without any bearer token is refused here; which token it is, the authorizer decides."""
            header = request.headers.get("authorization") or ""
            if not header.lower().startswith("bearer ") or not header[7:].strip():
                return error_response(401, "NotAuthorizedException", NOT_AUTHENTICATED)
            return await call_next(request)

    @app.get("/v1/config", dependencies=[Depends(authorize)])
    def get_config(warehouse: str | None = None) -> dict[str, Any]:
        """The ``warehouse`` query parameter is accepted and ignored: a server has exactly one warehouse."""
        return {"defaults": {}, "overrides": {}, "endpoints": list(ENDPOINTS)}

    # Greedy path parameters (names may contain '/'): the routes with longer fixed suffixes come first.
    app.include_router(routes_tables.router)
    app.include_router(routes_views.router)
    app.include_router(routes_namespaces.router)
    app.include_router(routes_access.router)
    app.add_middleware(RestPathDecoding)
    app.add_middleware(BrowserGuard, hosts=hosts)
    return app


KEEP_ALIVE_SECONDS = 75
"""How long an idle client connection stays open (uvicorn's default is 5 s, nginx's 75 s). A client that
reuses a connection just as the server closes it gets a reset: with 5 s, a kernel polling a table every 5 s
(or a script pausing 5 s) met that moment often; clients also retry an idempotent request once on a reset
(:func:`mt_magic.catalog.client.open_catalog`)."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 picks a free one (read it back with ``getsockname``)."""
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP, and
    # without it every keep-alive response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(
    *,
    host: str,
    port: int,
    warehouse: str,
    database: str,
    token: str | None,
    state_file: Path | None = None,
    log_level: str = "warning",
    allowed_locations: Sequence[str] = (),
    extra_hosts: Sequence[str] = (),
    storage: S3Storage | None = None,
) -> None:
    """Run the server in this process until SIGTERM/SIGINT.

    Prints one line with the URL once the socket listens (and a warning when ``token`` is empty: no
    authentication); with ``state_file`` also writes the embedded server's state there (and removes it on a clean
    exit). Everything it writes (the SQLite database, its ``-wal``/``-shm``, the warehouse's files) is its
    owner's only: the process runs under :data:`~mt_magic.loopback.OWNER_ONLY_UMASK`.
    """
    import uvicorn

    os.umask(OWNER_ONLY_UMASK)
    catalog = open_sql_catalog(database, warehouse, file_io=storage.file_io_properties() if storage else {})
    names = [socket.gethostname(), socket.getfqdn()] if host in ("0.0.0.0", "::", "") else []
    hosts = allowed_hosts(host, [*names, *extra_hosts])
    app = create_app(
        catalog, token, warehouse=warehouse, allowed_locations=allowed_locations, hosts=hosts, storage=storage
    )
    sock = bind(host, port)
    actual_port = sock.getsockname()[1]
    url = f"http://{host}:{actual_port}"
    print(
        f"mt_magic catalog serving {url} (warehouse {warehouse_uri(warehouse)}, database {display_database(database)})",
        flush=True,
    )
    if not token:
        print(
            f"WARNING: no authentication (--insecure-no-auth): every local user and every program that reaches {url} "
            "can read, change and drop every table of this catalog. Start it with $MT_MAGIC_CATALOG_TOKEN or "
            "--token-file unless this machine and its network are yours alone.",
            file=sys.stderr,
            flush=True,
        )
    if state_file is not None:
        write_state(
            state_file,
            EmbeddedServer(
                uri=url,
                port=actual_port,
                pid=os.getpid(),
                warehouse=warehouse_uri(warehouse),
                database=database,
                token=token,
            ),
        )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level=log_level,
            access_log=log_level == "debug",
            timeout_graceful_shutdown=5,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
    )
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the previous handler:
    # make that handler a clean exit so the state file is removed and the database closed.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_cleanly)
    try:
        server.run(sockets=[sock])
    finally:
        if state_file is not None:
            remove_state(state_file, pid=os.getpid())
        catalog.close()

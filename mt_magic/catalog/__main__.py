"""Command line of the REST catalog server.

    python -m mt_magic.catalog serve [--host 127.0.0.1] [--port 0] [--warehouse DIR] [--uri SQLALCHEMY_URL]
                                     [--token-file PATH | --insecure-no-auth] [--allow-location URI ...]
                                     [--allow-host NAME ...] [--state-file PATH] [--log-level warning]
                                     [--s3-endpoint URL [--s3-region R] [--s3-credentials-file PATH]]
    python -m mt_magic.catalog start  [--home DIR]     # the embedded server of $MT_MAGIC_HOME, in the background
    python -m mt_magic.catalog status [--home DIR] [--show-token]
    python -m mt_magic.catalog stop   [--home DIR]
    python -m mt_magic.catalog principals|roles|grants|audit …   # a team's principals, grants and audit (access_cli)

``serve`` runs in the foreground (port 0 picks a free port; the URL is printed). Its token comes from
``$MT_MAGIC_CATALOG_TOKEN`` or ``--token-file``, out of the process list (``--token T`` still works, with a
warning: every local user reads it with ``ps``); a server without one must be asked for with
``--insecure-no-auth``, and says so at start and in ``status``. Without ``--uri`` (or
``$MT_MAGIC_CATALOG_DATABASE``), ``--warehouse DIR`` keeps its own SQLite database beside it,
``DIR.catalog.db``. Tables and views may keep files only inside the warehouse and the ``--allow-location``
roots. With an ``s3://`` warehouse and ``--s3-endpoint``, the server keeps the store's key to itself and hands
out temporary credentials scoped to one table (:mod:`mt_magic.catalog.server.storage_credentials`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mt_magic.catalog import access_cli, embedded
from mt_magic.catalog.server import storage_credentials
from mt_magic.errors import CommandLineParser, MtMagicError


def _parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(prog="python -m mt_magic.catalog", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a REST catalog server in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    serve.add_argument("--warehouse", help="warehouse directory or URI (default $MT_MAGIC_HOME/warehouse)")
    serve.add_argument(
        "--uri",
        help=f"SQLAlchemy URL of the catalog database (default ${embedded.DATABASE_ENV}, else SQLite beside "
        "--warehouse DIR as DIR.catalog.db, else SQLite in $MT_MAGIC_HOME)",
    )
    serve.add_argument(
        "--allow-location",
        action="append",
        default=[],
        metavar="URI",
        help="another storage root tables and views may use besides the warehouse (repeatable)",
    )
    serve.add_argument(
        "--token-file", type=Path, help=f"a file holding the bearer token clients must send (or ${embedded.TOKEN_ENV})"
    )
    serve.add_argument("--token", help="the bearer token on the command line: visible to every local user in `ps`")
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve without a token: anyone who reaches the port reads and changes the catalog",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name clients use in Host besides the loopback names, IP addresses and --host ('*': any)",
    )
    serve.add_argument(
        "--s3-endpoint",
        metavar="URL",
        help="the S3-compatible store of an s3:// --warehouse: the server writes metadata there with its own key and "
        "hands clients that ask (X-Iceberg-Access-Delegation) temporary credentials scoped to one table",
    )
    serve.add_argument("--s3-region", default="us-east-1", help="the store's region (default us-east-1)")
    serve.add_argument(
        "--s3-credentials-file",
        type=Path,
        metavar="PATH",
        help='a mode-600 JSON file {"access-key-id": …, "secret-access-key": …} with the server\'s own S3 key (or '
        f"${storage_credentials.ACCESS_KEY_ENV} and ${storage_credentials.SECRET_KEY_ENV}); never sent to clients",
    )
    serve.add_argument(
        "--s3-credentials-seconds",
        type=int,
        default=storage_credentials.DEFAULT_DURATION_SECONDS,
        help="how long vended credentials last (900..43200, default 3600)",
    )
    serve.add_argument("--state-file", type=Path, help="write pid/port/token here once listening")
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    for name, text in (
        ("start", "start (or find) the embedded server"),
        ("status", "show the embedded server"),
        ("stop", "stop the embedded server"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--home", type=Path, help="state directory (default $MT_MAGIC_HOME or ~/.mt_magic)")
        if name == "status":
            cmd.add_argument("--show-token", action="store_true", help="print the token instead of masking it")
    access_cli.add_parsers(sub)
    return parser


def _describe(server: embedded.EmbeddedServer, show_token: bool = False) -> str:
    if not server.token:
        token = "NONE: no authentication (--insecure-no-auth), anyone who reaches the port reads and changes it"
    else:
        token = server.token if show_token else "****"
    return (
        f"running: {server.uri} (pid {server.pid})\nwarehouse: {server.warehouse}\n"
        f"database: {embedded.display_database(server.database)}\ntoken: {token}"
    )


def _default_database(warehouse: str | None) -> str:
    return embedded.database_for_warehouse(warehouse) if warehouse else embedded.default_database()


def _serve_token(args: argparse.Namespace) -> str | None:
    """The token ``serve`` requires: ``--token-file``, ``--token`` (with a warning), else the environment;
    ``None`` only with ``--insecure-no-auth``.

    Raises:
        MtMagicError: no token and no ``--insecure-no-auth``; an empty or unreadable token file.
    """
    if args.token:
        print(
            "warning: --token puts the token on the command line, where every local user reads it (ps); "
            f"use ${embedded.TOKEN_ENV} or --token-file instead",
            file=sys.stderr,
        )
    token: str | None = args.token or os.environ.get(embedded.TOKEN_ENV) or None
    if args.token_file is not None:
        token = args.token_file.read_text().strip()
        if not token:
            raise MtMagicError(
                f"serve --token-file {args.token_file}: the file is empty",
                fix=f"write the token into it (openssl rand -hex 24 > {args.token_file}; chmod 600 {args.token_file})",
            )
    if token and args.insecure_no_auth:
        raise MtMagicError("serve: a token and --insecure-no-auth were both given", fix="keep one of them")
    if not token and not args.insecure_no_auth:
        raise MtMagicError(
            "serve: no token, so anyone who reaches the port could read and change the catalog",
            fix=f"export {embedded.TOKEN_ENV}=$(openssl rand -hex 24) (or --token-file FILE) and give clients the "
            "same token; or, for a server only you can reach, pass --insecure-no-auth",
        )
    return token


def _serve_storage(args: argparse.Namespace) -> storage_credentials.S3Storage | None:
    """The S3 store ``serve --s3-endpoint`` names, with the server's key from its file or the environment."""
    if not args.s3_endpoint:
        if args.s3_credentials_file is not None:
            raise MtMagicError("serve: --s3-credentials-file without --s3-endpoint", fix="add --s3-endpoint URL")
        return None
    warehouse = args.warehouse or ""
    if not warehouse.startswith(("s3://", "s3a://")):
        raise MtMagicError(
            f"serve: --s3-endpoint vends credentials for an s3:// warehouse, but --warehouse is {warehouse or 'unset'}",
            fix="serve --warehouse s3://bucket/warehouse --s3-endpoint URL, or leave --s3-endpoint out",
        )
    return storage_credentials.S3Storage.load(
        args.s3_endpoint, args.s3_region, args.s3_credentials_file, args.s3_credentials_seconds
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            from mt_magic.catalog.server.app import serve

            serve(
                host=args.host,
                port=args.port,
                warehouse=args.warehouse or str(embedded.default_warehouse()),
                database=args.uri or os.environ.get(embedded.DATABASE_ENV) or _default_database(args.warehouse),
                token=_serve_token(args),
                state_file=args.state_file,
                log_level=args.log_level,
                allowed_locations=[embedded.location_uri(loc) for loc in args.allow_location],
                extra_hosts=args.allow_host,
                storage=_serve_storage(args),
            )
        elif args.command == "start":
            print(_describe(embedded.ensure_embedded_server(args.home)))
        elif args.command == "status":
            server = embedded.running_server(args.home)
            if server is None:
                print(f"not running (home {embedded.mt_home(args.home)})")
                return 1
            print(_describe(server, args.show_token))
        elif args.command == "stop":
            stopped = embedded.stop_embedded_server(args.home)
            print("stopped" if stopped else "not running")
        elif args.command in access_cli.COMMANDS:
            print(access_cli.run(args))
    except (MtMagicError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

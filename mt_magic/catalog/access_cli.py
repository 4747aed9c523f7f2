"""``python -m mt_magic.catalog principals|roles|grants|audit``: a team catalog's people, services, grants and audit.

    principals create NAME [--kind person|service] [--out FILE]   # the token is shown once (or written 0600)
    principals list | rotate NAME [--out FILE] | revoke NAME
    roles create NAME | list | drop NAME | add ROLE PRINCIPAL | remove ROLE PRINCIPAL
    grants add|revoke ROLE PRIVILEGE (--catalog | --namespace NS | --table NS.TABLE) | grants list [--role ROLE]
    audit [--table NS[.TABLE]] [--principal NAME] [--limit 100]

Each talks to the server over its REST API (``/v1/mt/…``) as a principal: ``--url`` (default: the embedded server of
``--home``) with the token of ``--token-file``, else ``$MT_MAGIC_CATALOG_TOKEN``, else the embedded server's own.
The server's own token is the admin; a principal may rotate its own token, and grant on what it manages.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mt_magic.catalog import embedded
from mt_magic.catalog.access import AccessClient, audit_lines
from mt_magic.catalog.privileges import CATALOG, Privilege, Securable, namespace, parse_privilege, table
from mt_magic.errors import MtMagicError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

COMMANDS = ("principals", "roles", "grants", "audit")


def add_parsers(sub: Any) -> None:
    """The four commands' parsers, on ``python -m mt_magic.catalog``'s subparsers."""
    principals = _connected(sub.add_parser("principals", help="create, list, rotate, revoke principals"))
    principals.add_argument("action", choices=("create", "list", "rotate", "revoke"))
    principals.add_argument("name", nargs="?")
    principals.add_argument("--kind", choices=("person", "service"), default="person")
    principals.add_argument("--out", type=Path, help="write the new token to this file (mode 0600) instead")
    roles = _connected(sub.add_parser("roles", help="create, list, drop roles; add or remove their principals"))
    roles.add_argument("action", choices=("create", "list", "drop", "add", "remove"))
    roles.add_argument("name", nargs="?")
    roles.add_argument("principal", nargs="?")
    grants = _connected(sub.add_parser("grants", help="grant, revoke and list privileges of roles"))
    grants.add_argument("action", choices=("add", "revoke", "list"))
    grants.add_argument("role", nargs="?")
    grants.add_argument("privilege", nargs="?", help=", ".join(p.value for p in Privilege))
    where = grants.add_mutually_exclusive_group()
    where.add_argument("--catalog", action="store_true", help="on the whole catalog")
    where.add_argument("--namespace", help="on a namespace and everything in it (levels joined by '.')")
    where.add_argument("--table", help="on one table or view, NS.TABLE")
    audit = _connected(sub.add_parser("audit", help="who changed what, when, from where (newest first)"))
    audit.add_argument("--table", help="only this table, or everything in this namespace")
    audit.add_argument("--principal", help="only this principal's changes")
    audit.add_argument("--limit", type=int, default=100)


def _connected(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--url", help="the catalog server (default: the embedded server of --home)")
    parser.add_argument("--token-file", type=Path, help=f"the principal's token (default ${embedded.TOKEN_ENV})")
    parser.add_argument("--home", type=Path, help="state directory (default $MT_MAGIC_HOME or ~/.mt_magic)")
    return parser


def _catalog(args: argparse.Namespace) -> Catalog:
    from mt_magic.catalog.client import CatalogConfig, open_catalog

    token = args.token_file.read_text().strip() if args.token_file else os.environ.get(embedded.TOKEN_ENV)
    url = args.url
    if url is None:
        server = embedded.running_server(args.home)
        if server is None:
            raise MtMagicError(
                f"no catalog server runs in {embedded.mt_home(args.home)}",
                fix="start it (python -m mt_magic.catalog start), or name a server with --url",
            )
        url, token = server.uri, token or server.token
    properties = {"uri": url, **({"token": token} if token else {})}
    return open_catalog(CatalogConfig("mt_access", properties))


def _on(args: argparse.Namespace) -> Securable:
    if args.catalog:
        return CATALOG
    if args.namespace:
        return namespace(*args.namespace.split("."))
    if args.table:
        return table(*args.table.split("."))
    raise MtMagicError("grants: say what the grant is on", fix="add --catalog, --namespace NS or --table NS.TABLE")


def _required(value: str | None, what: str, command: str) -> str:
    if not value:
        raise MtMagicError(
            f"{command}: {what} is missing", fix=f"python -m mt_magic.catalog {command} … {what.upper()}"
        )
    return value


def _show_token(name: str, token: str, out: Path | None) -> str:
    if out is None:
        return f"token of {name} (shown once; keep it in a 0600 file or a secret store):\n{token}"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return f"token of {name} written to {out} (mode 0600)"


def _principals(client: AccessClient, args: argparse.Namespace) -> str:
    if args.action == "list":
        rows = client.request("GET", "principals")["principals"]
        return "\n".join(
            f"{p['name']:<24} {p['kind']:<8} {'REVOKED' if p['revoked-ms'] else 'active':<8} roles: "
            f"{', '.join(p['roles']) or '-'}"
            for p in rows
        )
    name = _required(args.name, "name", f"principals {args.action}")
    if args.action == "create":
        answer = client.request("POST", "principals", {"name": name, "kind": args.kind})
        return f"created {args.kind} {name}; " + _show_token(name, answer["token"], args.out)
    if args.action == "rotate":
        answer = client.request("POST", f"principals/{name}/rotate", {})
        return f"rotated {name}: its old token no longer works; " + _show_token(name, answer["token"], args.out)
    client.request("POST", f"principals/{name}/revoke", {})
    return f"revoked {name}: its token no longer works (rotate gives it a new one)"


def _roles(client: AccessClient, args: argparse.Namespace) -> str:
    if args.action == "list":
        rows = client.request("GET", "roles")["roles"]
        return "\n".join(f"{r['name']:<24} principals: {', '.join(r['principals']) or '-'}" for r in rows)
    name = _required(args.name, "role", f"roles {args.action}")
    if args.action == "create":
        client.request("POST", "roles", {"name": name})
        return f"created role {name}"
    if args.action == "drop":
        client.request("DELETE", f"roles/{name}")
        return f"dropped role {name} with its grants"
    principal = _required(args.principal, "principal", f"roles {args.action}")
    client.request("POST", f"roles/{name}/members", {"principal": principal, "member": args.action == "add"})
    return f"gave role {name} to {principal}" if args.action == "add" else f"took role {name} from {principal}"


def _grants(client: AccessClient, args: argparse.Namespace) -> str:
    if args.action == "list":
        rows = client.request("GET", "grants", params={"role": args.role} if args.role else None)["grants"]
        return "\n".join(f"{g['role']:<24} {g['privilege']:<14} on {Securable.from_json(g['on'])}" for g in rows)
    role = _required(args.role, "role", f"grants {args.action}")
    privilege = parse_privilege(_required(args.privilege, "privilege", f"grants {args.action}"))
    on = _on(args)
    body = {"role": role, "privilege": privilege.value, "on": on.to_json()}
    client.request("POST", "grants" if args.action == "add" else "grants/revoke", body)
    if args.action == "add":
        return f"granted {privilege.value} on {on} to role {role}"
    return f"revoked {privilege.value} on {on} from role {role}"


def run(args: argparse.Namespace) -> str:
    """Run one of :data:`COMMANDS`; returns what to print.

    Raises:
        MtMagicError: the server refused (:class:`~mt_magic.catalog.errors.NotGrantedError` names the grant missing),
            or the command lacks an argument.
    """
    client = AccessClient(_catalog(args))
    if args.command == "principals":
        return _principals(client, args)
    if args.command == "roles":
        return _roles(client, args)
    if args.command == "grants":
        return _grants(client, args)
    entries = client.audit(table=args.table, principal=args.principal, limit=args.limit)
    return "\n".join(audit_lines(entries)) or "(no changes recorded)"

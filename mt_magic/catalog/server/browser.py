"""What keeps a web page out of the catalog server, as Jupyter Server keeps it out of a kernel.

A page in the user's browser can send a "simple" cross-site request to a loopback port without asking first: a
``POST`` whose body is ``text/plain`` or a form. And by DNS rebinding (its own name re-pointed at 127.0.0.1) it
can send anything and read the answers, but its request still says the page's name in ``Host``. So:

* a ``POST``/``PUT``/``PATCH`` must say ``Content-Type: application/json`` (else 415): a cross-site page cannot
  send that type without a CORS preflight, which this server never grants (it sends no CORS headers at all);
* the ``Host`` must be a loopback name, an IP address (a page served from an address is that server itself),
  the bound host or one named with ``--allow-host`` (else 403).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from mt_magic.catalog.server.errors_http import error_response
from mt_magic.loopback import LOOPBACK_NAMES

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
ANY_HOST = "*"


def host_name(header: str) -> str:
    """The name in a ``Host`` header, without its port or IPv6 brackets, lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names a server bound to ``bound`` answers: the loopback names, ``bound`` and ``extra``
    (``*`` in ``extra``: any)."""
    return frozenset(host_name(h) if h != ANY_HOST else h for h in (*LOOPBACK_NAMES, bound, *extra))


class BrowserGuard:
    """ASGI middleware refusing requests a web page could have made (see the module)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                await error_response(*refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        headers = dict(scope["headers"])
        host = host_name(headers.get(b"host", b"").decode("latin-1"))
        if host and ANY_HOST not in self.hosts and host not in self.hosts and not _is_address(host):
            return (
                403,
                "ForbiddenException",
                f"Host {host!r} is not one this catalog server answers to (a page re-pointing its own name at this "
                "address is refused); use 127.0.0.1, localhost or another IP address, or start the server with "
                f"--allow-host {host}",
            )
        if scope["method"] in BODY_METHODS:
            media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
            if media != b"application/json":
                shown = media.decode("latin-1") or "none"
                return (
                    415,
                    "UnsupportedMediaTypeException",
                    f"Content-Type {shown!r} is not accepted: send the body as JSON with "
                    "'Content-Type: application/json'",
                )
        return None

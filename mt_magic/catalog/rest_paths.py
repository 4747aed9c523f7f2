"""Table and namespace names in REST paths as Iceberg's Java client writes them.

Iceberg's Java REST client (Spark's) form-encodes each path part (``RESTUtil.encodeString``: a space becomes
``+``, a ``+`` becomes ``%2B``) and Iceberg's reference server form-decodes them. ASGI servers only
percent-decode paths, so without this a table named ``a b`` is created (its name travels in the JSON body)
but Spark cannot load it (``GET …/tables/a+b`` finds no ``a+b``). pyiceberg sends a space as ``%20``, which
both decodings agree on; a literal ``+`` in a name is refused by mt_magic (``sql.names``) for that reason.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote


class FormEncodedPaths:
    """ASGI middleware: read ``+`` in a request path as a space, as Iceberg's reference server does."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        raw = scope.get("raw_path") if scope.get("type") == "http" else None
        if raw and b"+" in raw:
            raw = raw.replace(b"+", b"%20")
            scope = {**scope, "raw_path": raw, "path": unquote(raw.decode("latin-1"))}
        await self.app(scope, receive, send)

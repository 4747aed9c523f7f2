"""What every request goes through before a route sees it: path decoding and bounded, parsed bodies.

* Paths are decoded the way Iceberg's Java client encodes them (``RESTUtil.encodeString`` is
  ``application/x-www-form-urlencoded``: a space is ``+``, a slash in a name is ``%2F``). Routes match the
  decoded path with greedy parameters, so a name may contain ``/`` whether the client encoded it (Java) or
  not (pyiceberg sends names as they are).
* Bodies are read up to :data:`MAX_BODY_BYTES` and parsed only when nested at most :data:`MAX_JSON_DEPTH`
  deep, so neither a huge nor a deeply nested body can exhaust the server: both are a 4xx.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote_plus

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from mt_magic.catalog.server.errors_http import BadRequest, RestError, error_response

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 128
_STRINGS = re.compile(rb'"(?:[^"\\]+|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


class RestPathDecoding:
    """ASGI middleware: ``scope["path"]`` of ``/v1/…`` requests decoded from the raw path, ``+`` as space."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw and raw.startswith(b"/v1/"):
            try:
                path = unquote_plus(raw.decode("latin-1"), errors="strict")
            except UnicodeDecodeError:
                message = "Invalid request path: its percent-encoded bytes are not UTF-8; encode names as UTF-8"
                await error_response(400, "BadRequestException", message)(scope, receive, send)
                return
            scope = {**scope, "path": path}
        await self.app(scope, receive, send)


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, refused with 413 as soon as it is longer than ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(int(declared), limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> RestError:
    return RestError(
        413, "RequestTooLargeException", f"Request body too large: {size} bytes or more, at most {limit} accepted"
    )


def json_depth(raw: bytes, limit: int) -> int | None:
    """The byte offset where JSON nesting first exceeds ``limit`` levels, ``None`` if it never does."""
    depth = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', raw)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return match.start()
        else:
            depth -= 1
    return None


def parse_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> object:
    """Decode a request body, turning any decoding problem into a 400 with the reason and the place."""
    if not raw.strip():
        raise BadRequest("Invalid request body: it is empty, a JSON object was expected")
    too_deep = json_depth(raw, max_depth)
    if too_deep is not None:
        raise BadRequest(f"Invalid request body: JSON nested more than {max_depth} levels deep (near byte {too_deep})")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"Invalid request body: not valid JSON ({exc})") from exc
    except RecursionError:
        raise BadRequest(f"Invalid request body: JSON nested more than {max_depth} levels deep") from None
    if b"\\u" in raw:  # an escape may encode a lone UTF-16 surrogate, which no file or database can store
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode()
            raise BadRequest(
                f"Invalid request body: a string holds a lone surrogate ({bad}); send valid Unicode"
            ) from None
    return data

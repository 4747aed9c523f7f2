"""Every failure of the REST catalog server as the spec's ``IcebergErrorResponse``.

Clients (Java's ``ErrorHandlers``, pyiceberg's ``_handle_non_200_response``) decide what to raise from the
status code and the ``type`` string, so both must match the spec exactly. The mapping from exceptions to
(status, type) lives in one table, :data:`_EXCEPTION_STATUS`; nothing else in the server builds error
bodies by hand.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError as PydanticValidationError
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ValidationError,
)
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)

BAD_REQUEST = "BadRequestException"
# What pyiceberg raises, instead of a ValidationError, on input shapes it does not expect (its model
# validators index dicts, its deserializers raise TypeError). Caught only where client input is parsed or
# applied, and answered with a 400 that names the input.
INPUT_FAULTS = (TypeError, AttributeError, LookupError, RecursionError, NotImplementedError)


class RestError(Exception):
    """A request the server refuses with a given status and spec error ``type``."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


class BadRequest(RestError):
    """Malformed or invalid input: 400 ``BadRequestException``."""

    def __init__(self, message: str) -> None:
        super().__init__(400, BAD_REQUEST, message)


class ViewAlreadyExistsError(Exception):
    """A view (or a table) already has the name a new view wants."""


_EXCEPTION_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (NoSuchTableError, 404, "NoSuchTableException"),
    (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (NoSuchViewError, 404, "NoSuchViewException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (ViewAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (CommitFailedException, 409, "CommitFailedException"),
    # pyiceberg raises these for metadata that breaks Iceberg's rules (unknown snapshot, bad schema id, ...).
    # The catalog database refused a value (too long for its column, a NUL byte): the input's fault.
    (DataError, 400, BAD_REQUEST),
    (ValidationError, 400, BAD_REQUEST),
    (ValueError, 400, BAD_REQUEST),
)

_HTTP_STATUS_TYPE = {
    400: BAD_REQUEST,
    401: "NotAuthorizedException",
    403: "ForbiddenException",
    404: "NotFoundException",
    405: "MethodNotAllowedException",
    406: "UnsupportedOperationException",
}


def error_response(status: int, error_type: str, message: str) -> JSONResponse:
    """The spec's error body: ``{"error": {"message", "type", "code"}}`` (a 401 says which scheme it wants)."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    content = {"error": {"message": message, "type": error_type, "code": status}}
    return JSONResponse(status_code=status, content=content, headers=headers)


def status_for(exc: BaseException) -> tuple[int, str]:
    """(HTTP status, spec error type) for an exception raised while serving a request."""
    if isinstance(exc, RestError):
        return exc.status, exc.error_type
    for cls, status, error_type in _EXCEPTION_STATUS:
        if isinstance(exc, cls):
            return status, error_type
    return 500, "InternalServerError"


def describe_validation_error(exc: PydanticValidationError | RequestValidationError) -> str:
    """One line per problem, ``location: message`` (``updates[1].spec.fields[0].name``, list indexes in brackets
    as :func:`~mt_magic.catalog.server.wire.locate_fault` names them), without echoing large inputs back."""
    lines = []
    for err in exc.errors()[:8]:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.get("loc", ()) if p != "body").lstrip(
            "."
        )
        where = where or "body"
        lines.append(f"{where}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


def _message(exc: Exception) -> str:
    if isinstance(exc, RestError):
        return exc.message
    if isinstance(exc, DataError):  # not the statement and its parameters, just the database's reason
        reason = (str(exc.orig) or "invalid value").splitlines()[0]
        return f"Invalid value: the catalog database refused it ({reason})"
    return str(exc)


def install_error_handlers(app: FastAPI) -> None:
    """Route every exception through :func:`status_for` so no client ever sees a bare 500 or 422."""

    # Messages do not start with "Malformed request": Java's client adds that prefix to every 400 itself.
    @app.exception_handler(PydanticValidationError)
    async def _pydantic(_: Request, exc: PydanticValidationError) -> JSONResponse:
        return error_response(400, BAD_REQUEST, f"Invalid request body: {describe_validation_error(exc)}")

    @app.exception_handler(RequestValidationError)
    async def _request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, BAD_REQUEST, f"Invalid request: {describe_validation_error(exc)}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error_type = _HTTP_STATUS_TYPE.get(exc.status_code, "RESTException")
        detail = exc.detail if isinstance(exc.detail, str) else "HTTP error"
        return error_response(exc.status_code, error_type, f"{detail}: {request.method} {request.url.path}")

    async def _mapped(_: Request, exc: Exception) -> JSONResponse:
        status, error_type = status_for(exc)
        return error_response(status, error_type, _message(exc))

    # Known exceptions get their own handler (Starlette's ExceptionMiddleware answers without re-raising);
    # the catch-all below is the last resort for genuine server faults.
    handled: tuple[type[Exception], ...] = (RestError, *(cls for cls, _, _ in _EXCEPTION_STATUS))
    for cls in handled:
        app.add_exception_handler(cls, _mapped)

    @app.exception_handler(Exception)
    async def _any(request: Request, exc: Exception) -> JSONResponse:
        log.error("Unexpected error serving %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "InternalServerError", f"{type(exc).__name__}: {exc}")

"""Wire models of the Iceberg REST spec that pyiceberg does not ship, and identifier parsing.

pyiceberg's own pydantic models are reused wherever they exist (``CreateTableRequest``, ``TableResponse``,
``TableIdentifier``, ``TableRequirement``/``TableUpdate`` unions); the classes here fill the gaps:
request bodies the server must accept (a per-table commit without ``identifier``, transactions, renames,
namespace property updates) and the list/config responses.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, Field, field_validator
from pyiceberg.catalog.rest import CreateTableRequest
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import TableIdentifier
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import TableRequirement
from pyiceberg.typedef import IcebergBaseModel, Identifier

from mt_magic.catalog.server.errors_http import BadRequest, parse_json
from mt_magic.catalog.server.table_updates import AnyTableUpdate

NAMESPACE_SEPARATOR = "\x1f"
M = TypeVar("M", bound=BaseModel)


def parse_body(raw: bytes, model: type[M]) -> M:
    """Decode and validate a JSON body; any problem is a 400 naming the offending field."""
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise BadRequest(f"Invalid request body: expected a JSON object, got {type(data).__name__}")
    return model.model_validate(data)


def check_namespace(parts: list[str] | tuple[str, ...]) -> Identifier:
    """Validate namespace levels: at least one, none empty, none containing ``.`` (the SQL store joins on it)."""
    if not parts:
        raise BadRequest("Invalid namespace: it must have at least one level")
    for part in parts:
        if not isinstance(part, str) or not part.strip():
            raise BadRequest(f"Invalid namespace {list(parts)!r}: levels must be non-empty strings")
        if "." in part or "/" in part or NAMESPACE_SEPARATOR in part:
            raise BadRequest(f"Invalid namespace level {part!r}: '.', '/' and the unit separator are not allowed")
    return tuple(parts)


def namespace_from_path(value: str) -> Identifier:
    """A namespace path or query parameter (already percent-decoded): levels joined by the unit separator."""
    return check_namespace(value.split(NAMESPACE_SEPARATOR))


def check_name(name: str, what: str = "table") -> str:
    """Validate a table or view name."""
    if not isinstance(name, str) or not name.strip():
        raise BadRequest(f"Invalid {what} name {name!r}: it must be a non-empty string")
    if "/" in name or name in (".", ".."):
        raise BadRequest(f"Invalid {what} name {name!r}: it names a directory in the warehouse, '/' is not allowed")
    return name


def identifier(namespace: Identifier, name: str, what: str = "table") -> Identifier:
    """A full identifier tuple (namespace levels + name), validated."""
    return (*check_namespace(list(namespace)), check_name(name, what))


def identifier_from_wire(ident: TableIdentifier, what: str = "table") -> Identifier:
    """A full identifier tuple from the spec's ``TableIdentifier`` object."""
    return identifier(tuple(ident.namespace.root), ident.name, what)


def identifier_to_wire(ident: Identifier) -> dict[str, Any]:
    """The spec's ``TableIdentifier`` JSON for an identifier tuple."""
    return {"namespace": list(ident[:-1]), "name": ident[-1]}


def display(ident: Identifier) -> str:
    """Human-readable dotted name for messages."""
    return ".".join(ident)


class CreateTableBody(CreateTableRequest):
    """pyiceberg's ``CreateTableRequest`` with the spec's optional fields really optional (Java omits them)."""

    location: str | None = Field(default=None)
    partition_spec: PartitionSpec | None = Field(alias="partition-spec", default=None)
    write_order: SortOrder | None = Field(alias="write-order", default=None)


class CreateNamespaceBody(IcebergBaseModel):
    """``CreateNamespaceRequest``."""

    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesBody(IcebergBaseModel):
    """``UpdateNamespacePropertiesRequest``."""

    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class CommitTableBody(IcebergBaseModel):
    """``CommitTableRequest``; Java's per-table commit omits ``identifier`` (the path names the table)."""

    identifier: TableIdentifier | None = None
    requirements: tuple[TableRequirement, ...] = Field(default_factory=tuple)
    updates: tuple[AnyTableUpdate, ...] = Field(default_factory=tuple)


class CommitTransactionBody(IcebergBaseModel):
    """``CommitTransactionRequest``: several table commits applied all-or-nothing."""

    table_changes: list[CommitTableBody] = Field(alias="table-changes")

    @field_validator("table_changes")
    @classmethod
    def _identifiers_present(cls, changes: list[CommitTableBody]) -> list[CommitTableBody]:
        for index, change in enumerate(changes):
            if change.identifier is None:
                raise ValueError(f"table-changes[{index}] has no identifier; every change in a transaction needs one")
        return changes


class RenameBody(IcebergBaseModel):
    """``RenameTableRequest`` (also used for views)."""

    source: TableIdentifier
    destination: TableIdentifier


class RegisterBody(IcebergBaseModel):
    """``RegisterTableRequest`` / ``RegisterViewRequest``."""

    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool = False


def page(items: list[Any], page_token: str | None, page_size: int | None) -> tuple[list[Any], str | None]:
    """Offset-based paging: without a ``pageToken`` everything in one response (as the spec requires).

    Returns:
        The page and the next token (``None`` on the last page).

    Raises:
        BadRequest: the token is not one this server issued, or the page size is not positive.
    """
    if page_size is not None and page_size < 1:
        raise BadRequest(f"Invalid pageSize {page_size}: it must be at least 1")
    if page_token is None:
        return items, None
    try:
        start = int(page_token) if page_token else 0
    except ValueError:
        raise BadRequest(f"Invalid pageToken {page_token!r}: use the next-page-token of a previous response") from None
    if start < 0:
        raise BadRequest(f"Invalid pageToken {page_token!r}")
    end = len(items) if page_size is None else min(start + page_size, len(items))
    return items[start:end], (str(end) if end < len(items) else None)

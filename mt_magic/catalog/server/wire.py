"""Wire models of the Iceberg REST spec that pyiceberg does not ship, and identifier parsing.

pyiceberg's own pydantic models are reused wherever they exist (``CreateTableRequest``, ``TableResponse``,
``TableIdentifier``, ``TableRequirement``/``TableUpdate`` unions); the classes here fill the gaps:
request bodies the server must accept (a per-table commit without ``identifier``, transactions, renames,
namespace property updates) and the list/config responses.
"""

from __future__ import annotations

from typing import Any, TypeVar, get_args

from pydantic import BaseModel, Field, TypeAdapter, field_validator
from pydantic.errors import PydanticSchemaGenerationError
from pyiceberg.catalog.rest import CreateTableRequest
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import TableIdentifier
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import TableRequirement
from pyiceberg.typedef import IcebergBaseModel, Identifier

from mt_magic.catalog.server.edge import parse_json
from mt_magic.catalog.server.errors_http import INPUT_FAULTS, BadRequest
from mt_magic.catalog.server.names import NAMESPACE_SEPARATOR, check_level, namespace_key
from mt_magic.catalog.server.table_updates import AnyTableUpdate

M = TypeVar("M", bound=BaseModel)


def parse_body(raw: bytes, model: type[M]) -> M:
    """Decode and validate a JSON body; any problem is a 400 naming the offending field."""
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise BadRequest(f"Invalid request body: expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except INPUT_FAULTS as exc:
        where = locate_fault(model, data)
        raise BadRequest(f"Invalid request body: {where} cannot be read ({type(exc).__name__}: {exc})") from None


def _faults(annotation: Any, value: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value)
    except INPUT_FAULTS:
        return True
    except (ValueError, PydanticSchemaGenerationError):
        return False
    return False


def locate_fault(model: type[BaseModel], data: dict[str, Any]) -> str:
    """The field (and list index) whose value makes a model validator crash, e.g. ``updates[2]``."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in data or not _faults(field.annotation, data[key]):
            continue
        args = get_args(field.annotation)
        if isinstance(data[key], list) and args:
            for index, item in enumerate(data[key]):
                if _faults(args[0], item):
                    return f"{key}[{index}]"
        return key
    for key in data:  # a model-level validator crashed: the key whose absence avoids the crash
        if not _faults(model, {k: v for k, v in data.items() if k != key}):
            return str(key)
    return "the body"


def check_namespace(parts: object) -> Identifier:
    """Validate namespace levels: at least one, each a non-empty string without control characters.

    Dots, slashes, spaces and non-ASCII are allowed (see :mod:`mt_magic.catalog.server.names`).
    """
    if not isinstance(parts, list | tuple) or not parts:
        raise BadRequest(f"Invalid namespace {parts!r}: it must be a list of at least one level")
    namespace = tuple(check_level(part, "namespace level") for part in parts)
    namespace_key(namespace)
    return namespace


def namespace_from_path(value: str) -> Identifier:
    """A namespace path or query parameter (already percent-decoded): levels joined by the unit separator."""
    return check_namespace(value.split(NAMESPACE_SEPARATOR))


def check_name(name: object, what: str = "table") -> str:
    """Validate a table or view name (any non-empty string without control characters)."""
    return check_level(name, f"{what} name")


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

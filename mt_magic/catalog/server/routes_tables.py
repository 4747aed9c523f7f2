"""Table routes: list, create (and ``stage-create``), load, exists, commit, drop, rename, register, metrics,
and the multi-table ``/v1/transactions/commit``."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Response
from pyiceberg.catalog.rest import TableResponse
from pyiceberg.table import CommitTableResponse
from pyiceberg.table.metadata import TableMetadata

from mt_magic.catalog.privileges import Privilege
from mt_magic.catalog.privileges import table as table_object
from mt_magic.catalog.server import audit
from mt_magic.catalog.server.authz import Authorized, Caller, authorize
from mt_magic.catalog.server.commits import refs_only
from mt_magic.catalog.server.errors_http import BadRequest
from mt_magic.catalog.server.locations import table_places
from mt_magic.catalog.server.service import CatalogService, raw_body, service
from mt_magic.catalog.server.storage_credentials import VENDED, VendedCredentials, delegation_wanted
from mt_magic.catalog.server.tables_store import TableChange
from mt_magic.catalog.server.wire import (
    CommitTableBody,
    CommitTransactionBody,
    CreateTableBody,
    RegisterBody,
    RenameBody,
    identifier,
    identifier_from_wire,
    identifier_to_wire,
    namespace_from_path,
    page,
    parse_body,
    parse_json,
)

router = APIRouter(prefix="/v1", dependencies=[Depends(authorize)])
Svc = Annotated[CatalogService, Depends(service)]
Body = Annotated[bytes, Depends(raw_body)]
Delegation = Annotated[str | None, Header(alias="x-iceberg-access-delegation")]
TABLE = "/namespaces/{namespace:path}/tables/{table:path}"
TABLE_ETAGS = "/mt/table-etags"
"""mt_magic's extension (not in the spec): every table's ETag in one answer; clients of other servers fall back."""


def _json(model: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    # serialize_as_any: v3 metadata's snapshots carry row-lineage fields pyiceberg's Snapshot model lacks
    content = model.model_dump_json(serialize_as_any=True)
    return Response(content=content, status_code=status, media_type="application/json", headers=headers)


def _etag(location: str, snapshots: str) -> str:
    return '"' + hashlib.sha256(f"{location}|{snapshots}".encode()).hexdigest()[:32] + '"'


def _load_result(
    location: str | None,
    metadata: TableMetadata,
    etag: str | None = None,
    credentials: VendedCredentials | None = None,
) -> Response:
    config = dict(credentials.config) if credentials is not None else {}
    result = TableResponse.model_validate({"metadata_location": location, "metadata": metadata, "config": config})
    content = result.model_dump_json(serialize_as_any=True, exclude={"storage_credentials"})
    if credentials is not None:  # the spec's field, added here: pyiceberg 0.10 has no model field for it
        content = content[:-1] + ',"storage-credentials":' + json.dumps(credentials.to_wire()) + "}"
    return Response(content=content, media_type="application/json", headers={"ETag": etag} if etag else None)


def _vend(
    svc: CatalogService, caller: Caller, ident: tuple[str, ...], metadata: TableMetadata, delegation: str | None
) -> VendedCredentials | None:
    """Scoped credentials for the table's folders when the request asks for them and the server has a store that
    issues them: read and write with WRITE on the table, read only otherwise; none without READ_DATA (the lease
    table, which every principal may load). A 403 for folders that reach another object's (a table made before
    :mod:`~mt_magic.catalog.server.own_places`). Each one handed out is audited (``credentials-vended``: read or
    write, the prefix, the expiry)."""
    if svc.vendor is None or not delegation_wanted(delegation):
        return None
    if not caller.holds(Privilege.READ_DATA, table_object(*ident)):
        return None  # the lease table: every principal may load it, its folder's credentials need the grant
    svc.tables.check_own_places(ident, metadata.location, metadata.properties)  # a table made before the rule
    write = caller.holds(Privilege.WRITE, table_object(*ident))
    try:
        vended = svc.vendor.vend(caller.principal, table_places(metadata.location, metadata.properties), write)
    except ValueError:
        return None  # a table outside S3 (an allowed local location): nothing to scope
    access = "write" if write else "read"
    audit.record_now(
        svc.catalog.engine,
        "credentials-vended",
        table_object(*ident),
        access=access,
        prefix=vended.prefix,
        expires_at_ms=vended.expires_at_ms,
    )
    return vended


@router.post(TABLE + "/metrics", status_code=204)
def report_metrics(svc: Svc, namespace: str, table: str, raw: Body) -> Response:
    if not isinstance(parse_json(raw), dict):
        raise BadRequest("Invalid request body: a metrics report must be a JSON object")
    identifier(namespace_from_path(namespace), table)
    return Response(status_code=204)


@router.get(TABLE + "/credentials")
def load_credentials(svc: Svc, caller: Authorized, namespace: str, table: str) -> dict[str, Any]:
    """The spec's ``loadCredentials``: fresh scoped credentials for a table (READ_DATA; write access with WRITE), e.g.
    when the ones a load gave expire; none (an empty list) on a server that vends none."""
    ident = identifier(namespace_from_path(namespace), table)
    _, metadata = svc.tables.load(ident)
    vended = _vend(svc, caller, ident, metadata, VENDED)
    return {"storage-credentials": vended.to_wire() if vended is not None else []}


@router.get("/namespaces/{namespace:path}/tables")
def list_tables(
    svc: Svc,
    caller: Authorized,
    namespace: str,
    page_token: Annotated[str | None, Query(alias="pageToken")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize")] = None,
) -> dict[str, Any]:
    readable = [i for i in svc.tables.list_tables(namespace_from_path(namespace)) if caller.reads(i)]
    items, token = page(readable, page_token, page_size)
    return {"identifiers": [identifier_to_wire(i) for i in items], "next-page-token": token}


@router.post("/namespaces/{namespace:path}/tables")
def create_table(svc: Svc, caller: Authorized, namespace: str, raw: Body, delegation: Delegation = None) -> Response:
    body = parse_body(raw, CreateTableBody)
    ident = identifier(namespace_from_path(namespace), body.name)
    if body.stage_create:
        staged = svc.tables.new_metadata(ident, body)
        return _load_result(None, staged, credentials=_vend(svc, caller, ident, staged, delegation))
    location, metadata = svc.tables.create(ident, body)
    credentials = _vend(svc, caller, ident, metadata, delegation)
    return _load_result(location, metadata, _etag(location, "all"), credentials)


@router.get(TABLE)
def load_table(
    svc: Svc,
    caller: Authorized,
    namespace: str,
    table: str,
    snapshots: Literal["all", "refs"] = "all",
    if_none_match: Annotated[str | None, Header()] = None,
    delegation: Delegation = None,
) -> Response:
    ident = identifier(namespace_from_path(namespace), table)
    location, metadata = svc.tables.load(ident)
    etag = _etag(location, snapshots)
    fresh_credentials = svc.vendor is not None and delegation_wanted(delegation)  # a 304 would keep the old ones
    if (
        if_none_match is not None
        and not fresh_credentials
        and etag in {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    ):
        return Response(status_code=304, headers={"ETag": etag})
    credentials = _vend(svc, caller, ident, metadata, delegation)
    return _load_result(location, refs_only(metadata) if snapshots == "refs" else metadata, etag, credentials)


@router.get(TABLE_ETAGS)
def table_etags(svc: Svc, caller: Authorized, namespace: Annotated[str | None, Query()] = None) -> dict[str, Any]:
    """Not in the Iceberg REST spec (mt_magic's own): every table's ``ETag`` as :func:`load_table` sends it, in one
    answer — so a client that asks who reads a table (DROP's dependents) revalidates the catalog in one request
    and loads only the tables that changed. ``namespace`` (levels joined by ``%1F``): its tables only (not nested)."""
    wanted = namespace_from_path(namespace) if namespace is not None else None
    if wanted is not None:
        svc.namespaces.require(wanted)
    return {
        "tables": [
            {"identifier": identifier_to_wire(ident), "etag": _etag(location, "all")}
            for ident, location in svc.tables.locations(wanted)
            if caller.reads(ident)
        ]
    }


@router.head(TABLE, status_code=204)
def table_exists(svc: Svc, namespace: str, table: str) -> Response:
    svc.tables.load(identifier(namespace_from_path(namespace), table))
    return Response(status_code=204)


@router.post(TABLE)
def commit_table(svc: Svc, namespace: str, table: str, raw: Body) -> Response:
    body = parse_body(raw, CommitTableBody)
    ident = identifier(namespace_from_path(namespace), table)
    if body.identifier is not None and identifier_from_wire(body.identifier) != ident:
        raise BadRequest(f"The body names table {identifier_from_wire(body.identifier)} but the path names {ident}")
    [(location, metadata)] = svc.tables.commit([TableChange(ident, body.requirements, body.updates)])
    return _json(CommitTableResponse.model_validate({"metadata_location": location, "metadata": metadata}))


@router.delete(TABLE, status_code=204)
def drop_table(
    svc: Svc, namespace: str, table: str, purge: Annotated[bool, Query(alias="purgeRequested")] = False
) -> Response:
    svc.tables.drop(identifier(namespace_from_path(namespace), table), purge=purge)
    return Response(status_code=204)


@router.post("/namespaces/{namespace:path}/register")
def register_table(svc: Svc, namespace: str, raw: Body) -> Response:
    body = parse_body(raw, RegisterBody)
    ident = identifier(namespace_from_path(namespace), body.name)
    metadata = svc.tables.register(ident, body.metadata_location, body.overwrite)
    return _load_result(body.metadata_location, metadata)


@router.post("/tables/rename", status_code=204)
def rename_table(svc: Svc, raw: Body) -> Response:
    body = parse_body(raw, RenameBody)
    svc.tables.rename(identifier_from_wire(body.source), identifier_from_wire(body.destination))
    return Response(status_code=204)


@router.post("/transactions/commit", status_code=204)
def commit_transaction(svc: Svc, raw: Body) -> Response:
    body = parse_body(raw, CommitTransactionBody)
    changes = [
        TableChange(identifier_from_wire(c.identifier), c.requirements, c.updates)  # type: ignore[arg-type]
        for c in body.table_changes
    ]
    svc.tables.commit(changes)
    return Response(status_code=204)

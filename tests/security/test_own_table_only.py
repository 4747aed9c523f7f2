"""A table's files are reached only through that table (issue 47).

Before: ``register`` accepted another table's metadata under a new name, so a purging drop of the alias deleted the
original's files; and a purge compared paths as text, so a symbolic link inside the table's folder led it to delete a
file outside the warehouse. Now the alias is refused (403, the other table named) and a purge deletes only files
that, links resolved, lie inside the table's own folders.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import ForbiddenError

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    home = tmp_path_factory.mktemp("own_table_home")
    server = ensure_embedded_server(home)
    try:
        rest = open_catalog(CatalogConfig("mt", {"uri": server.uri, "token": server.token}))
        rest.create_namespace("own")
        yield rest
    finally:
        stop_embedded_server(home)


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def local(location: str) -> Path:
    return Path(urlparse(location).path)


def test_a_registered_alias_is_refused_and_the_original_is_untouched(catalog: Catalog) -> None:
    original = catalog.create_table("own.original", SCHEMA)
    original.append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    original = catalog.load_table("own.original")
    before = files_of(local(original.location()))
    with pytest.raises(ForbiddenError, match=r"reaches the files of table own\.original .*Fix: load own\.original"):
        catalog.register_table("own.alias", original.metadata_location)
    with pytest.raises(ForbiddenError, match="reaches the files of table own.original"):  # inside its folder
        catalog.register_table("own.alias", original.metadata_location.replace("/metadata/", "/metadata/./"))
    assert ("own", "alias") not in catalog.list_tables("own")
    assert files_of(local(original.location())) == before
    # A table's metadata no other table uses (its own, once dropped without purge) registers as before.
    catalog.drop_table("own.original")
    assert catalog.register_table("own.restored", original.metadata_location).scan().to_arrow().num_rows == 3
    assert files_of(local(original.location())) == before


def test_a_purge_never_follows_a_link_out_of_the_tables_folder(catalog: Catalog, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.parquet"
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), victim)
    content = victim.read_bytes()
    table = catalog.create_table("own.linked", SCHEMA)
    own = table.catalog.load_table("own.linked")
    own.append(pa.table({"id": [1]}, schema=SCHEMA))
    data = local(own.location()) / "data"
    os.symlink(outside, data / "link")
    own.add_files([f"{data}/link/victim.parquet"])
    own_file = next(p for p in data.glob("*.parquet"))
    assert own.scan().to_arrow().num_rows == 2
    catalog.purge_table("own.linked")
    assert victim.read_bytes() == content  # left where the link led
    assert not own_file.exists()  # the table's own files are purged

"""Deleting a dropped table's files (``purgeRequested``), never outside its own folders.

The files to delete are named by the table's own metadata, which clients wrote: a manifest may list any
path. Each file is deleted only when :class:`~mt_magic.catalog.server.locations.StorageRoots` contains it *and*,
its symbolic links resolved, it lies inside the table's own location (or a folder its ``write.*.path`` properties
name): another table's files, or a link inside the warehouse leading out of it, are never reached. The rest are
counted and logged, never touched. A purge runs after the catalog row is gone, so a storage
failure while purging is logged and does not undo the drop.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

from pyiceberg.io import FileIO
from pyiceberg.manifest import ManifestFile
from pyiceberg.table.metadata import TableMetadata

from mt_magic.catalog.server.locations import StorageRoots, inside_any, table_places

log = logging.getLogger(__name__)


class _Deleter:
    def __init__(self, io: FileIO, roots: StorageRoots, places: list[str]) -> None:
        self.io, self.roots, self.places = io, roots, places
        self.done: set[str] = set()
        self.refused = 0

    def may_delete(self, path: str) -> bool:
        return self.roots.contains(path) and inside_any(path, self.places)

    def delete(self, paths: Iterable[str], kind: str) -> None:
        for path in paths:
            if path in self.done:
                continue
            self.done.add(path)
            if not self.may_delete(path):
                self.refused += 1
                continue
            try:
                self.io.delete(path)
            except OSError as exc:
                log.warning("Failed to delete %s file %s: %s", kind, path, exc)


def _manifests(io: FileIO, metadata: TableMetadata, deleter: _Deleter) -> list[ManifestFile]:
    manifests: list[ManifestFile] = []
    for snapshot in metadata.snapshots:
        if deleter.may_delete(snapshot.manifest_list):
            manifests.extend(m for m in snapshot.manifests(io) if deleter.may_delete(m.manifest_path))
    return manifests


def purge_table(io: FileIO, roots: StorageRoots, location: str, metadata: TableMetadata) -> None:
    """Delete every file of a dropped table that lies inside ``roots`` and inside the table's own folders."""
    deleter = _Deleter(io, roots, table_places(metadata.location, metadata.properties))
    try:
        manifests = _manifests(io, metadata, deleter)
        for manifest in manifests:
            entries = manifest.fetch_manifest_entry(io, discard_deleted=False)
            deleter.delete((e.data_file.file_path for e in entries), "data")
        deleter.delete({m.manifest_path for m in manifests}, "manifest")
        deleter.delete({s.manifest_list for s in metadata.snapshots}, "manifest list")
        deleter.delete({f.statistics_path for f in metadata.statistics}, "statistics")
        deleter.delete({f.statistics_path for f in metadata.partition_statistics}, "partition statistics")
        deleter.delete({e.metadata_file for e in metadata.metadata_log} | {location}, "metadata")
    except Exception as exc:  # the drop is already committed: report, do not fail the request
        log.warning("Purge of table at %s stopped early: %s: %s", metadata.location, type(exc).__name__, exc)
    if deleter.refused:
        log.warning(
            "Purge of table at %s left %d file(s) outside the storage roots or the table's own folders",
            metadata.location,
            deleter.refused,
        )
    if roots.contains(metadata.location):
        _remove_empty_dirs(metadata.location)


def _remove_empty_dirs(table_location: str) -> None:
    """Remove the table's now-empty local directories (never a file, never a non-empty dir)."""
    parsed = urlparse(table_location)
    if parsed.scheme not in ("", "file"):
        return
    root = Path(parsed.path)
    if not root.is_dir():
        return
    for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass

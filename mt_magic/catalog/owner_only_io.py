"""pyiceberg's PyArrow FileIO whose local files are their owner's only from creation (0600, folders 0700).

pyiceberg's local writes (data files, manifests, manifest lists of the commits a client makes itself: an in-process
refresh, a table written with pyiceberg) are created with the process's umask, 0644 on most machines. Catalogs opened
by :func:`mt_magic.catalog.client.open_catalog` with a local warehouse use this FileIO (``py-io-impl``), which
creates each file and folder under :func:`mt_magic.loopback.owner_only` (umask 077 for that call only: the file's
bytes are written after, outside the lock). Reads and other file systems are pyiceberg's own.
"""

from __future__ import annotations

from typing import Any

import pyarrow
from pyarrow.fs import FileSystem
from pyiceberg.io.pyarrow import PyArrowFileIO, PyArrowLocalFileSystem

from mt_magic.loopback import owner_only


class OwnerOnlyLocalFileSystem(PyArrowLocalFileSystem):
    """The local file system pyiceberg uses, creating files and folders 0600/0700."""

    def open_output_stream(self, path: str, *args: Any, **kwargs: Any) -> pyarrow.NativeFile:
        with owner_only():  # the parent folders pyiceberg makes first, and the file itself
            return super().open_output_stream(path, *args, **kwargs)

    def create_dir(self, path: str, *args: Any, **kwargs: Any) -> None:
        with owner_only():
            super().create_dir(path, *args, **kwargs)


class OwnerOnlyFileIO(PyArrowFileIO):
    """:class:`~pyiceberg.io.pyarrow.PyArrowFileIO` with :class:`OwnerOnlyLocalFileSystem` for local paths."""

    def _initialize_local_fs(self) -> FileSystem:
        return OwnerOnlyLocalFileSystem()

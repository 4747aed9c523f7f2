"""Which connection the API uses: the kernel's (the magics' own, once ``%load_ext mt_magic`` ran) or this process's.

A script, a test or an Airflow task has no kernel: the first call connects with
:func:`~mt_magic.runtime.connection.connect` on the magics' defaults and environment (``MT_MAGIC_CATALOG``, else the
catalog ``mt``; ``MT_MAGIC_NAMESPACE``, else ``default``; Spark from ``MT_MAGIC_SPARK_*``), with an *inline* refresh
manager: every refresh runs within the call that asks for it, no thread keeps tables fresh behind the script's
back and no refresh lease is taken (a kernel or ``python -m mt_magic run`` does that).
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import TYPE_CHECKING

from mt_magic.kernel import kernel_session

if TYPE_CHECKING:
    from mt_magic.runtime.connection import Connection
    from mt_magic.runtime.service import MaterializedTables

CATALOG_ENV = "MT_MAGIC_CATALOG"
NAMESPACE_ENV = "MT_MAGIC_NAMESPACE"


class _ProcessConnection:
    """This process's own connection, opened on first use and closed at exit (or by :func:`close`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: Connection | None = None

    def get(self) -> Connection:
        with self._lock:
            if self._connection is None:
                from mt_magic.runtime.connection import ConnectionSettings, connect

                settings = ConnectionSettings(
                    catalog_name=os.environ.get(CATALOG_ENV, "mt"),
                    namespace=os.environ.get(NAMESPACE_ENV, "default"),
                    start_manager=False,
                )
                self._connection = connect(settings)
                atexit.register(self.close)
            return self._connection

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


_PROCESS = _ProcessConnection()


def service() -> MaterializedTables:
    """The service the API calls: the kernel's when the extension is loaded, else this process's (connects once).

    Raises:
        RuntimeSetupError: Java, Spark or the Iceberg jars are missing.
        CatalogError: the catalog cannot be opened.
    """
    session = kernel_session()
    connection = session.connection if session is not None else _PROCESS.get()
    return connection.service


def close() -> None:
    """Close this process's own connection (the kernel's belongs to the extension: ``%unload_ext`` closes it)."""
    _PROCESS.close()

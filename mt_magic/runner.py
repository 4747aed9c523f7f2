"""The headless runner: the notebook defines, this service keeps fresh — with the very same manager.

``python -m mt_magic run [--catalog NAME]`` connects like the extension does, discovers every materialized
table in the catalog, and refreshes them on schedule until SIGINT/SIGTERM. Each refresh event is one log
line on stdout.
"""

from __future__ import annotations

import signal
import sys
import threading

from mt_magic.errors import MtMagicError
from mt_magic.runtime.connection import ConnectionSettings, connect
from mt_magic.runtime.session import SparkSettings
from mt_magic.runtime.status import EventKind, RefreshEvent

LOGGED = {EventKind.TABLE_ADDED, EventKind.TABLE_REMOVED, EventKind.REFRESH_STARTED, EventKind.REFRESH_SUCCEEDED,
          EventKind.REFRESH_FAILED}


def _log(event: RefreshEvent) -> None:
    if event.kind in LOGGED:
        extra = f" {event.message}" if event.message else ""
        print(f"{event.at:%Y-%m-%dT%H:%M:%SZ} {event.kind.value:<18} {event.table}{extra}", flush=True)


def run_headless(catalog: str, namespace: str, master: str | None, max_concurrent: int) -> int:
    """Run until a signal arrives; returns the process exit code."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    spark = SparkSettings(master=master) if master else SparkSettings()
    try:
        conn = connect(ConnectionSettings(catalog, namespace, spark, max_concurrent, use_namespace=False))
    except MtMagicError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    assert conn.manager is not None
    unsubscribe = conn.manager.subscribe(_log)
    tables = ", ".join(s.name for s in conn.manager.statuses()) or "none yet"
    print(f"mt_magic runner: catalog {catalog}, keeping fresh: {tables}", flush=True)
    try:
        stop.wait()
    finally:
        unsubscribe()
        conn.close()
    print("mt_magic runner: stopped", flush=True)
    return 0

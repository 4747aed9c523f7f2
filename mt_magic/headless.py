"""The headless runner: the notebook defines, this service keeps fresh — with the very same manager.

``python -m mt_magic run [--catalog NAME]`` connects like the extension does, discovers every materialized
table in the catalog, and refreshes them on schedule until SIGINT/SIGTERM. Each refresh event is one log
line on stdout. The first signal stops cleanly (running refreshes are cancelled and commit nothing; they run
again at the next start); a second one exits at once.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from mt_magic.errors import MtMagicError
from mt_magic.runtime.connection import ConnectionSettings, connect
from mt_magic.runtime.spark.session import SparkSettings
from mt_magic.runtime.status import EventKind, RefreshEvent

LOGGED = {
    EventKind.TABLE_ADDED,
    EventKind.TABLE_REMOVED,
    EventKind.REFRESH_STARTED,
    EventKind.REFRESH_SUCCEEDED,
    EventKind.REFRESH_FAILED,
}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_TIMEOUT_S = 20.0


def _log(event: RefreshEvent) -> None:
    if event.kind in LOGGED:
        extra = f" {event.message}" if event.message else ""
        print(f"{event.at:%Y-%m-%dT%H:%M:%SZ} {event.kind.value:<18} {event.table}{extra}", flush=True)


def _stop_on_signals(stop: threading.Event) -> None:
    """The first SIGINT/SIGTERM asks for a clean stop; the default handlers come back for a second one."""
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handle(signum: int, frame: FrameType | None) -> None:
        print(f"mt_magic runner: {signal.Signals(signum).name} received, stopping", flush=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop.set()

    for sig in STOP_SIGNALS:
        signal.signal(sig, handle)


def run_headless(catalog: str, namespace: str, master: str | None, max_concurrent: int) -> int:
    """Run until a signal arrives; returns the process exit code."""
    spark = SparkSettings(master=master) if master else SparkSettings()
    settings = ConnectionSettings(catalog, namespace, spark, max_concurrent, use_namespace=False, refresher="runner")
    try:
        conn = connect(settings, subscribers=(_log,))  # subscribed first: discovery and catch-up are logged too
    except MtMagicError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    assert conn.manager is not None
    stop = threading.Event()
    _stop_on_signals(stop)  # after connect: a new SparkContext installs a SIGINT handler that cancels every job
    tables = ", ".join(s.name for s in conn.service.statuses()) or "none yet"
    print(f"mt_magic runner: catalog {catalog}, keeping fresh: {tables}", flush=True)
    try:
        stop.wait()
    finally:
        clean = conn.close(timeout=STOP_TIMEOUT_S)
    if not clean:
        print(f"mt_magic runner: refreshes still running after {STOP_TIMEOUT_S:.0f}s; exiting anyway", flush=True)
    print("mt_magic runner: stopped", flush=True)
    return 0

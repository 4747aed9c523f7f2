"""What the refresh engine calls: :meth:`RefreshLineage.started` before a refresh, then :meth:`~RefreshLineage.
completed` or :meth:`~RefreshLineage.failed`. Each call only queues the event (its catalog reads and its sending
happen on the emitter's thread), so it costs a refresh microseconds whether or not the consumer is up."""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.errors import MtMagicError
from mt_magic.lineage import settings
from mt_magic.lineage.emitter import BackgroundEmitter
from mt_magic.lineage.events import LineageRun, Producer, build_event
from mt_magic.lineage.facets import RefreshSummary
from mt_magic.lineage.naming import parent_of

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient

log = logging.getLogger(__name__)

__all__ = ["RefreshLineage", "RefreshSummary", "lineage_from_environment"]


def _version() -> str:
    try:
        return version("mt_magic")
    except PackageNotFoundError:
        return "0"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class RefreshLineage:
    """Sends a START and a COMPLETE or FAIL event per refresh through ``client``, from a background thread."""

    def __init__(
        self,
        client: OpenLineageClient,
        catalog: MaterializedCatalog,
        producer: Producer,
        emitter: BackgroundEmitter | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.client = client
        self.catalog = catalog
        self.producer = producer
        self.emitter = emitter or BackgroundEmitter()
        self.clock = clock
        atexit.register(self.close)  # a one-shot process sends its last events before it exits

    def started(self, table: str, trigger: str, scheduled_time: datetime) -> LineageRun:
        from openlineage.client.uuid import generate_new_uuid

        now = self.clock()
        run = LineageRun(str(generate_new_uuid(now)), table, trigger, scheduled_time, now)
        self._queue(run, "START", now)
        return run

    def completed(self, run: LineageRun, summary: RefreshSummary) -> None:
        self._queue(run, "COMPLETE", self.clock(), summary=summary)

    def failed(self, run: LineageRun, error: BaseException) -> None:
        message = error.without_rows() if isinstance(error, MtMagicError) else str(error)  # no row of a table
        text = message.splitlines()[0] if message else type(error).__name__
        self._queue(run, "FAIL", self.clock(), error=f"{type(error).__name__}: {text}")

    def _queue(
        self, run: LineageRun, state: str, at: datetime, summary: RefreshSummary | None = None, error: str | None = None
    ) -> None:
        def send() -> None:
            from openlineage.client.event_v2 import RunState

            event = build_event(self.catalog, self.producer, run, RunState(state), at, summary, error)
            self.client.emit(event)

        self.emitter.submit(send)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait for the queued events to be sent (tests and short-lived processes)."""
        return self.emitter.flush(timeout)

    def close(self, timeout: float = 2.0) -> bool:
        """Send what is queued (at most ``timeout`` s), then stop the thread and the client's transport."""
        done = self.emitter.close(timeout)
        try:
            self.client.close(timeout)
        except Exception as exc:  # a transport that cannot close cleanly: nothing else to do
            log.debug("mt_magic lineage: closing the client: %s", exc)
        return done


def lineage_from_environment(
    catalog: MaterializedCatalog, env: Mapping[str, str] | None = None
) -> RefreshLineage | None:
    """Lineage as configured (:mod:`.settings`), or ``None`` when it is off or unusable (then a warning says why)."""
    env = os.environ if env is None else env
    client = settings.open_client(env)
    if client is None:
        return None
    parent = parent_of(env.get("OPENLINEAGE_PARENT_ID", ""))
    return RefreshLineage(client, catalog, Producer(settings.namespace(env), _version(), parent))

"""A background thread that emits lineage events, so a refresh only hands over a callable (microseconds).

The queue is bounded: when the consumer is down and the queue is full, a new event is dropped (and counted, one
warning), never waited for. Each event is built on this thread too (the catalog reads it needs), and a failure to
build or send one is logged and skipped: lineage never fails a refresh. After a failure the events of the next
``pause`` seconds are dropped without a try (the HTTP transport's retries make each try against a consumer that is
down last seconds), so the queue holds no stale backlog when the consumer comes back.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

Job = Callable[[], None]
CAPACITY = 256
"""Events waiting to be sent: a few hours of refreshes of a busy kernel while a consumer restarts."""
PAUSE_S = 30.0
"""After an event could not be sent, how long later events are dropped without a try."""


class BackgroundEmitter:
    """Owns one daemon thread (started on the first event, stopped by :meth:`close`)."""

    def __init__(self, capacity: int = CAPACITY, pause: float = PAUSE_S) -> None:
        self._queue: queue.Queue[Job | None] = queue.Queue(capacity)
        self._pause = pause
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.dropped = 0
        """Events dropped: the queue was full, or sending paused after a failure."""
        self.failed = 0
        """Events that could not be built or sent."""

    def submit(self, job: Job) -> bool:
        """Queue ``job`` (build and send one event); ``False`` when it was dropped (closed, or the queue is full)."""
        with self._lock:
            if self._closed:
                return False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mt-lineage", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("mt_magic lineage: the event queue is full (is the consumer down?); dropping events")
            return False
        return True

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                if time.monotonic() < self._paused_until:
                    self.dropped += 1
                    continue
                job()
            except Exception as exc:  # lineage never fails a refresh, nor stops the next event
                self.failed += 1
                self._paused_until = time.monotonic() + self._pause
                log.warning(
                    "mt_magic lineage: an event was not sent (%s: %s); dropping events for %.0f s",
                    type(exc).__name__,
                    exc,
                    self._pause,
                )
            finally:
                self._queue.task_done()

    def flush(self, timeout: float) -> bool:
        """Wait until every queued event was handled; ``True`` if that happened within ``timeout`` s."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, name="mt-lineage-flush", daemon=True).start()
        return done.wait(timeout)

    def close(self, timeout: float = 2.0) -> bool:
        """Stop after the queued events (waiting at most ``timeout`` s); idempotent."""
        with self._lock:
            self._closed, thread = True, self._thread
        if thread is None:
            return True
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return False
        thread.join(timeout)
        return not thread.is_alive()

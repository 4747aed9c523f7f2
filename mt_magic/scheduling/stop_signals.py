"""Ctrl-C, SIGTERM and SIGHUP as one exception in a launcher that starts child processes.

A launcher that starts servers in sessions of their own (so a terminal's Ctrl-C does not reach them half-way) must
stop them itself on every way it can be told to stop. :class:`StopSignals` turns SIGINT, SIGTERM and SIGHUP into
:class:`StopRequested` in the main thread, so one ``try``/``finally`` stops what was started. Inside
:meth:`StopSignals.deferred` (a child being started and recorded) a signal is held and raised on leaving it, so no
child is ever started without being recorded; once :meth:`StopSignals.stopping` began, further signals are ignored
so a second Ctrl-C cannot interrupt the clean-up.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequested(BaseException):
    """The launcher was told to stop (SIGINT, SIGTERM or SIGHUP); ``signum`` says which.

    A ``BaseException``, like ``KeyboardInterrupt``: ``except Exception`` in the code it interrupts lets it through.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopSignals:
    """The process's handlers of :data:`SIGNALS` while installed (``with StopSignals() as signals:``)."""

    def __init__(self) -> None:
        self._held: int | None = None
        self._deferring = False
        self._stopping = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._stopping:
            return
        if self._deferring:
            self._held = self._held or signum
            return
        raise StopRequested(signum)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold a signal until the block ends (start a child and record it here), then raise it."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self._held is not None and not self._stopping:
            raise StopRequested(self._held)

    def stopping(self) -> None:
        """From now on the signals are ignored: the clean-up runs to its end."""
        self._stopping = True

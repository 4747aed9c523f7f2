"""The base of every live view: a ``VBox`` that follows the manager's events and falls back to HTML/text.

Threading contract (STYLE §10): events arrive on the manager's thread and ticks on the updater thread;
both only *set traits* of child widgets, under the view's lock. Nothing here displays or prints.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import ipywidgets as widgets

from mt_magic.runtime.status import RefreshEvent, TableStatus
from mt_magic.widgets.saved_output import SavedOutput

if TYPE_CHECKING:
    from mt_magic.widgets.actions import TableActions


class StatusFeed(Protocol):
    """Where views read statuses and events: the service (or, in tests, the manager itself)."""

    def status(self, name: str) -> TableStatus: ...

    def statuses(self) -> list[TableStatus]: ...

    def subscribe(self, callback: Callable[[RefreshEvent], None]) -> Callable[[], None]: ...

    def version(self) -> int:
        """Grows with every change a status could show; unchanged: only the clock moved."""
        ...


class ViewHost(Protocol):
    """What a view needs from the registry that owns it (:class:`~mt_magic.widgets.live.LiveViews`)."""

    feed: StatusFeed
    actions: TableActions
    clock: Callable[[], datetime]
    preview_rows: Callable[[], int]

    def submit(self, task: Callable[[], None]) -> None: ...

    def shown(self, view: FallbackBundle) -> None: ...

    def forget(self, view: LiveView) -> None: ...


def close_tree(widget: widgets.Widget) -> None:
    """Close a widget and every widget inside it (boxes do not close their children themselves)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    parts = [getattr(widget, name, None) for name in ("layout", "style")]
    widget.close()
    for part in parts:
        if isinstance(part, widgets.Widget):
            part.close()


class FallbackBundle:
    """Adds readable ``text/plain`` and ``text/html`` to a widget's mime bundle.

    JupyterLab with the widget manager renders the live widget (its mime type ranks first); terminal
    IPython, nbconvert and front ends without the manager pick the HTML or the text. Displayed with a display
    id, so the saved fallbacks follow the view (:mod:`~mt_magic.widgets.saved_output`).
    """

    _saved: SavedOutput | None = None

    def view_host(self) -> ViewHost | None:
        """The registry told of each display (it updates the display at the cell's end); ``None``: none."""
        return None

    def _ipython_display_(self) -> None:
        if self._saved is None:
            self._saved = SavedOutput(self._repr_mimebundle_)
        self._saved.show()
        host = self.view_host()
        if host is not None:
            host.shown(self)

    def settle(self) -> None:
        """Called on the kernel's main thread at the end of the cell that displayed the view: finish what its
        saved output should show (a card loads its preview there if the updater has not yet)."""

    def republish(self) -> bool:
        """Send the current fallbacks to the view's displays if they changed; whether it sent."""
        return self._saved is not None and self._saved.update()

    def fallback_html(self) -> str:
        raise NotImplementedError

    def fallback_text(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = widgets.Widget._repr_mimebundle_(self, **kwargs) or {}
        bundle["text/plain"] = self.fallback_text()
        bundle["text/html"] = self.fallback_html()
        return bundle

    def __repr__(self) -> str:
        return self.fallback_text()


class LiveView(FallbackBundle, widgets.VBox):
    """A view registered with :class:`LiveViews` under ``key``, subscribed to the manager until closed."""

    lock: threading.RLock
    closed = True
    """Until construction completes: ipywidgets' ``__del__`` calls :meth:`close` even on a half-built view."""

    def __init__(self, live: ViewHost, key: str, children: list[widgets.Widget]) -> None:
        self.lock = threading.RLock()
        self._unsubscribe: Callable[[], None] | None = None
        super().__init__(children=children)
        self.live = live
        self.key = key
        self._on_close: list[Callable[[LiveView], None]] = []
        self.closed = False
        self._unsubscribe = live.feed.subscribe(self._event)

    def view_host(self) -> ViewHost | None:
        return self.live

    def _event(self, event: RefreshEvent) -> None:
        if not self.closed:
            self.on_event(event)

    def on_event(self, event: RefreshEvent) -> None:
        """Called on the manager's thread with every event; set traits only."""

    def tick(self) -> None:
        """Called on the updater thread every tick (times and staleness move without events)."""

    def when_closed(self, callback: Callable[[LiveView], None]) -> None:
        self._on_close.append(callback)

    def close(self) -> None:
        """Unsubscribe from the manager, leave the registry, close every child widget. Idempotent."""
        if "lock" not in self.__dict__:  # never constructed (``__del__`` of a failed ``__init__``)
            return
        with self.lock:
            if self.closed:
                return
            self.closed = True
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        self.live.forget(self)
        for callback in self._on_close:
            callback(self)
        for child in self.children:
            close_tree(child)
        layout = self.layout
        super().close()
        layout.close()

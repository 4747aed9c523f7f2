"""The saved form of a displayed view: its ``text/html`` and ``text/plain`` kept current in the cell's output.

nbconvert, GitHub and a notebook reopened without a kernel show the fallbacks stored with the cell's output.
Returned through the displayhook they stay as they were when the magic returned (the preview still loading),
so a view displays itself with a display id (:meth:`SavedOutput.show`) and sends the whole bundle again —
the widget's model id unchanged — whenever what it shows changes (:meth:`SavedOutput.update`): at the cell's
end on the kernel's main thread, inside the cell's execution, so nbclient records it; and at each change of
state after, from the manager's or the updater's thread (JupyterLab routes an update by its display id alone).
Terminal IPython prints every display again, so only a kernel gets updates.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from IPython.core.getipython import get_ipython
from IPython.display import display, update_display

FALLBACKS = ("text/html", "text/plain")


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (whose front end replaces a display in place)."""
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class SavedOutput:
    """The displays of one view: their ids and the fallbacks last sent to them."""

    def __init__(self, bundle: Callable[[], dict[str, Any]]) -> None:
        self._bundle = bundle
        self._lock = threading.Lock()
        self.display_ids: list[str] = []
        self.sent: tuple[str, ...] | None = None
        """The ``text/html`` and ``text/plain`` last sent (``None`` before the first display)."""

    def show(self) -> None:
        """Display the view's bundle under a new display id."""
        bundle = self._bundle()
        display_id = uuid.uuid4().hex
        with self._lock:
            self.display_ids.append(display_id)
            self.sent = tuple(bundle.get(m, "") for m in FALLBACKS)
        display(bundle, raw=True, display_id=display_id)

    def update(self) -> bool:
        """Send the current bundle to every display of the view if its fallbacks changed; whether it sent."""
        if not in_kernel():
            return False
        bundle = self._bundle()
        fallbacks = tuple(bundle.get(m, "") for m in FALLBACKS)
        with self._lock:
            if not self.display_ids or fallbacks == self.sent:
                return False
            self.sent = fallbacks
            display_ids = list(self.display_ids)
        for display_id in display_ids:
            update_display(bundle, raw=True, display_id=display_id)
        return True

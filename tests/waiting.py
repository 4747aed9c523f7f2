"""The tests' one way to wait on a condition: poll it, with a bound that only stops a hang (no timed assertion)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)

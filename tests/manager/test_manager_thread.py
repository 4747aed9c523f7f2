"""The real scheduler thread: started only by start(), woken by control calls, gone after stop()."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from manager_helpers import MINUTE, T0, continuous

from mt_magic.errors import RefreshCancelledError
from mt_magic.runtime.manager import refresh_manager as manager_module
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.vocabulary import JobState, RefreshTrigger

pytestmark = pytest.mark.timeout(20)


def manager_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mt-refresh")]


class AtexitRecorder:
    def __init__(self) -> None:
        self.registered: list[object] = []

    def register(self, fn: object) -> None:
        self.registered.append(fn)

    def unregister(self, fn: object) -> None:
        self.registered.remove(fn)


@pytest.fixture
def atexit_hooks(monkeypatch: pytest.MonkeyPatch) -> AtexitRecorder:
    recorder = AtexitRecorder()
    monkeypatch.setattr(manager_module, "atexit", recorder)
    return recorder


@pytest.fixture
def threaded(backend: FakeBackend, clock: FakeClock, atexit_hooks: AtexitRecorder) -> Iterator[RefreshManager]:
    """A manager with its real thread and worker pool (on the fake clock), stopped afterwards."""
    quiet = timedelta(hours=1)  # no periodic wake-ups: only control calls and finished jobs wake the loop
    manager = RefreshManager(backend, clock=clock, rediscover_every=quiet, staleness_every=quiet)
    yield manager
    assert manager.stop(timeout=5)


def test_no_thread_before_start_and_none_after_stop(
    backend: FakeBackend, clock: FakeClock, atexit_hooks: AtexitRecorder
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = RefreshManager(backend, clock=clock)
    assert manager_threads() == [] and not manager.running and backend.calls == []

    manager.start()
    thread = manager._thread
    manager.start()
    assert manager._thread is thread and manager.running
    assert [t.name for t in manager_threads()] == ["mt-refresh-manager"]
    assert atexit_hooks.registered == [manager._stop_at_exit]
    assert backend.count("discover") == 1  # start discovered synchronously
    assert manager.status("c.db.t").state is JobState.SCHEDULED

    assert manager.stop(timeout=5)
    assert manager.stop(timeout=5)
    assert not manager.running and manager_threads() == []
    assert atexit_hooks.registered == []


def test_a_control_call_wakes_the_waiting_loop(threaded: RefreshManager, backend: FakeBackend) -> None:
    backend.put(continuous("c.db.t", 10 * MINUTE, last_refresh_at=T0))
    delivered_on: set[str] = set()
    threaded.subscribe(lambda event: delivered_on.add(threading.current_thread().name))
    threaded.start()
    assert threaded.wait_idle(timeout=5)  # nothing due for ten (fake) minutes: the loop waits
    outcome = threaded.refresh_now("c.db.t").result(timeout=2)
    assert outcome.snapshot_id is not None
    assert threaded.wait_idle(timeout=5)
    assert [r.trigger for r in backend.requests] == [RefreshTrigger.MANUAL]
    assert delivered_on == {"mt-refresh-manager"}


def test_suspend_cancels_a_blocked_run_on_the_worker_thread(threaded: RefreshManager, backend: FakeBackend) -> None:
    backend.put(continuous("c.db.t", MINUTE))
    backend.block("c.db.t")
    threaded.start()
    request = backend.wait_running("c.db.t")
    assert threaded.status("c.db.t").state is JobState.RUNNING

    threaded.suspend("c.db.t")
    assert threaded.wait_idle(timeout=5)
    status = threaded.status("c.db.t")
    assert (status.state, status.last_refresh, status.consecutive_failures) == (JobState.SUSPENDED, None, 0)
    assert backend.cancelled == [request.job_group]


def test_stop_cancels_running_jobs_and_fails_their_waiters(threaded: RefreshManager, backend: FakeBackend) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    backend.block("c.db.t")
    threaded.start()
    waiter = threaded.refresh_now("c.db.t")
    request = backend.wait_running("c.db.t")

    assert threaded.stop(timeout=5)
    assert backend.cancelled == [request.job_group]
    with pytest.raises(RefreshCancelledError, match="stopped"):
        waiter.result(timeout=1)
    assert manager_threads() == []


EXIT_SCRIPT = """
import sys
from mt_magic.testing import FakeBackend
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.status import ManagedTable
from mt_magic.vocabulary import RefreshMode
from datetime import timedelta

class Backend(FakeBackend):
    def cancel(self, job_group):
        print("cancelled", job_group, flush=True)
        super().cancel(job_group)

backend = Backend([ManagedTable("c.db.t", RefreshMode.CONTINUOUS, timedelta(minutes=1), None)], block_timeout=60)
backend.block("c.db.t")
manager = RefreshManager(backend)
manager.start()
backend.wait_running("c.db.t")
print("exiting with a refresh running", flush=True)
"""


def test_interpreter_exit_cancels_a_running_refresh_instead_of_waiting_for_it() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], cwd=root, capture_output=True, text=True, timeout=15)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["exiting with a refresh running", "cancelled mt-refresh:c.db.t:1"]


def test_an_idle_loop_waits_instead_of_spinning(threaded: RefreshManager, backend: FakeBackend) -> None:
    """Nothing due for ten (fake) minutes: the thread sleeps until then (a step per control call, not thousands
    a second, which kept a kernel's core busy with no table to refresh)."""
    backend.put(continuous("c.db.t", 10 * MINUTE, last_refresh_at=T0))
    steps: list[int] = []
    step = threaded.step
    threaded.step = lambda: (steps.append(1), step())[1]  # type: ignore[method-assign]
    threaded.start()
    assert threaded.wait_idle(timeout=5)
    threading.Event().wait(1.0)  # real time passes; the fake clock does not
    assert len(steps) <= 5, len(steps)

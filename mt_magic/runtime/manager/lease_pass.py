"""The scheduler's lease pass: what the manager wants from the lease map, its turn at it, and the consequences.

Called by the runner's step every :func:`lease_every` (sooner when a manual refresh waits for a lease), with the
manager's lock released during the catalog calls. A lease lost while its refresh runs (the catalog was out of reach
longer than the lease, and another process took it over) cancels that refresh: the new holder repeats it.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from mt_magic.errors import CatalogUnavailableError
from mt_magic.runtime.manager.lease_keeper import LeaseKeeper, LeaseWishes
from mt_magic.runtime.manager.state import Effects, SchedulerState
from mt_magic.runtime.status import EventKind

log = logging.getLogger(__name__)

MAX_LEASE_EVERY = timedelta(seconds=3)


def lease_every(keeper: LeaseKeeper) -> timedelta:
    """How often the map is read: a tenth of the lease's life, at most every few seconds (reads are cheap)."""
    return min(keeper.ttl / 10, MAX_LEASE_EVERY)


def lease_horizon(keeper: LeaseKeeper) -> timedelta:
    """How long before its next run a table's lease is taken: two lease lives, many lease passes."""
    return 2 * keeper.ttl


def wishes(state: SchedulerState, now: datetime, horizon: timedelta) -> LeaseWishes:
    """Every tracked table that is not suspended nor on another scheduler and may run within ``horizon`` (a run
    waits or comes due by then), and those running; the urgent ones have a manual refresh waiting.

    A lease exists only while a refresh may run: a daily table holds none most of the day, so the lease map, read
    and written at every pass, stays as small as what may run soon, not as large as the catalog. A run that comes
    due with no notice (a source changed under a table whose next run was further off) takes its lease at the next
    pass, within :func:`lease_every`.
    """
    entries = state.entries()
    soon = now + horizon
    wanted = frozenset(
        entry.name
        for entry in entries
        if not entry.suspended and not entry.elsewhere and (due := entry.next_due()) is not None and due <= soon
    )
    urgent = frozenset(entry.name for entry in entries if entry.manual_waiting())
    return LeaseWishes(wanted, urgent, frozenset(state.running_names()))


def lease_pass(state: SchedulerState, lock: threading.RLock, now: datetime) -> Effects:
    """Take this manager's turn at the lease map; an unreachable catalog pauses work like discovery does.

    Returns:
        The cancellations of refreshes whose lease another process now holds.
    """
    keeper = state.leases
    assert keeper is not None
    with lock:
        wanted = wishes(state, now, lease_horizon(keeper))
        before = {entry.name: keeper.holder_of(entry.name, now) for entry in state.entries()}
    try:
        keeper.sync(wanted, now)
    except CatalogUnavailableError as exc:
        with lock:
            state.next_lease_turn(now + lease_every(keeper))
            if not state.paused():
                state.pause(str(exc), now)
        return Effects()
    effects = Effects()
    with lock:
        state.next_lease_turn(now + lease_every(keeper))
        for name in state.running_names():
            holder = keeper.holder_of(name, now)
            if holder is not None and holder != keeper.holder:
                log.warning("the lease of %s was taken over by %s; cancelling this process's refresh", name, holder)
                effects.cancel_group(state.cancel_job(name, f"its lease was taken over by {holder}", requeue=True))
        for entry in state.entries():
            holder = keeper.holder_of(entry.name, now)
            if holder != before.get(entry.name):
                mine = " (this process)" if holder == keeper.holder else ""
                state.publish(EventKind.STATE_CHANGED, entry, now, f"refreshed by {holder or 'nobody'}{mine}")
            else:
                state.note_state(entry, now)
    return effects


def release(state: SchedulerState) -> None:
    """Give every lease back (the manager stops); best effort: unreleased leases expire on their own."""
    if state.leases is None:
        return
    try:
        state.leases.release_all()
    except Exception as exc:
        log.warning("releasing the refresh leases failed (they expire in %s): %s", state.leases.ttl, exc)

"""A table's refresh history with the staleness each refresh ended, for ``%mt history`` (metadata only).

Staleness before a refresh is, as everywhere, the refresh's start minus the commit time of the oldest source
change it was the first to reflect: the source snapshots after those the previous refresh consumed, up to
those this one consumed. A table's first refresh reflects every source change up to what it consumed, so its staleness
before is counted from the oldest of them, as the status counts it while the table waits for that refresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from mt_magic.runtime.status import RefreshRecord

if TYPE_CHECKING:
    from mt_magic.catalog.definitions import RefreshState
    from mt_magic.catalog.tables import TableInfo
    from mt_magic.runtime.refresh.engine import Engine


def refresh_history(engine: Engine, name: str, limit: int = 50) -> list[RefreshRecord]:
    """The table's refreshes, newest first, each with ``staleness_before`` where it can be known.

    Raises:
        NoSuchMaterializedTableError: ``name`` is not a materialized table.
    """
    catalog = engine.workspace.catalog
    info, definition = catalog.load_materialized(name)
    sources = {}
    for source in definition.upstream:
        try:
            sources[source] = catalog.load(source)
        except Exception:  # a dropped source: its changes cannot be dated any more
            continue
    states = [(s.snapshot_id, s.refresh_state) for s in info.snapshots if s.refresh_state is not None]
    before: dict[int, timedelta | None] = {}
    previous_states = [None, *(state for _, state in states)]
    for previous, (snapshot_id, state) in zip(previous_states, states, strict=False):
        before[snapshot_id] = _staleness_before(sources, previous, state)
    return [
        replace(r, staleness_before=before[r.snapshot_id]) if r.snapshot_id in before else r
        for r in engine.history(name, limit)
    ]


def _staleness_before(
    sources: dict[str, TableInfo],
    previous: RefreshState | None,
    current: RefreshState,
) -> timedelta | None:
    oldest = None
    for name, source in sources.items():
        consumed = previous.snapshot_of(name) if previous is not None else None  # the first: every change is new
        dated = source.data_changes(consumed, upto=current.snapshot_of(name))
        if dated is None:
            return None
        if current.snapshot_of(name) is None:
            dated = []
        if dated and (oldest is None or dated[0] < oldest):
            oldest = dated[0]
    if oldest is None or oldest > current.refresh_start:
        return timedelta(0)
    return current.refresh_start - oldest


def with_stall_marks(records: list[RefreshRecord], seen: Sequence[RefreshRecord]) -> list[RefreshRecord]:
    """``records`` (the catalog's) with the stall the watchdog of this process saw in the same commits (``seen``:
    the manager's recent runs), so a stalled run that finished keeps its mark in ``%mt history``."""
    stalls = {r.snapshot_id: r.stall for r in seen if r.stall is not None and r.snapshot_id is not None}
    return [replace(r, stall=stalls[r.snapshot_id]) if r.snapshot_id in stalls else r for r in records]

"""What to change where a refresh recomputed for a reason the user can change, and what it would save.

A CONTINUOUS table recomputes in full when its query or its sources rule incremental refresh out; the refresh
records why in its strategy line (``full: fallback — <the reason's sentence> …``, ``mt.strategy``). Some reasons
are the user's to change — ``NOT IN`` instead of ``NOT EXISTS``, an ORDER BY, a non-deterministic function.
:data:`ADVICE` maps each such :class:`~mt_magic.runtime.refresh.incremental.reasons.FallbackReason` to the change;
each piece of advice is meant to be tested true on a real table (the next refresh incremental; that test is not
in yet). :func:`recommend` reads a table's recent refreshes and, where they
were measured, puts an estimate of the saving beside it: the median of those recomputes against the median of the
table's own incremental refreshes (no incremental run measured: no estimate).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.runtime.status import RefreshRecord
from mt_magic.vocabulary import RefreshKind

FALLBACK_PREFIX = "full: fallback — "
"""How a recomputing refresh's strategy line starts (``refresh.run``), followed by its first reason's sentence."""

ADVICE: Mapping[FallbackReason, str] = {
    FallbackReason.NOT_IN_SUBQUERY: (
        "write NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k) instead of a.k NOT IN (SELECT b.k FROM b) with "
        "ALTER MATERIALIZED TABLE … AS (the same rows when neither key is NULL)"
    ),
    FallbackReason.ORDER_BY: (
        "drop the query's ORDER BY with ALTER MATERIALIZED TABLE … AS (a table keeps no order; order when reading)"
    ),
    FallbackReason.NONDETERMINISTIC: (
        "create the table again without rand(), uuid(), current_timestamp() and the like (DROP, then CREATE: "
        "ALTER … AS may only append columns) and compute them when reading it"
    ),
}
"""The change that makes a table's refreshes incremental again, for each reason the user can change. Not here:
a join key or window partition not shown (new tables keep it in a hidden key column, so they no longer recompute
for it), merge-on-read sources (read from their data files), and a large change fraction that recurs (its
advice, refreshing more often, is not tested yet)."""


@dataclass(frozen=True)
class Recommendation:
    """What to change about a table, and what its measured refreshes say it would save."""

    reason: FallbackReason
    change: str
    """The change to make (:data:`ADVICE`)."""
    recomputes: int
    """How many of the recent refreshes recomputed for this reason."""
    recompute: timedelta
    """Their median duration."""
    incremental: timedelta | None
    """The median duration of the table's own incremental refreshes; ``None``: none measured, so no estimate."""
    incremental_runs: int = 0

    @property
    def saving(self) -> timedelta | None:
        """The estimated time saved per refresh (``None``: no incremental run measured to estimate from)."""
        return None if self.incremental is None else max(self.recompute - self.incremental, timedelta(0))


def fallback_reason(strategy: str) -> FallbackReason | None:
    """The first reason a recomputing refresh recorded in its strategy line; ``None`` for any other line."""
    if not strategy.startswith(FALLBACK_PREFIX):
        return None
    said = strategy.removeprefix(FALLBACK_PREFIX)
    return next((reason for reason in FallbackReason if said.startswith(reason.sentence)), None)


def recommend(records: Sequence[RefreshRecord]) -> Recommendation | None:
    """The advice for a table from its refreshes (newest first), if its newest one recomputed for a reason the
    user can change; ``None`` otherwise."""
    done = [r for r in records if r.error is None and r.kind is not RefreshKind.NOOP]
    if not done:
        return None
    reason = fallback_reason(done[0].strategy)
    if reason is None or reason not in ADVICE:
        return None
    recomputes = [r.duration for r in done if fallback_reason(r.strategy) is reason]
    incremental = [r.duration for r in done if r.kind is RefreshKind.INCREMENTAL]
    return Recommendation(
        reason,
        ADVICE[reason],
        len(recomputes),
        statistics.median_low(recomputes),
        statistics.median_low(incremental) if incremental else None,
        len(incremental),
    )

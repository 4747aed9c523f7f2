"""What to change where a refresh recomputed for a reason the user can change, and what it would save.

A CONTINUOUS table recomputes in full when its query or its sources rule incremental refresh out, or when the
change is too large a part of its sources to apply; the refresh records why in its strategy line
(``full: fallback — <the reason's sentence> (<detail>) …``, ``mt.strategy``). Some reasons are the user's to
change — ``NOT IN`` instead of ``NOT EXISTS``, an ORDER BY, a non-deterministic function, and a change past
``'incremental.max-change-fraction'`` that recurs (refresh more often, so each refresh's change is smaller).
:data:`ADVICE` maps each such :class:`~mt_magic.runtime.refresh.incremental.reasons.FallbackReason` to the change;
``tests/integration/test_recommendations.py`` applies each piece of advice, as written (a large change: the advised
``SET FRESHNESS``), to a real table and shows the next refresh incremental and the table equal to its query.
:func:`recommend` reads a table's recent refreshes and, where they were measured, puts an estimate of the saving
beside it: the median of those recomputes against the median of the table's own incremental refreshes, as many of
them as take one recompute's place (no incremental run measured: no estimate).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from mt_magic.options import MAX_CHANGE
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.runtime.status import RefreshRecord
from mt_magic.sql.ddl.freshness import humanize
from mt_magic.sql.ddl.statements import Freshness, FreshnessUnit
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
    FallbackReason.CHEAPER_TO_RECOMPUTE: (
        "refresh more often, so each refresh changes less than the {limit} limit: ALTER MATERIALIZED TABLE … SET "
        "FRESHNESS = {freshness} (now {current}; its refreshes changed up to {changed} of the sources; at the "
        "same rate about {expected} each), or raise '" + MAX_CHANGE.key + "' above {changed_fraction} with "
        "CREATE OR ALTER MATERIALIZED TABLE … WITH (…) AS (the same query)"
    ),
}
"""The change that makes a table's refreshes incremental again, for each reason the user can change (a template
where the change depends on the measured refreshes: :func:`fraction_advice`). Not here: a join key or window
partition not shown (new tables keep it in a hidden key column, so they no longer recompute for it), merge-on-read
sources (read from their data files), and a keyed join's key recompute (``KEYS_COST``: its cost is not the
change's size, so refreshing more often does not help)."""

CHANGE_FRACTION = re.compile(r"\(changed (\d+)% of .*, past (\d+)%\)")
"""The detail ``planner.cheaper_to_recompute`` gives a change past the limit: ``(changed 40% of t, past 30%)``."""
RECENT = 10
"""How many of a table's newest refreshes that did work decide whether a large change "recurs"."""
HEADROOM = 0.8
"""The advised freshness aims at this share of the limit, so a change that varies a little still falls under."""


@dataclass(frozen=True)
class Recommendation:
    """What to change about a table, and what its measured refreshes say it would save."""

    reason: FallbackReason
    change: str
    """The change to make (:data:`ADVICE`, its template filled in)."""
    recomputes: int
    """How many of the recent refreshes recomputed for this reason."""
    recompute: timedelta
    """Their median duration."""
    incremental: timedelta | None
    """The median duration of the table's own incremental refreshes; ``None``: none measured, so no estimate."""
    incremental_runs: int = 0
    refreshes_instead: int = 1
    """How many incremental refreshes take the place of one recompute (more than one: refresh more often)."""

    @property
    def saving(self) -> timedelta | None:
        """The estimated time saved per recompute replaced (``None``: no incremental run measured to estimate
        from); negative where the more frequent incremental refreshes together cost more than the recompute."""
        if self.incremental is None:
            return None
        saved = self.recompute - self.refreshes_instead * self.incremental
        return max(saved, timedelta(0)) if self.refreshes_instead == 1 else saved


def fallback_reason(strategy: str) -> FallbackReason | None:
    """The first reason a recomputing refresh recorded in its strategy line; ``None`` for any other line."""
    if not strategy.startswith(FALLBACK_PREFIX):
        return None
    said = strategy.removeprefix(FALLBACK_PREFIX)
    return next((reason for reason in FallbackReason if said.startswith(reason.sentence)), None)


def change_fraction(strategy: str) -> tuple[float, float] | None:
    """(the change's fraction of its sources, the limit it passed) of a refresh that recomputed because the change
    was past ``'incremental.max-change-fraction'``; ``None`` for any other line (a keyed join's cost included)."""
    if fallback_reason(strategy) is not FallbackReason.CHEAPER_TO_RECOMPUTE:
        return None
    said = strategy.removeprefix(FALLBACK_PREFIX + FallbackReason.CHEAPER_TO_RECOMPUTE.sentence + " ")
    found = CHANGE_FRACTION.match(said)
    return None if found is None else (int(found[1]) / 100, int(found[2]) / 100)


def whole_freshness(target: timedelta) -> Freshness:
    """The largest unit holding at least three whole ones of ``target``, rounded down (at least 1 second)."""
    seconds = max(int(target.total_seconds()), 1)
    for unit in (FreshnessUnit.DAY, FreshnessUnit.HOUR, FreshnessUnit.MINUTE):
        if seconds // unit.seconds >= 3:
            return Freshness(seconds // unit.seconds, unit)
    return Freshness(seconds, FreshnessUnit.SECOND)


def fraction_advice(done: Sequence[RefreshRecord], freshness: timedelta | None) -> tuple[str, int] | None:
    """The filled-in advice for a change past the limit that recurs — in at least two and in most of the
    :data:`RECENT` newest refreshes — and how many refreshes at the advised freshness replace one recompute.

    The change per refresh grows with the time between refreshes, so the advised FRESHNESS is the current one
    scaled by the limit over the largest measured fraction (aiming at :data:`HEADROOM` of the limit), rounded
    down to a whole unit. ``None`` when it does not recur or the table has no freshness to scale.
    """
    window = done[:RECENT]
    measured = [f for f in (change_fraction(r.strategy) for r in window) if f is not None]
    if freshness is None or len(measured) < 2 or 2 * len(measured) <= len(window):
        return None
    changed = max(fraction for fraction, _ in measured)
    limit = min(limit for _, limit in measured)
    advised = whole_freshness(freshness * (HEADROOM * limit / changed))
    scale = advised.to_timedelta() / freshness
    change = ADVICE[FallbackReason.CHEAPER_TO_RECOMPUTE].format(
        limit=f"{limit:.0%}",
        freshness=advised.sql(),
        current=humanize(freshness),
        changed=f"{changed:.0%}",
        expected=f"{changed * scale:.0%}",
        changed_fraction=f"{changed:.2f}",
    )
    return change, max(math.ceil(freshness / advised.to_timedelta()), 1)


def recommend(records: Sequence[RefreshRecord], freshness: timedelta | None = None) -> Recommendation | None:
    """The advice for a table from its refreshes (newest first) and its FRESHNESS, if its newest refresh
    recomputed for a reason the user can change; ``None`` otherwise."""
    done = [r for r in records if r.error is None and r.kind is not RefreshKind.NOOP]
    if not done:
        return None
    reason = fallback_reason(done[0].strategy)
    if reason is None or reason not in ADVICE:
        return None
    change, instead = ADVICE[reason], 1
    if reason is FallbackReason.CHEAPER_TO_RECOMPUTE:
        if change_fraction(done[0].strategy) is None:
            return None
        advice = fraction_advice(done, freshness)
        if advice is None:
            return None
        change, instead = advice
    recomputes = [r.duration for r in done if fallback_reason(r.strategy) is reason]
    incremental = [r.duration for r in done if r.kind is RefreshKind.INCREMENTAL]
    return Recommendation(
        reason,
        change,
        len(recomputes),
        statistics.median_low(recomputes),
        statistics.median_low(incremental) if incremental else None,
        len(incremental),
        instead,
    )

"""Which hidden key columns a new definition's storage table carries: the row identity users do not show.

An outer, semi or anti join whose SELECT list leaves out the join key (``SELECT f.id, f.v, d.name … LEFT JOIN
…``, ``WHERE f.k IN (SELECT k FROM dims)``) would recompute in full on every change
(:attr:`~.reasons.FallbackReason.JOIN_KEY_NOT_SHOWN`). :func:`storage_query` appends the key the planner
would have asked the user to show (a preserved table's key column, else the COALESCE of the visible tables')
as a hidden column (:mod:`mt_magic.sql.query.hidden_keys`), exactly when that turns the plan incremental;
the statements store the result as the definition's expanded query, so every refresh — full, incremental, on
either engine — computes the column like any other, and the affected-key recompute finds the rows to replace
by it. Existing tables keep their layout: only CREATE and ALTER … AS call this.
"""

from __future__ import annotations

from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.runtime.refresh.incremental.shape import plan_query
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.hidden_keys import hidden_columns, with_hidden_keys, with_hidden_window_keys
from mt_magic.sql.query.parsed import Q

FIXED_BY_HIDDEN_KEYS = frozenset({FallbackReason.JOIN_KEY_NOT_SHOWN, FallbackReason.WINDOW_PARTITION_NOT_SHOWN})
"""Fallback reasons a hidden key column removes (the query's only reasons, or nothing is hidden)."""


def storage_query(expanded: Q, keep: int = 0) -> Q:
    """``expanded`` with the hidden key columns its plan needs to be incremental, or ``expanded`` unchanged
    (a query already incremental, or one that fails for another reason too).

    Args:
        keep: how many hidden key columns the table already has (ALTER … AS): while the new query has a join
            key, they stay even where it no longer needs them, so the table's layout only ever appends.
    """
    facts = analyze_query(expanded)
    plan = plan_query(facts)
    keys, windows = facts.join_keys, facts.window_keys
    if not keep and (plan.fallback is None or not set(plan.fallback.reasons) <= FIXED_BY_HIDDEN_KEYS):
        return expanded
    if keys is not None and keys.locator is not None:
        candidate = with_hidden_keys(expanded, [keys.locator])
    elif windows is not None and windows.partition and keys is None:
        candidate = with_hidden_window_keys(expanded, windows.partition)
    else:
        return expanded
    if len(hidden_columns(candidate)) < keep:
        return expanded
    return candidate if keep or plan_query(analyze_query(candidate)).fallback is None else expanded

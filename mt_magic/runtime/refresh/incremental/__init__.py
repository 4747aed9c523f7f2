"""Incremental refresh on Iceberg snapshots: the heart of CONTINUOUS mode.

A refresh reads each source's snapshot history between the snapshot the last refresh consumed and the one
pinned now (:mod:`.changes`), decides from the query's shape and that change which strategy is correct
(:mod:`.shape`, :mod:`.planner`), reads only the delta (:mod:`.delta`; :mod:`.merge_on_read` where delete
files keep Iceberg's changelog out), computes the new rows
(:mod:`.strategies`) and commits them with the new refresh state in one Iceberg snapshot (:mod:`.commit`).
When no strategy is correct it says why (:class:`FallbackReason`) and the refresh recomputes fully.

Public surface: :func:`explain` (``%mt explain``), :func:`mode_reason` (CREATE's card line), the
:class:`Strategy` and :class:`FallbackReason` enums; :func:`mt_magic.runtime.refresh.run.run_refresh` runs it.
"""

from __future__ import annotations

from mt_magic.runtime.refresh.incremental.explain import (
    Explanation,
    SourcePlan,
    explain,
    mode_reason,
    replanned_mode_reason,
    strict_violation,
)
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy

__all__ = [
    "Explanation",
    "Fallback",
    "FallbackReason",
    "SourcePlan",
    "Strategy",
    "explain",
    "mode_reason",
    "replanned_mode_reason",
    "strict_violation",
]

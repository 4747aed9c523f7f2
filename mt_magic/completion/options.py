"""The ``WITH (…)`` option keys completion offers, and their values, from where each option is defined."""

from __future__ import annotations

from functools import cache

TRUE_FALSE = ("true", "false")


@cache
def _known() -> dict[str, tuple[str, ...]]:
    from mt_magic.runtime.refresh.context import (
        ENGINE_OPTION,
        ENGINE_VALUES,
        INCREMENTAL_OPTION,
        INCREMENTAL_VALUES,
        MAX_CHANGE_OPTION,
    )
    from mt_magic.runtime.refresh.retention import MAX_AGE_MS, MIN_TO_KEEP
    from mt_magic.runtime.spark.semantics import ANSWER_SETTINGS
    from mt_magic.sql.ddl.options import CONVERT_OPTION, SCHEDULER_OPTION, SCHEDULERS

    known: dict[str, tuple[str, ...]] = {
        INCREMENTAL_OPTION: INCREMENTAL_VALUES,
        ENGINE_OPTION: ENGINE_VALUES,
        MAX_CHANGE_OPTION: (),
        SCHEDULER_OPTION: SCHEDULERS,
        CONVERT_OPTION: TRUE_FALSE,
        MAX_AGE_MS: (),
        MIN_TO_KEEP: (),
    }
    known.update({key: () for key in sorted(ANSWER_SETTINGS)})  # SQL settings a definition may pin
    return known


def option_keys() -> tuple[str, ...]:
    """Every known key, quoted as WITH takes it (``'incremental'``), mt_magic's own first."""
    return tuple(f"'{key}'" for key in _known())


def option_values(key: str) -> tuple[str, ...]:
    """The values ``key`` takes, quoted (none for a free value)."""
    return tuple(f"'{value}'" for value in _known().get(key, ()))

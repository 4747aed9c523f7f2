"""The ``WITH (…)`` option keys completion offers, and their values: the option registry's (CREATE's ``WITH``) and
the Spark run settings (``ALTER … RESUME WITH``), nothing else."""

from __future__ import annotations

from mt_magic.options import option, registered
from mt_magic.options.settings import RUN_SETTINGS


def option_keys(resume: bool = False) -> tuple[str, ...]:
    """Every declared key, quoted as WITH takes it (``'incremental'``), mt_magic's own first; ``resume``: the keys
    ``ALTER … RESUME WITH`` takes instead (Spark settings of the resumed refreshes' speed)."""
    keys = RUN_SETTINGS if resume else (opt.key for opt in registered())
    return tuple(f"'{key}'" for key in keys)


def option_values(key: str) -> tuple[str, ...]:
    """The values ``key`` takes, quoted (none for a free value or a key mt_magic does not declare)."""
    declared = option(key)
    return () if declared is None else tuple(f"'{value}'" for value in declared.values)

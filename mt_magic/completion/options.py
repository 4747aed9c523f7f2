"""The ``WITH (…)`` option keys completion offers, and their values: the option registry's, nothing else."""

from __future__ import annotations

from mt_magic.options import option, registered


def option_keys() -> tuple[str, ...]:
    """Every declared key, quoted as WITH takes it (``'incremental'``), mt_magic's own first."""
    return tuple(f"'{opt.key}'" for opt in registered())


def option_values(key: str) -> tuple[str, ...]:
    """The values ``key`` takes, quoted (none for a free value or a key mt_magic does not declare)."""
    declared = option(key)
    return () if declared is None else tuple(f"'{value}'" for value in declared.values)

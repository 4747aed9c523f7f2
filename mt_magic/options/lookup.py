"""The lookups every reader, checker and completer asks of the declared options: :func:`option` by key,
:func:`registered` (all of them), :func:`problems` (the grammar's check of a WITH list) and :func:`misspelt`.

They sit above :mod:`~mt_magic.options.declared`, which sits above :mod:`~mt_magic.options.registry`, so no
import runs back up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mt_magic.errors import closest_names
from mt_magic.options.declared import NEIGHBOURS, OPTIONS
from mt_magic.options.registry import Option, OptionProblem


def option(key: str) -> Option[Any] | None:
    """The declared option ``key`` names (case-insensitively); ``None`` for a key mt_magic gives no meaning to."""
    return OPTIONS.get(key.lower())


def registered() -> tuple[Option[Any], ...]:
    """Every declared option, mt_magic's own first, then the pinned Spark SQL settings."""
    return tuple(OPTIONS.values())


def problems(pairs: Iterable[tuple[str, str]]) -> list[tuple[int, OptionProblem]]:
    """The bad values among ``pairs`` (key, value), and the keys that look like a declared one misspelt
    (:func:`misspelt`), with each one's index (the grammar points at its key)."""
    found = []
    for index, (key, value) in enumerate(pairs):
        opt = option(key)
        problem = misspelt(key, value) if opt is None else opt.check(value)
        if problem is not None:
            found.append((index, problem))
    return found


def misspelt(key: str, value: str) -> OptionProblem | None:
    """The problem of a key mt_magic does not declare but that is a near miss of one it does (``'incremental.engin'``:
    kept as a table property it would silently do nothing); ``None`` for any other key, which stays a table property
    of the user's own. Spark settings (``spark.*``, thousands of them) and the properties of Iceberg's that look like
    ours (:data:`~mt_magic.options.declared.NEIGHBOURS`) are never taken for a typo."""
    lowered = key.lower()
    if lowered.startswith("spark.") or lowered in NEIGHBOURS:
        return None
    own = [opt.key for opt in OPTIONS.values() if not opt.key.lower().startswith("spark.")]
    near = closest_names(key, own, n=2)
    if not near:
        return None
    return OptionProblem(
        key,
        value,
        "is not an option mt_magic declares",
        "write one of its options (Tab completes them), or name a table property of your own further from them",
        tuple(f"'{name}'" for name in near),
    )

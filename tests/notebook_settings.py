"""The notebook session's SQL settings for a block, then as before: what a definition records at CREATE.

Imported by name (pytest puts ``tests/`` on sys.path for its conftest.py), like ``shared_catalog``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def session_settings(spark, settings: Mapping[str, str]) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """``settings`` on ``spark`` for the block; each key restored (or unset) afterwards."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)

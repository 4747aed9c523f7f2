"""mt_magic — Flink-style materialized tables for Jupyter, on Spark and Apache Iceberg.

``%load_ext mt_magic`` registers ``%%materialized`` and ``%mt``; the first statement connects the catalog
(the embedded REST catalog when none is configured), the Spark session and the refresh manager.
"""

from __future__ import annotations

import logging

__version__ = "0.1.0"

# A library logs; the application decides where it goes. Without a handler of our own, Python's last-resort
# handler would print our warnings to stderr — which ipykernel shows in whatever cell happens to be running.
logging.getLogger(__name__).addHandler(logging.NullHandler())

_MAGICS_ATTR = "_mt_magic_magics"


def load_ipython_extension(ipython) -> None:  # type: ignore[no-untyped-def]
    """Register the magics and connect at once, so the manager resumes every table from the catalog."""
    from mt_magic.magics import MaterializedMagics

    magics = MaterializedMagics(shell=ipython)
    ipython.register_magics(magics)
    setattr(ipython, _MAGICS_ATTR, magics)
    magics.connection  # noqa: B018 - connect now: discover the catalog's tables and resume their schedules


def unload_ipython_extension(ipython) -> None:  # type: ignore[no-untyped-def]
    """Stop the refresh manager; the Spark session and the catalog server stay up for the user."""
    magics = getattr(ipython, _MAGICS_ATTR, None)
    if magics is not None:
        magics.close()
        delattr(ipython, _MAGICS_ATTR)

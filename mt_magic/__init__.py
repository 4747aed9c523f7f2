"""mt_magic — Flink-style materialized tables for Jupyter, on Spark and Apache Iceberg.

``%load_ext mt_magic`` registers ``%%materialized`` and ``%mt``; the first statement connects the catalog
(the embedded REST catalog when none is configured), the Spark session and the refresh manager.
``mt_magic.materialize(…)``, ``mt_magic.table(…)`` and ``mt_magic.explain(…)`` are the Python API
(:mod:`mt_magic.api`), imported on first use so that ``import mt_magic`` stays light (no Spark).
``mt_magic.query(sql)`` and ``mt_magic.live(sql)`` run a query cell's query from Python (:mod:`mt_magic.queries`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typed for users' checkers; imported on first use at run time (below)
    from mt_magic.api import MaterializedTable, explain, materialize, table
    from mt_magic.queries import live, query

__version__ = "0.1.0"

# A library logs; the application decides where it goes. Without a handler of our own, Python's last-resort
# handler would print our warnings to stderr — which ipykernel shows in whatever cell happens to be running.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["MaterializedTable", "explain", "materialize", "table", "live", "query", "Expectation", "OnViolation"]
_QUERIES = ("live", "query")


def __getattr__(name: str) -> object:
    """``mt_magic.materialize`` / ``table`` / ``explain`` / ``MaterializedTable``, imported from :mod:`mt_magic.api`
    on first use."""
    if name in _QUERIES:
        from mt_magic import queries

        return getattr(queries, name)
    if name in __all__:
        from mt_magic import api

        return getattr(api, name)
    raise AttributeError(f"module 'mt_magic' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:  # type: ignore[no-untyped-def]
    """Register the magics and connect at once, so the manager resumes every table from the catalog."""
    from mt_magic.kernel import attach
    from mt_magic.magics import MaterializedMagics

    magics = MaterializedMagics(shell=ipython)
    ipython.register_magics(magics)
    attach(ipython, magics)
    magics.connection  # noqa: B018 - connect now: discover the catalog's tables and resume their schedules


def unload_ipython_extension(ipython) -> None:  # type: ignore[no-untyped-def]
    """Stop the refresh manager; the Spark session and the catalog server stay up for the user."""
    from mt_magic.kernel import detach

    magics = detach(ipython)
    if magics is not None:
        magics.close()

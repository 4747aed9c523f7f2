"""The Python API (Flink FLIP-616's shape): define and drive materialized tables from Python.

``materialize(name, query, freshness=…)`` is ``CREATE OR ALTER MATERIALIZED TABLE``; ``table(name)`` is a handle
with the table's status, lineage, history, controls and reads. Both go through the one way in
(:class:`~mt_magic.runtime.service.MaterializedTables`), so they raise the magics' errors with the same Fix lines.

- ``statements``: Python arguments → statement text → the grammar's typed statement (one path, the same checks)
- ``materialize``: ``materialize(…)``, CREATE OR ALTER (then the ALTER … SET it implies) from Python arguments
- ``handle``: :class:`MaterializedTable`, what ``table()`` and ``materialize()`` return
- ``explaining``: ``explain(…)``, what ``%mt explain`` answers: a table, a CREATE, a change previewed before it is made
- ``session``: which connection: the kernel's when ``%load_ext mt_magic`` ran, else one for this process

Nothing here imports Spark until a function connects.
"""

from __future__ import annotations

from mt_magic.api.explaining import explain
from mt_magic.api.handle import MaterializedTable, table
from mt_magic.api.materialize import materialize
from mt_magic.api.session import close, service
from mt_magic.vocabulary import Expectation, OnViolation

__all__ = ["Expectation", "MaterializedTable", "OnViolation", "close", "explain", "materialize", "service", "table"]

"""Refreshes in process: the same delta term, merge or retraction, run by DuckDB over Arrow, committed through
pyiceberg — no Spark job; only where the answer is provably Spark's.

- the query's gate lives with the other sqlglot code, in :mod:`mt_magic.sql.query.in_process_gate`: every
  expression typed as Spark types it, each operator allowed only for the operand types shown equal in both
  engines (the table in its docstring).
- :mod:`.eligibility` — the table: engine option, strategy, partitioning, file format, SQL settings, row bound;
  the refresh and ``%mt explain``'s engine line ask it alike.
- :mod:`.guards` — the data: valid UTF-8, decimals within precision, no sum that may pass its type, no
  ambiguous stored NULL sum.
- :mod:`.run` — one refresh: read with pyiceberg, run on DuckDB, check, write the data files; any failure
  returns ``None`` and Spark runs the refresh.
- :mod:`.change_rows` — a row-level change as removed and added rows, from the files it touched (removed
  positions taken while those files stream by); :mod:`.row_level` — its retraction or its inserts and deletes.
- :mod:`.arrow_sql` — the DuckDB connection, the sources as Arrow (held, or streamed past the memory bound).
"""

from __future__ import annotations

from mt_magic.runtime.refresh.incremental.in_process.eligibility import (
    IN_PROCESS_MAX_ROWS,
    engine_line,
    in_process_plan,
    partitioning_reason,
)
from mt_magic.runtime.refresh.incremental.in_process.run import in_process_write

IN_PROCESS = "in process (DuckDB), no Spark job"
"""Appended to the outcome's strategy line."""

__all__ = [
    "IN_PROCESS",
    "IN_PROCESS_MAX_ROWS",
    "engine_line",
    "in_process_plan",
    "in_process_write",
    "partitioning_reason",
]

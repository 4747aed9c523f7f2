"""The data the in-process path runs on must be data both engines hold exactly; otherwise the refresh is Spark's.

The gate (:mod:`mt_magic.sql.query.in_process_gate`) proves the *query* means the same in both engines; these checks
do the same for the *data*, before anything is written:

- every string read or produced is valid UTF-8 and every decimal fits its precision (Arrow's full validation):
  Spark stores any bytes in a STRING (``CAST(unhex('FF') AS STRING)``), which Arrow and DuckDB cannot read, and
  DuckDB's ``sum`` can give a DECIMAL(38, s) a 39-digit value that Iceberg cannot serialize;
- every value fits the table's type when it is cast to it (a BIGINT sum DuckDB holds as HUGEINT, past what
  Spark's wrapping sum gives, raises rather than wraps);
- no sum's inputs reach its type's bound, where Spark's answer depends on its order of adding
  (:mod:`..sum_mass`, checked in :mod:`.run` with the mass the refresh state records).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


class DataNotExact(Exception):
    """The data is not held exactly by both engines (see the module): the refresh runs on Spark."""


def check_readable(rows: pa.Table, what: str) -> None:
    """Every string valid UTF-8, every decimal within its precision (Arrow's full validation)."""
    import pyarrow as pa

    try:
        rows.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise DataNotExact(f"{what}: {exc}") from exc

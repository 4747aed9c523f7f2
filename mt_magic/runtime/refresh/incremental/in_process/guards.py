"""The data the in-process path runs on must be data both engines hold exactly; otherwise the refresh is Spark's.

The gate (:mod:`.gate`) proves the *query* means the same in both engines; these checks do the same for the
*data*, before anything is written:

- every string read or produced is valid UTF-8 and every decimal fits its precision (Arrow's full validation):
  Spark stores any bytes in a STRING (``CAST(unhex('FF') AS STRING)``), which Arrow and DuckDB cannot read, and
  DuckDB's ``sum`` can give a DECIMAL(38, s) a 39-digit value that Iceberg cannot serialize;
- no sum can pass its type at any point, in any order: the absolute values the merge adds (the delta's, the
  largest stored sum) stay below the result type's bound. Past it Spark wraps a BIGINT or gives NULL for a
  DECIMAL (ANSI off), or fails (ANSI on), while DuckDB's HUGEINT does neither;
- a stored DECIMAL sum that is NULL while the delta adds values to its group is ambiguous (overflowed under
  ANSI off, or no value yet): the merge is left to Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mt_magic.runtime.refresh.incremental.in_process.gate import LONG_MAX, SparkType

if TYPE_CHECKING:
    import duckdb
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


def summed_columns(query: str) -> list[tuple[str, str]]:
    """The query's sums as (output column, summed source column)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="spark")
    return [
        (item.alias, item.this.this.name)
        for item in tree.expressions
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Sum) and isinstance(item.this.this, exp.Column)
    ]


def bound(kind: SparkType) -> float:
    """The magnitude a sum of type ``kind`` stays below."""
    return float(10 ** (kind.precision - kind.scale)) if kind.kind == "decimal" else float(LONG_MAX)


MARGIN = 0.999
"""The bound is checked in doubles (relative error far below 1e-9 for a million values); 0.1 % keeps it exact."""


def check_sums(
    con: duckdb.DuckDBPyConnection,
    delta_view: str,
    sums: Sequence[tuple[str, str]],
    types: Mapping[str, SparkType],
    current: pa.Table | None,
) -> None:
    """No partial sum of the merge can pass its type: the delta's absolute values plus the largest stored sum
    stay below the bound of the output column's type (``types``: the table's columns, lower-case names)."""
    import pyarrow.compute as pc

    if not sums:
        return
    totals = con.sql(
        "SELECT "
        + ", ".join(f'coalesce(sum(abs(CAST("{column}" AS DOUBLE))), 0)' for _, column in sums)
        + f' FROM "{delta_view}"'
    ).fetchone()
    assert totals is not None
    stored_names = {name.lower(): name for name in current.column_names} if current is not None else {}
    for (output, _), total in zip(sums, totals, strict=True):
        stored = 0.0
        if output.lower() in stored_names and current is not None and current.num_rows:
            largest = pc.max(pc.abs(current.column(stored_names[output.lower()]).cast("double"))).as_py()
            stored = float(largest or 0.0)
        kind = types[output.lower()]
        if float(total) + stored >= bound(kind) * MARGIN:
            raise DataNotExact(f"the sum {output} may pass {kind} (Spark wraps, gives NULL or fails)")


def check_null_sums(
    con: duckdb.DuckDBPyConnection,
    current: str,
    partial: str,
    keys: Sequence[str],
    sums: Sequence[tuple[str, str]],
    types: Mapping[str, SparkType],
) -> None:
    """No group whose stored DECIMAL sum is NULL receives values (a NULL may be an overflow, ANSI off)."""
    decimal = [output for output, _ in sums if types[output.lower()].kind == "decimal"]
    if not decimal:
        return
    on = " AND ".join(f'c."{k}" IS NOT DISTINCT FROM p."{k}"' for k in keys) or "TRUE"
    ambiguous = " OR ".join(f'(c."{s}" IS NULL AND p."{s}" IS NOT NULL)' for s in decimal)
    found = con.sql(f'SELECT count(*) FROM "{current}" c JOIN "{partial}" p ON {on} WHERE {ambiguous}').fetchone()
    if found is not None and found[0]:
        raise DataNotExact(f"a stored NULL sum ({', '.join(decimal)}) may be an overflow; Spark merges it")

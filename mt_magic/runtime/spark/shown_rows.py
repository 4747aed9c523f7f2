"""Rows collected into Python to be shown (a card's preview, a live query, a held refresh's or ``%mt verify``'s
sample): the one way they are read.

Python's ``datetime`` cannot hold every value Spark's dates and timestamps can: a timestamp in year 1 falls in year
0 in a session zone west of UTC, and collecting it raises "year 0 is out of range" where Spark's own answer is fine.
So every column holding dates or timestamps (also inside arrays, maps and structs) is collected as Spark renders it
(``CAST(… AS STRING)``, in the session's zone, NULL staying NULL); every other value keeps its Python type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType


def rendered(frame: DataFrame) -> DataFrame:
    """``frame`` with its date and timestamp columns as Spark's text; columns by position (a query's names may
    repeat), the names kept."""
    from pyspark.sql import functions as F

    fields = frame.schema.fields
    positional = frame.toDF(*(f"_{i}" for i in range(len(fields))))
    columns = [
        F.col(f"_{i}").cast("string") if holds_time(f.dataType) else F.col(f"_{i}") for i, f in enumerate(fields)
    ]
    return positional.select(*columns).toDF(*(f.name for f in fields))


def holds_time(data_type: DataType) -> bool:
    """Whether values of ``data_type`` hold a date or a timestamp (which :func:`rendered` turns into text)."""
    from pyspark.sql.types import ArrayType, DateType, MapType, StructType, TimestampNTZType, TimestampType

    if isinstance(data_type, DateType | TimestampType | TimestampNTZType):
        return True
    if isinstance(data_type, ArrayType):
        return holds_time(data_type.elementType)
    if isinstance(data_type, MapType):
        return holds_time(data_type.keyType) or holds_time(data_type.valueType)
    if isinstance(data_type, StructType):
        return any(holds_time(f.dataType) for f in data_type.fields)
    return False

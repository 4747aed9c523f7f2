"""Multiset differences of rows that keep every value exactly as stored.

Counting rows by value means grouping them, and Spark's grouping normalizes floating point: a FLOAT or DOUBLE key
-0.0 comes out as 0.0 (and every NaN as one NaN), so ``EXCEPT ALL`` (``DataFrame.exceptAll``) rewrites the -0.0 of
every row it keeps. Here rows are grouped by their values and, for a column holding FLOAT or DOUBLE, by its text too
(``CAST(… AS STRING)`` tells -0.0 from 0.0), and such a column's value is copied from its group, not its key. Every
other type is grouped as Spark compares it — text by its bytes, so a STRING that is not UTF-8 stays as it is — and
nothing leaves Spark's internal rows (no Python or Java objects rebuild a value).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.runtime.refresh.incremental.merge_on_read import SIDE
from mt_magic.runtime.spark.quoting import identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

NET = "__mt_net"
"""A row's inserts minus its deletes."""


def _walk(data_type: DataType) -> list[DataType]:
    """``data_type`` and every type nested in it."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        return [data_type, *(t for f in data_type.fields for t in _walk(f.dataType))]
    if isinstance(data_type, ArrayType):
        return [data_type, *_walk(data_type.elementType)]
    if isinstance(data_type, MapType):
        return [data_type, *_walk(data_type.keyType), *_walk(data_type.valueType)]
    return [data_type]


def groupable(frame: DataFrame) -> bool:
    """Whether Spark (3.5 included) groups ``frame``'s rows by value: no MAP or VARIANT in any column's type."""
    return not any(t.typeName() in ("map", "variant") for f in frame.schema.fields for t in _walk(f.dataType))


def signed_difference(rows: DataFrame) -> DataFrame:
    """The signed multiset of ``rows`` (data columns, and ``NET``: +1 or -1 per row): each distinct row as often as
    its +1s exceed its -1s, with ``SIDE`` '+', or the other way round, with ``SIDE`` '-'. Lazy.

    Each data column is of a type :func:`groupable` allows.
    """
    from pyspark.sql import functions as F

    fields = [f for f in rows.schema.fields if f.name != NET]
    keys, values = [], []
    for index, f in enumerate(fields):
        column = F.col(identifier(f.name))
        if any(t.typeName() in ("float", "double") for t in _walk(f.dataType)):
            keys += [column.alias(f"__mt_g{index}"), column.cast("string").alias(f"__mt_t{index}")]
            values.append(F.first(column).alias(f"__mt_v{index}"))
        else:
            keys.append(column.alias(f"__mt_v{index}"))
    net = rows.groupBy(*keys).agg(F.sum(NET).alias(NET), *values).where(F.col(NET) != 0)
    data = [F.col(f"__mt_v{index}").alias(f.name) for index, f in enumerate(fields)]
    side = F.when(F.col(NET) > 0, F.lit("+")).otherwise(F.lit("-")).alias(SIDE)
    repeat = F.explode(F.sequence(F.lit(1).cast("bigint"), F.abs(F.col(NET)))).alias(NET)
    return net.select(*data, side, repeat).drop(NET)


def except_all(left: DataFrame, right: DataFrame) -> DataFrame:
    """``left EXCEPT ALL right`` (columns matched by position) with every value as stored (Spark's own where a
    column cannot be grouped)."""
    from pyspark.sql import functions as F

    if not groupable(left):
        return left.exceptAll(right)
    rows = left.withColumn(NET, F.lit(1)).union(right.toDF(*left.columns).withColumn(NET, F.lit(-1)))
    return signed_difference(rows).where(F.col(SIDE) == "+").drop(SIDE)

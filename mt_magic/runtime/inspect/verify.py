"""``%mt verify t`` / ``table(t).verify()``: the table's query recomputed beside it, nothing committed, compared.

The query runs over the source snapshots the table's last refresh on ``main`` consumed (its refresh state), so a
table that is merely stale compares equal. The comparison is cheap at scale: one Spark aggregation over both sides
tagged +1 (query) and -1 (table) groups the rows into :data:`BUCKETS` buckets by a hash of the table's PRIMARY KEY
(of the whole row without one) and sums, per bucket, each side's row count and a 64-bit hash of every row (split in
halves so the sums never overflow): equal multisets sum to zero. Only the buckets that differ are compared row by
row (each distinct row's count netted between the sides: ``EXCEPT ALL`` both ways, duplicates count), so an equal
table costs one scan of each side and a shuffle of :data:`BUCKETS` partial sums. The rows that differ are reported
with a sample, the keys (or partitions) they fall in, and the commit that wrote the table's extra rows (the data
file's adding snapshot), else the newest commit on ``main`` that was not a refresh, else the last refresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.errors import MtMagicError
from mt_magic.runtime.refresh.run import query_rows
from mt_magic.runtime.refresh.start import window_views
from mt_magic.runtime.spark import semantics
from mt_magic.runtime.spark.quoting import identifier, qualified, string_literal
from mt_magic.runtime.spark.shown_rows import holds_time, rendered
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.vocabulary import is_hidden_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

    from mt_magic.catalog.tables import TableInfo
    from mt_magic.runtime.workspace import Workspace

SAMPLE_ROWS = 5
BUCKETS = 1024
"""Hash buckets the first pass sums per side; only those that differ are compared row by row."""
COLLECTED = 10_000
"""Distinct differing rows brought back to the driver at most (beyond it, counted in Spark)."""
_BUCKET, _SIDE, _HI, _LO = "__mt_v_bucket", "__mt_v_side", "__mt_v_hi", "__mt_v_lo"


@dataclass(frozen=True)
class Verification:
    """What ``verify`` found: rows the query gives that the table lacks (``missing``) and rows the table has that the
    query does not give (``extra``), counted with duplicates, a sample of each, and the keys they fall in."""

    table: str
    snapshot_id: int | None
    rows: int
    missing: int
    extra: int
    missing_sample: tuple[str, ...] = ()
    extra_sample: tuple[str, ...] = ()
    suspect: str = ""
    """The commit that most likely introduced the difference (empty when equal)."""
    refreshed: int | None = None
    """The last refresh's snapshot on ``main``: what the table held before any later commit."""
    key: tuple[str, ...] = ()
    """What differences are grouped by: the PRIMARY KEY, else the partition columns (empty: neither)."""
    keys: int = 0
    """How many distinct values of :attr:`key` the differing rows hold."""
    key_sample: tuple[str, ...] = ()
    buckets: int = 0
    """Hash buckets that differed (each compared row by row; the rest were equal by their sums)."""

    @property
    def equal(self) -> bool:
        return self.missing == 0 and self.extra == 0

    @property
    def differences(self) -> int:
        return self.missing + self.extra

    def __str__(self) -> str:
        head = f"{self.table} at snapshot {self.snapshot_id} ({self.rows} rows)"
        if self.equal:
            return f"{head} equals its query over the sources its last refresh read: 0 differences"
        lines = [f"{head} differs from its query: {self.differences} differences"]
        lines.append(f"  {self.missing} rows the query gives are missing from the table" + _listed(self.missing_sample))
        lines.append(f"  {self.extra} rows in the table the query does not give" + _listed(self.extra_sample))
        if self.key:
            lines.append(f"  in {self.keys} {', '.join(self.key)} value(s)" + _listed(self.key_sample))
        lines.append(f"  most likely introduced by {self.suspect}")
        catalog, name = self.table.split(".", 1)
        lines.append(
            f"  Fix: a commit that was not a refresh is undone by rolling back to the last refresh: CALL {catalog}"
            f".system.rollback_to_snapshot('{name}', {self.refreshed}); a difference the refresh made is a defect to "
            "report with this output"
        )
        return "\n".join(lines)


def _listed(sample: tuple[str, ...]) -> str:
    return "".join(f"\n    {row}" for row in sample)


def verify(ws: Workspace, name: str) -> Verification:
    """Recompute ``name``'s query without committing and compare it with the table's rows on ``main``.

    Raises:
        NoSuchMaterializedTableError: ``name`` is not a materialized table.
        MtMagicError: it has never been refreshed (nothing to compare).
    """
    info, definition = ws.catalog.load_materialized(name)
    last = info.last_refresh()
    if last is None or info.current_snapshot_id is None:
        raise MtMagicError(
            f"{name} has no refresh on main to verify", statement=f"verify {name}", fix=f"run %mt refresh {name}"
        )
    snapshot, state = last
    spark = ws.spark
    with semantics.applied(f"verify {name}", spark, definition.sql_settings or {}):
        table = table_at(spark, name, info.current_snapshot_id)
        with window_views(spark, ws.catalog, definition, state.source_states) as windows:
            expected = query_rows(spark, info, definition, state.source_states, windows, table)
            columns = [c for c in table.columns if not is_hidden_column(c)]
            primary_key = _key(definition.primary_key, columns)
            key = primary_key or _key(definition.partitioned_by, columns)
            by = _bucket(list(primary_key) or columns)
            expected, actual = expected.select(*columns).withColumn(_BUCKET, by), table.select(*columns)
            actual = actual.withColumn(_BUCKET, by)
            rows, differing = _differing_buckets(expected, actual, columns)
            if not differing:
                return Verification(
                    info.name, info.current_snapshot_id, rows, 0, 0, refreshed=snapshot.snapshot_id, key=key
                )
            return _compared(info, table, expected, actual, columns, key, differing, rows, snapshot.snapshot_id)


def _key(declared: tuple[str, ...], columns: list[str]) -> tuple[str, ...]:
    """``declared`` when each is one of the table's columns (a partition transform is not), else empty."""
    by_name = {c.lower(): c for c in columns}
    found = tuple(by_name.get(c.lower(), "") for c in declared)
    return found if found and all(found) else ()


def _bucket(columns: list[str]) -> Column:
    from pyspark.sql import functions as F

    return F.pmod(_row_hash(columns), F.lit(BUCKETS))


def _row_hash(columns: list[str]) -> Column:
    """A 64-bit hash of the columns' values; NULLs count (Spark's hashes skip them: a flag per column says where)."""
    from pyspark.sql import functions as F

    cols = [F.col(identifier(c)) for c in columns]
    nulls = F.concat(*(F.when(c.isNull(), "1").otherwise("0") for c in cols))
    return F.xxhash64(*cols, nulls)


def _differing_buckets(expected: DataFrame, actual: DataFrame, columns: list[str]) -> tuple[int, list[int]]:
    """The table's rows and the buckets whose sums differ, from one aggregation over both sides."""
    from pyspark.sql import functions as F

    def tagged(df: DataFrame, side: int) -> DataFrame:
        h = _row_hash(columns)
        return df.select(
            F.col(_BUCKET),
            F.lit(side).alias(_SIDE),
            (F.shiftright(h, 32) * side).alias(_HI),
            (h.bitwiseAND(F.lit(0xFFFFFFFF)) * side).alias(_LO),
        )

    sums = (
        tagged(expected, 1)
        .unionByName(tagged(actual, -1))
        .groupBy(_BUCKET)
        .agg(
            F.sum(F.when(F.col(_SIDE) == -1, 1).otherwise(0)).alias("table"),
            F.sum(_SIDE).alias("n"),
            F.sum(_HI).alias("hi"),
            F.sum(_LO).alias("lo"),
        )
        .collect()
    )
    differing = sorted(int(r[_BUCKET]) for r in sums if r["n"] or r["hi"] or r["lo"])
    return sum(int(r["table"]) for r in sums), differing


def _compared(
    info: TableInfo,
    table: DataFrame,
    expected: DataFrame,
    actual: DataFrame,
    columns: list[str],
    key: tuple[str, ...],
    differing: list[int],
    rows: int,
    refreshed: int,
) -> Verification:
    """The differing buckets compared row by row: each distinct row's count on either side, netted in one
    aggregation (what ``EXCEPT ALL`` both ways gives, duplicates count), with samples, keys and the suspect."""
    from pyspark.sql import functions as F

    only = F.col(_BUCKET).isin(differing)
    sides = expected.where(only).select(*columns, F.lit(1).alias(_SIDE))
    sides = sides.unionByName(actual.where(only).select(*columns, F.lit(-1).alias(_SIDE)))
    net = sides.groupBy(*(F.col(identifier(c)) for c in columns)).agg(F.sum(_SIDE).alias(_SIDE))
    net = net.where(F.col(_SIDE) != 0)
    found = rendered(net.limit(COLLECTED + 1)).collect()
    if len(found) <= COLLECTED:
        missing = sum(int(r[_SIDE]) for r in found if r[_SIDE] > 0)
        extra = sum(-int(r[_SIDE]) for r in found if r[_SIDE] < 0)
        distinct = list(dict.fromkeys(tuple(r[c] for c in key) for r in found))
        keys = len(distinct)
        key_sample = tuple(", ".join(f"{c}={v!r}" for c, v in zip(key, k, strict=True)) for k in distinct)
    else:  # too many to bring back: counted in Spark
        totals = net.agg(
            F.sum(F.when(F.col(_SIDE) > 0, F.col(_SIDE)).otherwise(0)), F.sum(F.when(F.col(_SIDE) < 0, -F.col(_SIDE)))
        ).first()
        missing, extra = (int((totals[0] if totals else 0) or 0), int((totals[1] if totals else 0) or 0))
        keys = net.select(*key).distinct().count() if key else 0
        shown = rendered(net.select(*key).distinct().limit(SAMPLE_ROWS)).collect() if key else []
        key_sample = _sample(shown, list(key))
    extra_rows = [r for r in found if r[_SIDE] < 0][:SAMPLE_ROWS]
    return Verification(
        info.name,
        info.current_snapshot_id,
        rows,
        missing,
        extra,
        _sample([r for r in found if r[_SIDE] > 0][:SAMPLE_ROWS], columns),
        _sample(extra_rows, columns),
        (_writer(info, table, extra_rows, columns) if extra_rows else None) or _suspect(info, refreshed),
        refreshed,
        key,
        keys if key else 0,
        key_sample[:SAMPLE_ROWS] if key else (),
        len(differing),
    )


def _sample(rows: list[Row], columns: list[str]) -> tuple[str, ...]:
    return tuple(", ".join(f"{c}={r[c]!r}" for c in columns) for r in rows)


def _writer(info: TableInfo, table: DataFrame, extra: list[Row], columns: list[str]) -> str | None:
    """The newest snapshot that added a data file holding the first extra row (``None``: not found)."""
    from pyspark.sql import functions as F

    first, types = extra[0], {f.name: f.dataType for f in table.schema.fields}
    match = F.lit(True)
    for c in columns:  # a date or timestamp as it was collected: Spark's text (shown_rows)
        value = F.col(identifier(c))
        match = match & (value.cast("string") if holds_time(types[c]) else value).eqNullSafe(F.lit(first[c]))
    paths = [string_literal(str(r[0])) for r in table.where(match).select("_file").distinct().limit(50).collect()]
    if not paths:
        return None
    sql = f"SELECT snapshot_id FROM {qualified(info.name)}.entries WHERE data_file.file_path IN ({', '.join(paths)})"
    adding = {int(r[0]) for r in table.sparkSession.sql(sql).collect()}
    snap = next((s for s in reversed(info.snapshots) if s.snapshot_id in adding), None)
    if snap is None:
        return None
    when = f"{snap.committed_at:%Y-%m-%d %H:%M:%S} UTC"
    what = "not a refresh" if snap.refresh_state is None else "a refresh"
    return f"snapshot {snap.snapshot_id} ({snap.operation} at {when}, {what}), which wrote the extra rows' file"


def _suspect(info: TableInfo, refreshed: int) -> str:
    """The newest commit on ``main`` after the last refresh that was not a refresh, else that refresh."""
    for snap in reversed(info.snapshots):
        if snap.snapshot_id == refreshed:
            break
        if snap.refresh_state is None:
            when = f"{snap.committed_at:%Y-%m-%d %H:%M:%S} UTC"
            return f"snapshot {snap.snapshot_id} ({snap.operation} at {when}, not a refresh)"
    return f"the last refresh, snapshot {refreshed}"

"""Whether a table's refreshes may run in process, from metadata alone: the engine option, the strategy, the
partitioning, the table's SQL settings, the source's file format and the query's types
(:mod:`mt_magic.sql.query.in_process_gate`).
``%mt explain``'s engine line and the refresh ask the same function, so they agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.options import ENGINE
from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan, total_records
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.incremental.shape import QueryPlan
from mt_magic.sql.ddl.statements import ColumnDef
from mt_magic.sql.query.in_process_gate import SparkType, iceberg_type, spark_sql_type, unsupported

IN_PROCESS_MAX_ROWS = 1_000_000
"""Most rows a refresh reads in process, into the kernel's memory as Arrow (the delta; for a merge, plus the table)."""
IN_PROCESS_MAX_SCANNED = 50_000_000
"""Most rows a refresh scans in process without holding them: the data files a row-level change's position deletes
name, streamed to take the removed rows (for a GROUP BY with MIN/MAX, their live rows' partial aggregates taken on
the way), and the source's other files where a group may have lost its extreme. They cost the refresh time, which
ADAPTIVE prices, not memory."""

CASE_SENSITIVE = "spark.sql.caseSensitive"
TIME_ZONE = "spark.sql.session.timeZone"
ANY = None
HONOURED_SETTINGS: Mapping[str, frozenset[str] | None] = {
    # no time literal, cast or string-to-time coercion runs in process, and date_trunc only in UTC (gate)
    TIME_ZONE: ANY,
    "spark.sql.legacy.timeParserPolicy": ANY,
    "spark.sql.timestampType": ANY,
    "spark.sql.legacy.typeCoercion.datetimeToString.enabled": ANY,
    "spark.sql.legacy.interval.enabled": ANY,
    # only overflow differs, and a sum that may overflow runs on Spark (guards)
    "spark.sql.ansi.enabled": ANY,
    # the result must have the table's types: no store assignment
    "spark.sql.storeAssignmentPolicy": ANY,
    # names resolve as it says (gate.Columns)
    CASE_SENSITIVE: ANY,
    # no decimal arithmetic; integral literals are widened as the wider of both rules
    "spark.sql.decimalOperations.allowPrecisionLoss": ANY,
    "spark.sql.legacy.literal.pickMinimumPrecision": ANY,
    "spark.sql.legacy.exponentLiteralAsDecimal.enabled": ANY,  # an exponent literal never runs in process
    # parsing: only what the gate parses the way Spark parses it by default
    "spark.sql.ansi.doubleQuotedIdentifiers": frozenset({"false"}),
    "spark.sql.parser.escapedStringLiterals": frozenset({"false"}),
    "spark.sql.legacy.allowNegativeScaleOfDecimal": frozenset({"false"}),
    "spark.sql.ansi.enforceReservedKeywords": ANY,
    "spark.sql.legacy.bangEqualsNot": frozenset({"false"}),
    # clauses, functions and types the gate never lets through (GROUP BY aliases and ordinals are not columns)
    **dict.fromkeys(
        (
            "spark.sql.ansi.relationPrecedence",
            "spark.sql.function.concatBinaryAsString",
            "spark.sql.function.eltOutputAsString",
            "spark.sql.groupByAliases",
            "spark.sql.groupByOrdinal",
            "spark.sql.orderByOrdinal",
            "spark.sql.legacy.castComplexTypesToString.enabled",
            "spark.sql.legacy.ctePrecedencePolicy",
            "spark.sql.legacy.followThreeValuedLogicInArrayExists",
            "spark.sql.legacy.groupingIdWithAppendedUserGroupBy",
            "spark.sql.legacy.integerGroupingId",
            "spark.sql.legacy.inSubqueryNullability",
            "spark.sql.legacy.lpadRpadAlwaysReturnString",
            "spark.sql.legacy.negativeIndexInArrayInsert",
            "spark.sql.legacy.nullInEmptyListBehavior",
            "spark.sql.legacy.percentileDiscCalculation",
            "spark.sql.legacy.setopsPrecedence.enabled",
            "spark.sql.legacy.sizeOfNull",
            "spark.sql.legacy.statisticalAggregate",
            "spark.sql.mapKeyDedupPolicy",
            "spark.sql.legacy.decimal.retainFractionDigitsOnTruncate",
            "spark.sql.legacy.scalarSubqueryCountBugBehavior",
            "spark.sql.legacy.codingErrorAction",
            "spark.sql.legacy.javaCharsets",
        ),  # fmt: skip
        ANY,
    ),
}
"""Settings of the creating session the in-process path honours, each with the values it honours (``None``:
every value) and why; a setting not listed, or a value not listed, runs the table's refreshes on Spark."""

IN_PROCESS_STRATEGIES = frozenset(
    {Strategy.APPEND_DELTA, Strategy.AGGREGATE_MERGE, Strategy.AGGREGATE_RETRACT, Strategy.APPLY_CHANGES}
)
"""Strategies DuckDB runs: appends to a projection or a join's one side, merged groups, and updates and deletes of
one source (:mod:`.row_level`: a GROUP BY's retraction, a projection's inserts and deletes)."""

FILE_FORMAT = "write.format.default"
FORMAT_VERSION = "format-version"


def settings_reason(settings: Mapping[str, str] | None) -> str | None:
    """Why the table's SQL settings are not honoured in process (``None``: they are)."""
    for key, value in sorted((settings or {}).items()):
        if key not in HONOURED_SETTINGS:
            return f"the session setting {key} is not honoured in process"
        allowed = HONOURED_SETTINGS[key]
        if allowed is not None and value.strip().lower() not in allowed:
            return f"the session setting {key} = {value} is not honoured in process"
    return None


def _case_sensitive(settings: Mapping[str, str] | None) -> bool:
    return (settings or {}).get(CASE_SENSITIVE, "false").strip().lower() == "true"


def partitioning_reason(transforms: Sequence[str], spec_count: int = 1) -> str | None:
    """Why pyiceberg does not write this table's partitions here (``None``: unpartitioned, or identity
    partitions of the one spec the table ever had). Other transforms (``bucket``, ``truncate``) need
    pyiceberg's native extension; an evolved spec is left to Spark."""
    if spec_count > 1:
        return "an evolved partition spec"
    other = next((t for t in transforms if t != "identity"), None)
    return None if other is None else f"a {other} partition transform"


def format_reason(properties: Mapping[str, str], what: str, read_only: bool = False) -> str | None:
    """Why pyiceberg does not read or write this table's files here (``None``: Parquet, Iceberg's default, in a
    format v1 or v2 table: pyiceberg 0.10 fails writing v3 manifests, after the point a refresh can fall back; a
    table only read (``read_only``: a source) may be v3, whose deletion vectors pyiceberg's reader applies)."""
    versions = ("1", "2", "3") if read_only else ("1", "2")
    if properties.get(FORMAT_VERSION, "2").strip() not in versions:
        return f"{what} is an Iceberg format v{properties[FORMAT_VERSION].strip()} table"
    file_format = properties.get(FILE_FORMAT, "parquet").strip().lower()
    return None if file_format == "parquet" else f"{what} writes {file_format.upper()} files"


def with_format_version(info: TableInfo) -> dict[str, str]:
    """``info``'s properties with its format version, which the metadata holds and :func:`format_reason` reads."""
    return {**info.properties, FORMAT_VERSION: str(info.format_version)}


def spark_reason(
    options: Mapping[str, str],
    query: QueryPlan,
    strategy: Strategy | None,
    partitioning: str | None,
    sql: str,
    sources: Sequence[TableInfo],
    table: Sequence[tuple[str, SparkType]] | None = None,
    settings: Mapping[str, str] | None = None,
) -> str | None:
    """Why a refresh of this table never runs in process, whatever changed (``None``: small appends may).

    Args:
        sources: the query's sources (one, or the two tables of a join).
        table: the table's columns and types (``None``: made from the query, before CREATE ran).
        settings: the table's SQL settings (:attr:`MaterializedTableDefinition.sql_settings`).
    """
    if ENGINE.read(options) == "spark":
        return f"'{ENGINE.key}' = 'spark'"
    if strategy not in IN_PROCESS_STRATEGIES:
        return f"strategy {strategy.value if strategy else 'full'}"
    if query.branches or query.rollup_keys or query.joins > 2:
        return "a UNION, grouping sets or more than two sources"
    if len(sources) > 1 and strategy not in (Strategy.APPEND_DELTA, Strategy.APPLY_CHANGES):
        return (
            f"a join maintained by {strategy.value} "
            "(a join's appended or changed rows, with its other side as it was, run in process)"
        )
    if partitioning is not None:
        return partitioning
    for source in sources:
        why = format_reason(with_format_version(source), f"the source {source.name}", read_only=True)
        if why is not None:
            return why
    why = format_reason(options, "the table") or settings_reason(settings)
    if why is not None:
        return why
    columns = {source.name: [(name, kind) for name, kind, _ in source.columns] for source in sources}
    return unsupported(sql, columns, table, _case_sensitive(settings), (settings or {}).get(TIME_ZONE))


def table_columns(info: TableInfo) -> list[tuple[str, SparkType]]:
    """The table's columns and their types, as the in-process result must have them."""
    return [(name, iceberg_type(kind)) for name, kind, _ in info.columns]


def declared_columns(columns: Sequence[ColumnDef]) -> list[tuple[str, SparkType]] | None:
    """A CREATE's column list with types, as the table will have them (``None``: no list, or a column without
    a type — the table's types are then the query's)."""
    if not columns or any(c.type is None for c in columns):
        return None
    return [(c.name, spark_sql_type(c.type or "")) for c in columns]


def in_process_plan(
    plan: RefreshPlan, info: TableInfo, sources: Sequence[TableInfo], definition: MaterializedTableDefinition
) -> str | None:
    """Why this refresh runs on Spark (``None``: it may run in process): it must append to one source while any
    other source (a join's) stays as it was, or update and delete in the one source of a GROUP BY (a retraction) or
    a projection, and hold at most :data:`IN_PROCESS_MAX_ROWS` rows (a change is read from the files it touched,
    whole: :attr:`.SourceChange.held`) and scan at most :data:`IN_PROCESS_MAX_SCANNED` for removed positions, so
    that ADAPTIVE prices the engine that will run it."""
    changed = [c for c in plan.changes if c.kind is ChangeKind.APPENDS]
    row_level = [c for c in plan.changes if c.kind is ChangeKind.ROW_LEVEL]
    others_unchanged = all(c.kind in (ChangeKind.ROW_LEVEL, ChangeKind.NONE) for c in plan.changes)
    if plan.strategy is Strategy.AGGREGATE_RETRACT and len(plan.changes) == 1 and row_level:
        changed = row_level
    elif plan.strategy is Strategy.APPLY_CHANGES and len(row_level) == 1 and others_unchanged:
        changed = row_level  # a projection, or an inner join whose other side did not change
    elif len(changed) != 1 or any(c.kind not in (ChangeKind.APPENDS, ChangeKind.NONE) for c in plan.changes):
        return "not appends to one source, nor updates and deletes in one source with the others unchanged"
    table_rows = info.snapshots[-1].summary.get("total-records", "") if info.snapshots else "0"
    if plan.strategy is Strategy.APPEND_DELTA or plan.partition_columns:
        table_rows = "0"  # appending reads only the delta; a scoped merge counts its partitions' rows when read
    others = [total_records(s) for s in sources if s.name != changed[0].name]  # a join reads its other table whole
    if not table_rows.isdigit() or None in others:
        return "a table or source whose row count is not recorded"
    if int(table_rows) + sum(n or 0 for n in others) + changed[0].held > IN_PROCESS_MAX_ROWS:
        return f"more than {IN_PROCESS_MAX_ROWS:,} rows"
    if changed[0].by_position > IN_PROCESS_MAX_SCANNED:
        return f"more than {IN_PROCESS_MAX_SCANNED:,} rows to scan for removed positions"
    partitioning = partitioning_reason(info.partition_transforms, info.partition_spec_count)
    options = {**info.properties, **definition.options, FORMAT_VERSION: str(info.format_version)}
    return spark_reason(
        options,
        plan.query,
        plan.strategy,
        partitioning,
        definition.expanded_query,
        sources,
        table_columns(info),
        definition.sql_settings,
    )


def engine_line(
    options: Mapping[str, str],
    query: QueryPlan,
    partitioning: str | None,
    sql: str,
    sources: Sequence[TableInfo | None],
    table: Sequence[tuple[str, SparkType]] | None = None,
    settings: Mapping[str, str] | None = None,
) -> str:
    """``%mt explain``'s engine line: where the refreshes of appends run (``partitioning``: see
    :func:`partitioning_reason`; ``table``, ``settings``: see :func:`spark_reason`)."""
    known = [s for s in sources if s is not None]
    if not known or len(known) != len(sources):
        return "Spark"
    linear = sorted(query.linear_sources)  # a LEFT JOIN's FROM table: its appends alone are delta terms
    strategy = query.strategy_for(ChangeKind.APPENDS, linear)
    why = spark_reason(options, query, strategy, partitioning, sql, known, table, settings)
    if why is not None:
        return f"Spark ({why})"
    read = "delta plus the other table" if len(known) > 1 else "delta plus table"
    to = f" to {', '.join(name.rsplit('.', 1)[-1] for name in linear)}" if linear else ""
    row_level = query.strategy_for(ChangeKind.ROW_LEVEL)
    if len(known) == 1 and row_level in IN_PROCESS_STRATEGIES:
        what = f"appends{to}, updates and deletes"
    elif row_level is Strategy.APPLY_CHANGES:
        what = f"appends{to}, updates and deletes of one side at a time"
    else:
        what = f"appends{to}"
    return (
        f"{what} in process (DuckDB, no Spark job) while {read} ≤ {IN_PROCESS_MAX_ROWS:,} rows and the "
        "data fits the table's types exactly (a sum that may pass its type, text that is not UTF-8: Spark); else Spark"
    )

"""What ``SHOW MATERIALIZED TABLES``, ``SHOW CREATE …`` and ``DESCRIBE …`` show, from the catalog (no Spark).

The catalog is the source of truth (definitions in table properties, refreshes in snapshot summaries); the
manager adds what only this kernel knows (state, staleness, next refresh, the last error).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.catalog.views import ViewInfo
from mt_magic.runtime.spark.baselines import BASELINE_OPTION, folded
from mt_magic.runtime.spark.quoting import identifier, qualified, string_literal
from mt_magic.runtime.status import Listing, MissingSource, TableStatus
from mt_magic.runtime.workspace import utc_text
from mt_magic.sql.ddl.parser import parse_start_mode
from mt_magic.sql.ddl.statements import StartFrom
from mt_magic.vocabulary import is_hidden_column

TABLE_COLUMNS = ("name", "mode", "freshness", "state", "staleness", "last refresh")


def like_matches(pattern: str, name: str) -> bool:
    """SQL ``LIKE`` on a table's name: ``%`` any text, ``_`` one character, ``\\`` escapes the next character
    (as in Spark); case-insensitive."""
    parts, escaped = [], False
    for c in pattern:
        if escaped:
            parts.append(re.escape(c))
            escaped = False
        elif c == "\\":
            escaped = True
        else:
            parts.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
    return re.fullmatch("".join(parts), name, re.IGNORECASE | re.DOTALL) is not None


def tables_listing(
    infos: list[TableInfo], statuses: Mapping[str, TableStatus], namespace: str | None, like: str | None
) -> Listing:
    """One row per materialized table, sorted by name; in ``namespace`` and matching ``like`` if given."""
    rows = []
    for info in sorted(infos, key=lambda i: i.name):
        definition = info.definition
        assert definition is not None
        if namespace is not None and ".".join(info.namespace) != namespace:
            continue
        if like is not None and not like_matches(like, info.table_name):
            continue
        status = statuses.get(info.name)
        rows.append(
            (
                info.name,
                definition.refresh_mode.value,
                definition.freshness,
                _state(definition, status),
                _staleness(status),
                _last_refresh(info),
            )
        )
    return Listing(TABLE_COLUMNS, tuple(rows))


def create_statement(info: TableInfo, definition: MaterializedTableDefinition) -> Listing:
    """The statement that recreates the table, as stored in the catalog (its expanded, qualified query)."""
    lines = [f"CREATE MATERIALIZED TABLE {qualified(info.name)}"]
    constraints = []
    if definition.primary_key:
        keys = ", ".join(identifier(c) for c in definition.primary_key)
        constraints.append(f"  PRIMARY KEY ({keys}) NOT ENFORCED")
    constraints += [f"  {e.sql()}" for e in definition.expectations]
    if constraints:
        lines.append("(\n" + ",\n".join(constraints) + "\n)")
    comment = info.properties.get("comment")
    if comment:
        lines.append(f"COMMENT {string_literal(comment)}")
    if definition.bucket_columns:
        columns = ", ".join(identifier(c) for c in definition.bucket_columns)
        lines.append(f"DISTRIBUTED BY HASH({columns}) INTO {definition.buckets} BUCKETS")
    if definition.partitioned_by:
        lines.append("PARTITIONED BY (" + ", ".join(identifier(c) for c in definition.partitioned_by) + ")")
    # The recorded SQL settings as pins, those equal to a Spark version's defaults folded into its baseline: run in a
    # fresh session of that Spark line, this defines the same table.
    baseline, settings = folded(definition.sql_settings or {})
    options = [
        *sorted(definition.options.items()),
        *([(BASELINE_OPTION, baseline)] if baseline else []),
        *sorted(settings.items()),
    ]
    if options:
        pairs = ",\n  ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in options)
        lines.append(f"WITH (\n  {pairs}\n)")
    lines.append(f"FRESHNESS = {definition.freshness}")
    if definition.declared_refresh_mode is not None:
        lines.append(f"REFRESH_MODE = {definition.declared_refresh_mode.value}")
    if definition.start_mode:
        lines.append(f"START_MODE = {start_text(definition)}")
    lines.append(f"AS {definition.query}")
    return Listing((), (), "\n".join(lines))


def table_description(
    info: TableInfo,
    definition: MaterializedTableDefinition,
    status: TableStatus | None,
    view: ViewInfo | None = None,
    airflow: list[tuple[str, str]] | None = None,
    missing: MissingSource | None = None,
) -> Listing:
    """Columns and types, then the table's mode and why, freshness, sources, state, last refresh and its Iceberg
    view (``view``: the one registered alongside it, if any); ``airflow``: Airflow's view of a table on Airflow;
    ``missing``: a source the catalog does not have (else the status's, if any)."""
    missing = missing or (status.missing_source if status is not None else None)
    rows: list[tuple[str, str, str]] = [
        (name, kind, "" if required else "nullable")
        for name, kind, required in info.columns
        if not is_hidden_column(name)  # the storage table's hidden key columns are not the user's
    ]
    keys = set(definition.primary_key)
    rows = [(n, t, "primary key" if n in keys else note) for n, t, note in rows]
    rows.append(("", "", ""))
    facts = {
        "# refresh mode": f"{definition.refresh_mode.value} ({definition.mode_reason})",
        "# freshness": definition.freshness + (f" (cron {definition.cron})" if definition.cron else ""),
        "# scheduler": _scheduler(info.name, definition),
        "# partitioned by": ", ".join(definition.partitioned_by) or "—",
        "# distributed by": (
            f"HASH({', '.join(definition.bucket_columns)}) INTO {definition.buckets} BUCKETS"
            if definition.bucket_columns
            else "—"
        ),
        "# sources": ", ".join(definition.upstream) or "—",
        "# start mode": _start_detail(definition),
        "# state": _state(definition, status, missing),
        "# staleness": _staleness(status, missing),
        "# last refresh": _last_refresh(info),
        "# definition version": str(definition.definition_version),
        "# iceberg view": _view_text(view),
    }
    facts.update(
        (f"# expectation {e.name}", f"{e.condition} ({e.on_violation.value or 'keep and count'})")
        for e in definition.expectations
    )
    if status is not None and status.refreshed_by is not None:
        here = " (this process)" if status.refreshed_here else ""
        facts["# refreshed by"] = status.refreshed_by + here
    if status is not None and status.paused:
        facts["# paused"] = status.paused
    if missing is not None:
        facts["# source missing"] = missing.message
    if status is not None and status.last_error and (missing is None or missing.message not in status.last_error):
        facts["# last error"] = status.last_error
    facts.update((f"# {label}", text) for label, text in airflow or ())
    rows += [(key, value, "") for key, value in facts.items()]
    rows += settings_rows(definition)
    return Listing(("column", "type", "note"), tuple(rows))


def _view_text(view: ViewInfo | None) -> str:
    """The view other engines read the definition through, and what the catalog did not keep of it (said, never
    silent: without ``storage-table`` an engine following the proposal cannot find this table from the view)."""
    if view is None:
        return "none registered (created before views, or the catalog has no view endpoints)"
    text = f"{view.name} (version {view.current_version_id})"
    if view.dropped:
        text += f"; the catalog does not keep its {' and '.join(view.dropped)}"
    return text


def _scheduler(name: str, definition: MaterializedTableDefinition) -> str:
    """Who refreshes the table (``WITH ('scheduler' = …)``); on Airflow, which DAG."""
    from mt_magic.scheduling.dags import dag_id
    from mt_magic.scheduling.workflow import scheduler_of
    from mt_magic.vocabulary import WorkflowSchedulerKind

    if scheduler_of(definition.options) is WorkflowSchedulerKind.AIRFLOW:
        return f"airflow (DAG {dag_id(name)})"
    return "kernel (the refresh manager of a kernel or of python -m mt_magic run)"


SETTINGS_NOT_RECORDED = (
    "not recorded: refreshes run with the product's settings (Spark's defaults; the table was created before "
    "SQL settings were recorded). ALTER … AS in a session with the settings you mean records them."
)


def settings_rows(definition: MaterializedTableDefinition) -> list[tuple[str, str, str]]:
    """DESCRIBE's "SQL settings" section: the recorded answer-changing settings every refresh runs with."""
    if definition.sql_settings is None:
        return [("# SQL settings", SETTINGS_NOT_RECORDED, "")]
    rows = [("# SQL settings", "of the defining session; every refresh runs with them", "")]
    rows += [(f"#   {key}", value, "") for key, value in sorted(definition.sql_settings.items())]
    return rows


def start_text(definition: MaterializedTableDefinition) -> str:
    """START_MODE as stored, with a resolved instant written out (``FROM_NOW`` meant the CREATE's now)."""
    if definition.start_instant is None:
        return definition.start_mode
    declared = parse_start_mode(definition.start_mode)
    return replace(declared, start=StartFrom.TIMESTAMP, lookback=None, timestamp=definition.start_instant).sql()


def _start_detail(definition: MaterializedTableDefinition) -> str:
    if not definition.starts_later:
        return (definition.start_mode or "FROM_BEGINNING") + " (all source history)"
    consumed = ", ".join(
        f"{source} after snapshot {snapshot}" if snapshot is not None else f"all of {source}"
        for source, snapshot in sorted(definition.start_snapshots.items())
    )
    kept = "" if definition.kept_snapshot is None else f"; keeps the rows of its snapshot {definition.kept_snapshot}"
    return f"{start_text(definition)} (rows since the start: {consumed}{kept})"


def _state(
    definition: MaterializedTableDefinition, status: TableStatus | None, missing: MissingSource | None = None
) -> str:
    missing = missing or (status.missing_source if status is not None else None)
    gone = f" · source missing: {missing.source}" if missing is not None else ""
    if status is not None:
        return status.state.value + gone
    return ("suspended" if definition.suspended else "not refreshed by this kernel") + gone


def _staleness(status: TableStatus | None, missing: MissingSource | None = None) -> str:
    if missing is not None or (status is not None and status.missing_source is not None):
        return "unknown (a source is missing)"
    if status is None or status.staleness is None:
        return "unknown"
    return str(status.staleness - timedelta(microseconds=status.staleness.microseconds))


def _last_refresh(info: TableInfo) -> str:
    last = info.last_refresh()
    if last is None:
        return "never"
    snapshot, state = last
    return f"{utc_text(snapshot.committed_at)} {state.kind.value} ({state.trigger.value})"

"""What the catalog stores for a materialized table, and how it is encoded.

* The **definition** lives in table properties with the ``mt.`` prefix (query, freshness, modes, options,
  formatters, upstream tables, suspended flag, format version).
* The **refresh state** lives in the snapshot summary of every refresh commit, written in the same commit
  as the data. The ``refresh-state`` key holds exactly the record of the Iceberg materialized-view draft
  (apache/iceberg PR #11041, the text voted in November 2026): ``view-version-id`` (the version of the table's
  view, ``catalog.views``, holding the definition that ran), ``source-states`` (one ``type`` = ``table`` entry
  per source: ``namespace``, ``name``, ``uuid``, ``snapshot-id``; no ``catalog``, as every source is in the
  table's own catalog, and no ``ref``, as refreshes read ``main``) and ``refresh-start-timestamp-ms``, so other
  engines can judge freshness. ``mt.``-prefixed keys add what only mt_magic needs, among them
  ``mt.source-catalog`` (the Spark name under which the sources were read). A refresh of a table that has no
  view version to name writes the same record under ``mt.refresh-state`` instead: the draft requires
  ``view-version-id``. A source that is itself a materialized table is recorded twice, as the spec records an
  upstream materialized view: a ``table`` entry for its storage table and a ``view`` entry (``uuid``,
  ``version-id``) for its view. Commits written before this shape (``catalog`` in each entry, ``snapshot-id`` null for
  an empty source, ``refresh-state`` without ``view-version-id``) are read as before.

Pure encoding and decoding, no I/O: a catalog client reads the raw properties and summaries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from mt_magic.vocabulary import Expectation, OnViolation, RefreshEngine, RefreshKind, RefreshMode, RefreshTrigger

FORMAT_VERSION = "1"
PREFIX = "mt."
REFRESH_STATE_KEY = "refresh-state"
"""The draft's snapshot-summary key: its refresh-state record as a JSON string."""
OWN_REFRESH_STATE_KEY = f"{PREFIX}refresh-state"
"""The same record where the draft's key would be malformed: the refresh had no view version to name."""
SOURCE_CATALOG_KEY = f"{PREFIX}source-catalog"
"""The Spark catalog name of the sources (the draft's entries leave ``catalog`` out for the view's own catalog)."""
NO_SNAPSHOT = -1
"""``snapshot-id`` of a source that had no snapshot when the refresh read it: the table spec's own spelling of
"no current snapshot" (``current-snapshot-id`` -1), as the draft's field is a required long."""


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _from_ms(ms: int | str) -> datetime:
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc)


@dataclass(frozen=True)
class MaterializedTableDefinition:
    """A materialized table's definition as persisted in ``mt.*`` table properties."""

    query: str
    """The definition query as the user wrote it."""
    expanded_query: str
    """The same query with every source name fully qualified (what refreshes run)."""
    freshness: str
    """Canonical SQL, e.g. ``INTERVAL '5' MINUTE``."""
    refresh_mode: RefreshMode
    """Effective mode: ``CONTINUOUS`` or ``FULL``."""
    interval: timedelta = timedelta(0)
    """The freshness as a duration (``freshness`` is its SQL text)."""
    declared_refresh_mode: RefreshMode | None = None
    """``REFRESH_MODE`` as written, empty when inferred."""
    mode_reason: str = ""
    cron: str = ""
    options: Mapping[str, str] = field(default_factory=dict)
    date_formatters: Mapping[str, str] = field(default_factory=dict)
    """Partition column → Java DateTimeFormatter pattern."""
    upstream: tuple[str, ...] = ()
    """Fully qualified names of every source table."""
    primary_key: tuple[str, ...] = ()
    partitioned_by: tuple[str, ...] = ()
    bucket_columns: tuple[str, ...] = ()
    """``DISTRIBUTED BY HASH(cols) INTO buckets BUCKETS``: each column a ``bucket(buckets, col)`` partition field."""
    buckets: int = 0
    suspended: bool = False
    definition_version: int = 1
    """Bumped by ALTER AS / CREATE OR ALTER, so a refresh knows which query it ran."""
    start_mode: str = ""
    """``START_MODE`` as declared (canonical SQL), empty when omitted (from the beginning)."""
    start_instant: datetime | None = None
    """The instant ``START_MODE`` resolved to at CREATE (``None``: the beginning, or resumed from a state)."""
    start_snapshots: Mapping[str, int | None] = field(default_factory=dict)
    """Source → the snapshot whose rows count as already consumed (``None``: none, the whole source counts).
    Empty: the table reads all of its sources' history."""
    kept_snapshot: int | None = None
    """The table's own snapshot whose rows it keeps (a resumed or converted table), or ``None``."""
    sql_settings: Mapping[str, str] | None = None
    """The Spark SQL settings of the creating session that change a query's answer (session time zone, ANSI mode,
    …), recorded at CREATE / ALTER … AS / CREATE OR ALTER and applied to every refresh. ``None``: a table created
    before settings were recorded (its refreshes run with the product's own settings)."""
    expectations: tuple[Expectation, ...] = ()
    """``CONSTRAINT … EXPECT (…)`` as declared (``mt.expectations``). Those with ``DROP ROW`` are already in
    ``expanded_query`` (its rows filtered); every refresh of a table with expectations counts them on what it
    writes and is published to ``main`` only when none with ``FAIL UPDATE`` is violated."""

    @property
    def audited(self) -> bool:
        """True when refreshes stage on a branch and count expectations before publishing."""
        return bool(self.expectations)

    @property
    def starts_later(self) -> bool:
        """True when the table holds the query over only the source rows added after its start."""
        return bool(self.start_snapshots) or self.kept_snapshot is not None

    def to_properties(self) -> dict[str, str]:
        """The ``mt.*`` table properties for this definition."""
        return {
            f"{PREFIX}format-version": FORMAT_VERSION,
            f"{PREFIX}query": self.query,
            f"{PREFIX}expanded-query": self.expanded_query,
            f"{PREFIX}freshness": self.freshness,
            f"{PREFIX}freshness-seconds": str(int(self.interval.total_seconds())),
            f"{PREFIX}refresh-mode": self.refresh_mode.value,
            f"{PREFIX}declared-refresh-mode": self.declared_refresh_mode.value if self.declared_refresh_mode else "",
            f"{PREFIX}mode-reason": self.mode_reason,
            f"{PREFIX}cron": self.cron,
            f"{PREFIX}options": json.dumps(dict(self.options), sort_keys=True),
            f"{PREFIX}date-formatters": json.dumps(dict(self.date_formatters), sort_keys=True),
            f"{PREFIX}upstream": json.dumps(list(self.upstream)),
            f"{PREFIX}primary-key": json.dumps(list(self.primary_key)),
            f"{PREFIX}partitioned-by": json.dumps(list(self.partitioned_by)),
            f"{PREFIX}bucket-columns": json.dumps(list(self.bucket_columns)),
            f"{PREFIX}buckets": str(self.buckets),
            f"{PREFIX}suspended": str(self.suspended).lower(),
            f"{PREFIX}definition-version": str(self.definition_version),
            f"{PREFIX}start-mode": self.start_mode,
            f"{PREFIX}start-instant-ms": "" if self.start_instant is None else str(_ms(self.start_instant)),
            f"{PREFIX}start-snapshots": json.dumps(dict(self.start_snapshots), sort_keys=True),
            f"{PREFIX}kept-snapshot": "" if self.kept_snapshot is None else str(self.kept_snapshot),
            **(
                {}
                if self.sql_settings is None
                else {f"{PREFIX}sql-settings": json.dumps(dict(self.sql_settings), sort_keys=True)}
            ),
            f"{PREFIX}expectations": expectations_json(self.expectations),
        }

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> MaterializedTableDefinition | None:
        """The definition, or ``None`` when the properties are not those of a materialized table."""
        if f"{PREFIX}format-version" not in props:
            return None

        def get(key: str, default: str = "") -> str:
            return props.get(PREFIX + key, default)

        return cls(
            query=get("query"),
            expanded_query=get("expanded-query") or get("query"),
            freshness=get("freshness"),
            interval=timedelta(seconds=int(get("freshness-seconds", "0"))),
            refresh_mode=RefreshMode(get("refresh-mode")),
            declared_refresh_mode=RefreshMode(get("declared-refresh-mode")) if get("declared-refresh-mode") else None,
            mode_reason=get("mode-reason"),
            cron=get("cron"),
            options=json.loads(get("options", "{}")),
            date_formatters=json.loads(get("date-formatters", "{}")),
            upstream=tuple(json.loads(get("upstream", "[]"))),
            primary_key=tuple(json.loads(get("primary-key", "[]"))),
            partitioned_by=tuple(json.loads(get("partitioned-by", "[]"))),
            bucket_columns=tuple(json.loads(get("bucket-columns", "[]"))),
            buckets=int(get("buckets", "0")),
            suspended=get("suspended", "false") == "true",
            definition_version=int(get("definition-version", "1")),
            start_mode=get("start-mode"),
            start_instant=_from_ms(get("start-instant-ms")) if get("start-instant-ms") else None,
            start_snapshots=json.loads(get("start-snapshots", "{}")),
            kept_snapshot=int(get("kept-snapshot")) if get("kept-snapshot") else None,
            sql_settings=json.loads(get("sql-settings")) if get("sql-settings") else None,
            expectations=expectations_from_json(get("expectations", "[]")),
        )


def expectations_json(expectations: tuple[Expectation, ...]) -> str:
    """``mt.expectations``: a list of ``{"name", "condition", "on-violation"}`` (``""``: keep and count)."""
    return json.dumps(
        [{"name": e.name, "condition": e.condition, "on-violation": e.on_violation.value} for e in expectations]
    )


def expectations_from_json(text: str) -> tuple[Expectation, ...]:
    return tuple(
        Expectation(str(e["name"]), str(e["condition"]), OnViolation(e.get("on-violation", "")))
        for e in json.loads(text)
    )


@dataclass(frozen=True)
class SourceState:
    """One source as a refresh read it: the pinned snapshot (``None`` for an empty table)."""

    namespace: tuple[str, ...]
    name: str
    uuid: str
    snapshot_id: int | None
    catalog: str = ""

    @property
    def qualified_name(self) -> str:
        return ".".join((self.catalog, *self.namespace, self.name) if self.catalog else (*self.namespace, self.name))

    def to_json(self, home_catalog: str = "") -> dict[str, object]:
        """The draft's source-table record; ``catalog`` only for a source outside ``home_catalog``."""
        record: dict[str, object] = {"type": "table", "namespace": list(self.namespace), "name": self.name}
        if self.catalog and self.catalog != home_catalog:
            record["catalog"] = self.catalog
        record["uuid"] = self.uuid
        record["snapshot-id"] = NO_SNAPSHOT if self.snapshot_id is None else self.snapshot_id
        return record

    @classmethod
    def from_json(cls, data: Mapping[str, object], home_catalog: str = "") -> SourceState:
        """A source-table record of either shape (the draft's, or the older one with ``catalog`` in every entry
        and a null ``snapshot-id`` for an empty source); an entry without ``catalog`` is in ``home_catalog``."""
        snapshot = data.get("snapshot-id")
        snapshot_id = None if snapshot is None else int(str(snapshot))
        return cls(
            namespace=tuple(data.get("namespace", ())),  # type: ignore[arg-type]
            name=str(data["name"]),
            uuid=str(data.get("uuid", "")),
            snapshot_id=None if snapshot_id == NO_SNAPSHOT else snapshot_id,
            catalog=str(data["catalog"]) if "catalog" in data else home_catalog,
        )


@dataclass(frozen=True)
class ViewState:
    """An upstream materialized table's Iceberg view as a refresh recorded it: the spec's ``view`` source-state
    entry (``version-id``: the view's current version then), beside the ``table`` entry of its storage table."""

    namespace: tuple[str, ...]
    name: str
    uuid: str
    version_id: int
    catalog: str = ""

    def to_json(self, home_catalog: str = "") -> dict[str, object]:
        """The spec's source-view record; ``catalog`` only for a view outside ``home_catalog``."""
        record: dict[str, object] = {"type": "view", "namespace": list(self.namespace), "name": self.name}
        if self.catalog and self.catalog != home_catalog:
            record["catalog"] = self.catalog
        return {**record, "uuid": self.uuid, "version-id": self.version_id}

    @classmethod
    def from_json(cls, data: Mapping[str, object], home_catalog: str = "") -> ViewState:
        return cls(
            namespace=tuple(data.get("namespace", ())),  # type: ignore[arg-type]
            name=str(data["name"]),
            uuid=str(data.get("uuid", "")),
            version_id=int(str(data["version-id"])),
            catalog=str(data["catalog"]) if "catalog" in data else home_catalog,
        )


def _engine(recorded: str | None, strategy: str) -> RefreshEngine:
    """The engine a refresh commit records; commits written before ``mt.engine`` named it in the strategy line."""
    if recorded:
        return RefreshEngine[recorded.upper()]
    return RefreshEngine.IN_PROCESS if "in process (DuckDB)" in strategy else RefreshEngine.SPARK


@dataclass(frozen=True)
class RefreshState:
    """What one refresh commit consumed and why it ran; written into that commit's snapshot summary."""

    source_states: tuple[SourceState, ...]
    refresh_start: datetime
    kind: RefreshKind
    trigger: RefreshTrigger
    scheduled_time: datetime
    definition_version: int = 1
    partition: Mapping[str, str] = field(default_factory=dict)
    strategy: str = ""
    view_version_id: int | None = None
    """The version of the table's Iceberg view holding the definition this refresh ran (``None``: no view)."""
    engine: RefreshEngine = RefreshEngine.SPARK
    """What computed the rows (``mt.engine``; older commits: read from the strategy line)."""
    sum_mass: Mapping[str, float] = field(default_factory=dict)
    """An aggregate merge's at-risk sums: output column → the absolute values they add up, bounded from above
    (``mt.sum-mass``; :mod:`mt_magic.runtime.refresh.incremental.sum_mass`). Empty for every other refresh."""
    view_states: tuple[ViewState, ...] = ()
    """The views of the sources that are materialized tables, at their versions when the refresh committed (the
    spec's ``view`` entries; their storage tables are in :attr:`source_states`)."""

    def to_summary(self) -> dict[str, str]:
        """Snapshot-summary entries (all strings, as Iceberg requires)."""
        home = self.source_states[0].catalog if self.source_states else ""
        state: dict[str, object] = {} if self.view_version_id is None else {"view-version-id": self.view_version_id}
        state["source-states"] = [
            *(s.to_json(home) for s in self.source_states),
            *(v.to_json(home) for v in self.view_states),
        ]
        state["refresh-start-timestamp-ms"] = _ms(self.refresh_start)
        key = REFRESH_STATE_KEY if self.view_version_id is not None else OWN_REFRESH_STATE_KEY
        return {
            key: json.dumps(state, separators=(",", ":")),
            **({SOURCE_CATALOG_KEY: home} if home else {}),
            f"{PREFIX}refresh-kind": self.kind.value,
            f"{PREFIX}refresh-trigger": self.trigger.value,
            f"{PREFIX}scheduled-time-ms": str(_ms(self.scheduled_time)),
            f"{PREFIX}definition-version": str(self.definition_version),
            f"{PREFIX}partition": json.dumps(dict(self.partition), sort_keys=True),
            f"{PREFIX}strategy": self.strategy,
            f"{PREFIX}engine": self.engine.name.lower(),
            **({f"{PREFIX}sum-mass": json.dumps(dict(self.sum_mass), sort_keys=True)} if self.sum_mass else {}),
        }

    @classmethod
    def from_summary(cls, summary: Mapping[str, str]) -> RefreshState | None:
        """The refresh state of a snapshot, or ``None`` for commits that were not refreshes."""
        raw = summary.get(REFRESH_STATE_KEY, summary.get(OWN_REFRESH_STATE_KEY))
        if raw is None:
            return None
        state = json.loads(raw)
        home = summary.get(SOURCE_CATALOG_KEY, "")
        entries = state.get("source-states", [])
        return cls(
            source_states=tuple(SourceState.from_json(s, home) for s in entries if s.get("type") != "view"),
            view_states=tuple(ViewState.from_json(s, home) for s in entries if s.get("type") == "view"),
            refresh_start=_from_ms(state.get("refresh-start-timestamp-ms", 0)),
            kind=RefreshKind(summary.get(f"{PREFIX}refresh-kind", "full")),
            trigger=RefreshTrigger(summary.get(f"{PREFIX}refresh-trigger", "manual")),
            scheduled_time=_from_ms(summary.get(f"{PREFIX}scheduled-time-ms", "0")),
            definition_version=int(summary.get(f"{PREFIX}definition-version", "1")),
            partition=json.loads(summary.get(f"{PREFIX}partition", "{}")),
            strategy=summary.get(f"{PREFIX}strategy", ""),
            view_version_id=None if state.get("view-version-id") is None else int(state["view-version-id"]),
            engine=_engine(summary.get(f"{PREFIX}engine"), summary.get(f"{PREFIX}strategy", "")),
            sum_mass={str(k): float(v) for k, v in json.loads(summary.get(f"{PREFIX}sum-mass", "{}")).items()},
        )

    def source(self, qualified_name: str, uuid: str = "") -> SourceState | None:
        """The recorded state of a source: by name, else (a renamed table) by its table uuid."""
        by_name = next((s for s in self.source_states if s.qualified_name == qualified_name), None)
        if by_name is not None or not uuid:
            return by_name
        return next((s for s in self.source_states if s.uuid == uuid), None)

    def snapshot_of(self, qualified_name: str, uuid: str = "") -> int | None:
        """The consumed snapshot id of a source, ``None`` if it was empty or not read."""
        recorded = self.source(qualified_name, uuid)
        return None if recorded is None else recorded.snapshot_id

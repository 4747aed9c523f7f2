"""IPython glue: parse the line or cell, hand it to the runtime, display what happened. Nothing else."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Float, Integer, TraitError, Unicode, observe, validate

from mt_magic.errors import MtMagicError, closest_names
from mt_magic.runtime.connection import Connection, ConnectionSettings, connect
from mt_magic.runtime.manager.watchdog import StallPolicy
from mt_magic.runtime.results import StatementResult, first_error
from mt_magic.runtime.spark.session import SparkSettings
from mt_magic.runtime.statements.registry import PREVIEWED
from mt_magic.sql.ddl.freshness import FreshnessRules, freshness_to_cron
from mt_magic.sql.ddl.parser import parse_interval, parse_partition, parse_table_name
from mt_magic.widgets.render import StatementResultsView, StatusListView

MT_COMMANDS = (
    "list",
    "status",
    "history",
    "lineage",
    "explain",
    "refresh",
    "suspend",
    "resume",
    "verify",
    "config",
    "audit",
)
FIRST_NAMES_WAIT_S = 5.0
"""How long connecting waits, after Spark is up, for completion's first load of the catalog's names (it started
before Spark, so it has mostly ended): the first Tab after ``%load_ext`` offers them."""


_EXPLAINED_CHANGES = " / ".join([*(f"``ALTER … {action}``" for action in PREVIEWED.values()), "``CREATE OR ALTER``"])
"""The changes ``%mt explain`` previews, as its help names them (from the one list, ``registry.PREVIEWED``)."""


def _help_naming(**names: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """Fill a magic's docstring's ``{name}`` fields before ``magic_arguments`` makes it the help (``%mt?``)."""

    def fill(magic: Callable[..., object]) -> Callable[..., object]:
        magic.__doc__ = (magic.__doc__ or "").format(**names)
        return magic

    return fill


def _wait_for_refreshes(results: Sequence[StatementResult]) -> None:
    concurrent.futures.wait([r.refresh for r in results if r.refresh is not None])
    error = first_error(list(results))
    if error is not None:
        raise error


@magics_class
class MaterializedMagics(Magics):
    """``%%materialized`` (the statements) and ``%mt`` (status, controls, lineage, history)."""

    catalog_name = Unicode(
        "mt",
        config=True,
        help="Spark/pyiceberg name of the Iceberg REST catalog to use (takes effect at the next %load_ext).",
    )
    namespace = Unicode("default", config=True, help="Namespace for unqualified table names (next %load_ext).")
    spark_master = Unicode(
        "",
        config=True,
        help="Spark master URL for a new session, e.g. spark://host:7077 (default local[*]; next %load_ext).",
    )
    spark_remote = Unicode(
        "",
        config=True,
        help="Spark Connect URL, e.g. sc://host:15002: refreshes run on that server and the kernel starts no JVM "
        "(default $MT_MAGIC_SPARK_REMOTE; an active Connect session is reused; next %load_ext).",
    )
    max_concurrent_refreshes = Integer(
        2, config=True, help="Cap on refresh jobs running on Spark at once (next %load_ext)."
    )
    preview_rows = Integer(100, config=True, help="Rows in a card's preview of the newest data.")
    query_rows = Integer(1000, config=True, help="Rows a %%mtsql cell keeps (its pandas result, its live view).")
    failures_before_suspend = Integer(
        5,
        config=True,
        help="Consecutive failed refreshes after which a table suspends itself until "
        "ALTER … RESUME; the tables reading it wait meanwhile (next %load_ext).",
    )
    refresh_lease_seconds = Integer(
        30,
        config=True,
        help="How long this kernel's refresh leases outlive it: after a crash, another kernel or "
        "runner takes its tables over this many seconds later (renewed every third; next "
        "%load_ext).",
    )
    stall_factor = Float(
        4.0,
        config=True,
        help="A running refresh is flagged STALLED (card, %mt, history) past this multiple of the median duration "
        "of the table's recent refreshes, and never before stall_floor_seconds.",
    )
    stall_floor_seconds = Float(60.0, config=True, help="The earliest a refresh is flagged STALLED, in seconds.")
    stall_limit_factor = Float(
        20.0,
        config=True,
        help="Past this multiple of its usual duration (and stall_limit_floor_seconds) the manager cancels a "
        "refresh's Spark jobs and counts a failure: the table retries on its backoff.",
    )
    stall_limit_floor_seconds = Float(
        1800.0, config=True, help="The earliest the manager gives up on a running refresh, in seconds."
    )
    default_freshness_continuous = Unicode(
        "INTERVAL '3' MINUTE",
        config=True,
        help="FRESHNESS of a table that declares none (Flink's materialized-table.default-freshness.continuous).",
    )
    default_freshness_full = Unicode(
        "INTERVAL '1' HOUR",
        config=True,
        help="FRESHNESS of a REFRESH_MODE = FULL table that declares none; must be a FULL-mode schedule "
        "(materialized-table.default-freshness.full).",
    )
    freshness_threshold = Unicode(
        "INTERVAL '30' MINUTE",
        config=True,
        help="Without REFRESH_MODE, a freshness below this is CONTINUOUS, else FULL "
        "(materialized-table.refresh-mode.freshness-threshold).",
    )
    scheduler = Unicode(
        "kernel",
        config=True,
        help="Who refreshes a new table whose WITH names no 'scheduler': 'kernel' (this kernel's refresh manager) "
        "or 'airflow' (a DAG built from the catalog; see the README's 'Scheduling on Airflow').",
    )
    airflow_url = Unicode(
        "", config=True, help="Airflow's API server, e.g. http://127.0.0.1:8080 (default $MT_MAGIC_AIRFLOW_URL)."
    )
    airflow_username = Unicode("", config=True, help="Airflow user (default $MT_MAGIC_AIRFLOW_USERNAME).")
    airflow_password = Unicode("", config=True, help="Airflow user's password (default $MT_MAGIC_AIRFLOW_PASSWORD).")
    airflow_password_file = Unicode(
        "",
        config=True,
        help="A file holding the password instead, keeping it out of the notebook: Airflow's passwords JSON (the one "
        "local_airflow prints) or the password alone (default $MT_MAGIC_AIRFLOW_PASSWORD_FILE).",
    )
    airflow_token = Unicode("", config=True, help="An Airflow JWT instead of a user (default $MT_MAGIC_AIRFLOW_TOKEN).")

    def __init__(self, shell=None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self._connection: Connection | None = None
        self._live: Any = None
        self._completion: Any = None
        self._names_catalog: Any = None
        """The catalog completion reads until the connection is up (opened on the names' thread)."""
        self._names_closed = False
        super().__init__(shell=shell, **kwargs)

    # -- settings ----------------------------------------------------------------------------------------

    @validate(
        "preview_rows", "query_rows", "max_concurrent_refreshes", "failures_before_suspend", "refresh_lease_seconds"
    )
    def _positive(self, proposal):  # type: ignore[no-untyped-def]
        if proposal["value"] < 1:
            name = proposal["trait"].name
            refusal = MtMagicError(
                f"{name} must be at least 1, got {proposal['value']}",
                fix=f"%config MaterializedMagics.{name} = 1 or more (default {self.trait_defaults(name)})",
            )
            raise TraitError(str(refusal))
        return proposal["value"]

    @validate("stall_factor", "stall_floor_seconds", "stall_limit_factor", "stall_limit_floor_seconds")
    def _stall(self, proposal):  # type: ignore[no-untyped-def]
        try:
            self._stall_policy(**{proposal["trait"].name: proposal["value"]})
        except ValueError as exc:
            raise TraitError(f"{proposal['trait'].name} = {proposal['value']}: {exc}") from None
        return proposal["value"]

    def _stall_policy(self, **values: float) -> StallPolicy:
        """The watchdog's policy from the settings (``values`` override them, to check a proposed one)."""
        current = {
            name: values.get(name, getattr(self, name))
            for name in ("stall_factor", "stall_floor_seconds", "stall_limit_factor", "stall_limit_floor_seconds")
        }
        return StallPolicy(
            current["stall_factor"],
            timedelta(seconds=current["stall_floor_seconds"]),
            current["stall_limit_factor"],
            timedelta(seconds=current["stall_limit_floor_seconds"]),
        )

    @observe("stall_factor", "stall_floor_seconds", "stall_limit_factor", "stall_limit_floor_seconds")
    def _stall_changed(self, change) -> None:  # type: ignore[no-untyped-def]
        if self._connection is not None and self._connection.manager is not None:
            self._connection.manager.stall_policy = self._stall_policy()

    @validate("catalog_name", "namespace")
    def _identifier(self, proposal):  # type: ignore[no-untyped-def]
        value = proposal["value"].strip()
        if not value or any(c.isspace() or c == "." for c in value):
            name = proposal["trait"].name
            refusal = MtMagicError(
                f"{name} must be one identifier, got {proposal['value']!r}",
                fix=f"give one name without spaces or dots, e.g. %config MaterializedMagics.{name} = "
                f"'{self.trait_defaults(name)}'",
            )
            raise TraitError(str(refusal))
        return value

    @validate("default_freshness_continuous", "default_freshness_full", "freshness_threshold")
    def _interval(self, proposal):  # type: ignore[no-untyped-def]
        try:
            freshness = parse_interval(proposal["value"])
        except (MtMagicError, ValueError) as exc:
            raise TraitError(f"{proposal['trait'].name}: {exc}") from None
        if proposal["trait"].name == "default_freshness_full":
            try:
                freshness_to_cron(freshness)  # refuses one FULL mode cannot schedule, with the values that fit
            except MtMagicError as exc:
                raise TraitError(
                    str(MtMagicError(exc.problem, statement="default_freshness_full", fix=exc.fix))
                ) from None
        return freshness.sql()

    @property
    def rules(self) -> FreshnessRules:
        """The FRESHNESS rules from the settings, used to parse cells and (via the service) to create tables."""
        return FreshnessRules(
            parse_interval(self.default_freshness_continuous),
            parse_interval(self.default_freshness_full),
            parse_interval(self.freshness_threshold).to_timedelta(),
        )

    @validate("scheduler")
    def _scheduler(self, proposal):  # type: ignore[no-untyped-def]
        from mt_magic.scheduling.workflow import parse_scheduler

        try:
            return parse_scheduler(proposal["value"], "MaterializedMagics.scheduler").value
        except MtMagicError as exc:
            raise TraitError(str(exc)) from None

    @observe(
        "scheduler", "airflow_url", "airflow_username", "airflow_password", "airflow_password_file", "airflow_token"
    )
    def _workflows_changed(self, change) -> None:  # type: ignore[no-untyped-def]
        if self._connection is not None:
            self._configure_workflows(self._connection)

    def _configure_workflows(self, connection: Connection) -> None:
        """The default scheduler and Airflow's settings (traitlets first, then ``MT_MAGIC_AIRFLOW_*``)."""
        import os

        from mt_magic.scheduling.airflow_api import ENV_PREFIX, AirflowSettings, password_from_file
        from mt_magic.vocabulary import WorkflowSchedulerKind

        def setting(trait: str, key: str) -> str:
            return str(getattr(self, trait)) or os.environ.get(ENV_PREFIX + key, "")

        url, username = setting("airflow_url", "URL"), setting("airflow_username", "USERNAME")
        try:
            password, password_file = (
                setting("airflow_password", "PASSWORD"),
                setting("airflow_password_file", "PASSWORD_FILE"),
            )
            if url and password_file and not password:
                password = password_from_file(password_file, username, "MaterializedMagics.airflow_password_file")
            airflow = (
                AirflowSettings(url.rstrip("/"), username, password, setting("airflow_token", "TOKEN")) if url else None
            )
        except MtMagicError as exc:
            raise UsageError(str(exc)) from None
        connection.service.workflows.configure(WorkflowSchedulerKind(self.scheduler), airflow)

    @observe("default_freshness_continuous", "default_freshness_full", "freshness_threshold")
    def _rules_changed(self, change) -> None:  # type: ignore[no-untyped-def]
        if self._connection is not None:
            self._connection.service.set_rules(self.rules)

    # -- connection and live views ---------------------------------------------------------------------

    @property
    def connection(self) -> Connection:
        """The live connection; connects on first use."""
        if self._connection is None:
            spark = SparkSettings(master=self.spark_master) if self.spark_master else SparkSettings()
            spark = replace(spark, remote=self.spark_remote) if self.spark_remote else spark
            settings = ConnectionSettings(
                self.catalog_name,
                self.namespace,
                spark,
                self.max_concurrent_refreshes,
                rules=self.rules,
                failures_before_suspend=self.failures_before_suspend,
                lease_ttl=timedelta(seconds=self.refresh_lease_seconds),
                stall=self._stall_policy(),
            )
            try:
                self._start_completion()  # the names load from the catalog while Spark starts
                self._connection = connect(settings)
            except MtMagicError as exc:
                raise UsageError(str(exc)) from None
            self._names_catalog = None
            self._configure_workflows(self._connection)
            if self._completion is not None:  # the first Tab after %load_ext finds them (a slow catalog: not all)
                self._completion.names.wait(FIRST_NAMES_WAIT_S)
            notice = self._connection.service.engine.session_cache.notice
            if notice:  # a catalog defined before mt_magic, with Iceberg's caching
                print(notice)
        return self._connection

    def _start_completion(self) -> None:
        """Tab completion in ``%%materialized`` cells and on ``%mt`` lines, from names cached off the keypress.

        Raises:
            CatalogError: the catalog is not configured right, or the embedded one cannot start.
        """
        if self._completion is None and getattr(self.shell, "Completer", None) is not None:
            from mt_magic.catalog.client import resolve_catalog
            from mt_magic.completion.ipython import SqlCompleter

            config = resolve_catalog(self.catalog_name)  # here, once: the embedded server is started by one thread
            self._names_closed = False
            self._completion = SqlCompleter(self.shell, lambda: self._completion_catalog(config), MT_COMMANDS)

    def _completion_catalog(self, config):  # type: ignore[no-untyped-def]  # -> tuple[MaterializedCatalog, str]
        """What the names cache reads (on its thread): the connection's catalog, or, while Spark starts, its own
        client of the same catalog; never connects again after ``close()``."""
        if self._names_closed:
            raise UsageError(str(MtMagicError("mt_magic is not connected", fix="run %load_ext mt_magic")))
        connection = self._connection
        if connection is not None:
            workspace = connection.service.workspace
            return workspace.catalog, workspace.default_namespace
        if self._names_catalog is None:
            from mt_magic.catalog.client import open_catalog
            from mt_magic.catalog.tables import MaterializedCatalog

            self._names_catalog = MaterializedCatalog(open_catalog(config), config.name)
        return self._names_catalog, self.namespace

    def live_views(self):  # type: ignore[no-untyped-def]
        """The kernel's live views (cards, dashboard); ``None`` when no refresh manager runs to feed them."""
        connection = self.connection
        if self._live is None and connection.manager is not None:
            from mt_magic.widgets.actions import ServiceActions
            from mt_magic.widgets.live import LiveViews

            self._live = LiveViews(
                connection.service, ServiceActions(connection.service), preview_rows=lambda: self.preview_rows
            )
            if self.shell is not None:
                self.shell.events.register("post_run_cell", self._live.finish_cell)
        return self._live

    def close(self) -> None:
        """Close the live views (their thread and subscriptions), then stop the refresh manager."""
        if self._completion is not None:
            self._names_closed = True
            self._completion.close()
            self._completion = None
        if self._live is not None:
            if self.shell is not None:
                self.shell.events.unregister("post_run_cell", self._live.finish_cell)
            self._live.close()
            self._live = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # -- %%materialized ----------------------------------------------------------------------------------

    @magic_arguments()
    @argument("--cascade", action="store_true", help="REFRESH/DROP also the materialized tables downstream.")
    @argument("--wait", action="store_true", help="Block until the refreshes the cell started have finished.")
    @cell_magic
    def materialized(self, line: str, cell: str) -> object:
        """Create and manage materialized tables: a query and a freshness; the kernel keeps the table fresh.

        Example::

            %%materialized
            CREATE MATERIALIZED TABLE daily_orders
            FRESHNESS = INTERVAL '5' MINUTE
            AS SELECT order_date, count(*) AS orders, sum(amount) AS revenue
               FROM orders GROUP BY order_date

        Also: ``ALTER MATERIALIZED TABLE t SUSPEND | RESUME [WITH (...)] | REFRESH [PARTITION (k='v')]
        | AS SELECT ... | SET FRESHNESS = INTERVAL '1' HOUR | SET REFRESH_MODE = FULL | RENAME TO u``,
        ``CREATE OR ALTER ...``, ``START_MODE = FROM_NOW | FROM_NOW(INTERVAL '1' HOUR) |
        FROM_TIMESTAMP('2026-06-25 00:00:00') | RESUME_OR_FROM_BEGINNING`` (after REFRESH_MODE: only source rows
        added since the start), ``CREATE OR ALTER MATERIALIZED TABLE plain WITH ('convert-existing-table' =
        'true') AS ...`` (an Iceberg table in place), ``DROP MATERIALIZED TABLE [IF EXISTS] t``,
        ``SHOW MATERIALIZED TABLES [FROM ns] [LIKE 'daily%']``, ``SHOW CREATE MATERIALIZED TABLE t``,
        ``DESCRIBE MATERIALIZED TABLE t``.
        Several statements may share a cell. The cell shows a live card per table (state, freshness,
        last/next refresh, preview, controls).
        """
        from mt_magic.runtime.cell import execute_cell
        from mt_magic.sql import parse_cell

        args = _arguments(self.materialized, line, "%%materialized")
        service = self.connection.service
        try:
            results = execute_cell(service, parse_cell(cell, self.rules), cascade=args.cascade)
            if args.wait:
                _wait_for_refreshes(results)
        except MtMagicError as exc:
            raise UsageError(str(exc)) from None
        live = self.live_views()
        return live.statement_output(results) if live is not None else StatementResultsView(results)

    # -- %%mtsql ---------------------------------------------------------------------------------------

    @magic_arguments()
    @argument("--live", action="store_true", help="Re-run whenever a table it reads commits (a live view).")
    @argument("--spark", action="store_true", help="Return the Spark DataFrame (all rows) instead of pandas.")
    @argument("-o", "--out", default="", help="Also store the result (or the live view) in this variable.")
    @argument("--limit", type=int, default=None, help="Rows kept (default: MaterializedMagics.query_rows).")
    @argument("--debounce", type=float, default=2.0, help="--live: seconds without a commit before a re-run.")
    @cell_magic
    def mtsql(self, line: str, cell: str) -> object:
        """Run one Spark SQL query over materialized (and any) tables; ``--live`` keeps its result current.

        Example::

            %%mtsql --live -o top
            SELECT tms_company, order_cnt FROM continues_tms_res ORDER BY order_cnt DESC

        Names resolve as in statements (unqualified: the connection's namespace); each table of the catalog is
        read at the snapshot it had when the query started. The result is a pandas DataFrame (the next cell's
        ``_``), the Spark DataFrame with ``--spark``, or with ``--live`` a view that re-runs (debounced, off the
        kernel's thread) when a table it reads commits a refresh, showing the snapshots it is as of, each
        table's staleness, the last run, and Pause/Resume. Also from Python: ``mt_magic.query(sql)``,
        ``mt_magic.live(sql)``.
        """
        from mt_magic import queries

        args = _arguments(self.mtsql, line, "%%mtsql")
        limit = self.query_rows if args.limit is None else args.limit
        try:
            if args.live:
                result: Any = queries.live(
                    cell, limit=limit, debounce=args.debounce, views=self.live_views(), connection=self.connection
                )
            else:
                result = queries.query(cell, limit=limit, spark=args.spark, connection=self.connection)
        except MtMagicError as exc:
            raise UsageError(str(exc)) from None
        if not args.live and not args.spark and result.attrs.get("truncated"):
            print(f"The first {limit} rows (more exist): --limit N keeps more, --spark returns all.")
        if args.out and self.shell is not None:
            self.shell.user_ns[args.out] = result
        return result

    # -- %mt ---------------------------------------------------------------------------------------------

    @magic_arguments()
    @argument("command", nargs="?", default="list", help=" | ".join(MT_COMMANDS) + " (default: list)")
    @argument("target", nargs="*", help="a table name (explain: a table name or a statement)")
    @argument("--partition", default="", help="refresh: backfill one partition, e.g. --partition \"ds = '20250101'\"")
    @argument("--cascade", action="store_true", help="refresh: then refresh the tables downstream")
    @argument("--plot", action="store_true", help="history: the chart alone (duration by strategy, rows, staleness)")
    @line_magic
    @_help_naming(explained=_EXPLAINED_CHANGES)
    def mt(self, line: str) -> object:
        """Status, controls and lineage of materialized tables.

        ``%mt`` / ``%mt list``: a live dashboard of every table (with the refresh time each costs an hour) ·
        ``%mt status NAME``: its live card · ``%mt history NAME``: refresh durations and staleness over time
        (``--plot``: the chart alone) · ``%mt lineage [NAME]``: the dependency graph · ``%mt explain
        NAME|STATEMENT``: how it refreshes, or what {explained} would do, before it is made (rows kept or rebuilt,
        strategy, predicted cost) · ``%mt refresh NAME [--partition "ds = 'x'"] [--cascade]`` ·
        ``%mt suspend|resume NAME`` ·
        ``%mt verify NAME``: the query recomputed beside the table, nothing committed, and the rows that differ ·
        ``%mt config``: the effective settings · ``%mt audit [NAME]``: who changed what in the catalog, newest
        first (what this kernel's principal may read).
        """
        command, _, rest = line.strip().partition(" ")
        command = command.lower() or "list"
        if command not in MT_COMMANDS:
            refusal = MtMagicError(
                f"Unknown %mt command {command!r}",
                did_you_mean=[f"%mt {near}" for near in closest_names(command, MT_COMMANDS)],
                fix=f"use {', '.join(MT_COMMANDS)} (%mt? describes each)",
            )
            raise UsageError(str(refusal))
        try:
            if command == "explain":
                return self._explain(rest.strip())
            args = _arguments(self.mt, line, "%mt")
            handler: Callable[[Any], object] = getattr(self, f"_mt_{command}")
            return handler(args)
        except MtMagicError as exc:
            raise UsageError(str(exc)) from None

    def _mt_list(self, args: Any) -> object:
        live = self.live_views()
        return live.dashboard() if live is not None else StatusListView(())

    def _mt_status(self, args: Any) -> object:
        return self._required_live("status").card(self._one_name(args))

    def _mt_history(self, args: Any) -> object:
        from mt_magic.widgets.history_chart import HistoryChartView
        from mt_magic.widgets.static_views import HistoryView

        history = self.connection.service.history(self._one_name(args))
        view = HistoryChartView if args.plot else HistoryView
        return view(history.name, history.records, history.freshness)

    def _mt_lineage(self, args: Any) -> object:
        from mt_magic.widgets.static_views import LineageView

        service = self.connection.service
        focus = self._one_name(args) if args.target else None
        statuses = {s.name: s for s in service.statuses()}
        return LineageView(service.lineage(focus), statuses, focus)

    def _mt_refresh(self, args: Any) -> object:
        spec = _unquoted(args.partition.strip())
        partition = parse_partition(spec) if spec else ()
        return StatementResultsView((self.connection.service.refresh(self._one_name(args), partition, args.cascade),))

    def _mt_suspend(self, args: Any) -> object:
        return StatementResultsView((self.connection.service.suspend(self._one_name(args)),))

    def _mt_resume(self, args: Any) -> object:
        return StatementResultsView((self.connection.service.resume(self._one_name(args)),))

    def _mt_verify(self, args: Any) -> object:
        from mt_magic.widgets.static_views import VerifyView

        return VerifyView(str(self.connection.service.verify(self._one_name(args))))

    def _mt_config(self, args: Any) -> object:
        from mt_magic.widgets.static_views import ConfigView

        settings = {
            name: "****"
            if name in ("airflow_password", "airflow_token") and getattr(self, name)
            else str(getattr(self, name))
            for name in sorted(self.class_own_traits(config=True))
        }
        return ConfigView({**self.connection.describe(), **{f"MaterializedMagics.{k}": v for k, v in settings.items()}})

    def _mt_audit(self, args: Any) -> None:
        from mt_magic.catalog.access import AccessClient, audit_lines

        table = self._one_name(args).split(".", 1)[1] if args.target else None
        entries = AccessClient(self.connection.service.workspace.catalog.catalog).audit(table=table, limit=100)
        print("\n".join(audit_lines(entries)) or "(no changes recorded)")

    def _explain(self, text: str) -> object:
        from mt_magic.api.explaining import explained_by
        from mt_magic.api.statements import explained
        from mt_magic.widgets.static_views import ExplainView

        target = explained(text, self.rules, "%mt explain")  # refused before connecting
        return ExplainView(str(explained_by(self.connection.service, target)))

    # -- helpers -----------------------------------------------------------------------------------------

    def _qualify(self, name: str) -> str:
        return self.connection.service.workspace.qualify(parse_table_name(name))

    def _one_name(self, args: Any) -> str:
        if not args.target:
            refusal = MtMagicError(
                f"%mt {args.command} needs one table name",
                fix=f"name it, e.g. %mt {args.command} daily_orders (%mt list shows the tables)",
            )
            raise UsageError(str(refusal))
        return self._qualify(" ".join(args.target))  # a backquoted name may hold spaces; the grammar reads it

    def _required_live(self, command: str):  # type: ignore[no-untyped-def]
        live = self.live_views()
        if live is None:
            refusal = MtMagicError(
                f"%mt {command} needs the refresh manager, which is not running in this kernel",
                fix="connect with the manager started (%load_ext mt_magic starts it); %mt history NAME and "
                "%mt explain NAME work without it",
            )
            raise UsageError(str(refusal))
        return live


def _arguments(magic: Callable[..., object], line: str, label: str) -> Any:
    """The options of ``magic`` (called ``label``, e.g. ``%%mtsql``) parsed from ``line``; a flag it does not know
    is refused with the one it most likely meant (``--cascde``: did you mean --cascade?) and the flags it has."""
    try:
        return parse_argstring(magic, line)
    except UsageError as exc:
        said = str(exc)
        unknown = [w for w in said.partition("unrecognized arguments:")[2].split() if w.startswith("-")]
        if not unknown:
            raise
        flags = [flag for action in magic.parser._actions for flag in action.option_strings if flag.startswith("--")]  # type: ignore[attr-defined]
        refusal = MtMagicError(
            f"{label} does not know the option {unknown[0]}",
            did_you_mean=closest_names(unknown[0], flags),
            fix=f"use {', '.join(flags)} ({label}? describes each)",
        )
        raise UsageError(str(refusal)) from None


def _unquoted(value: str) -> str:
    """IPython's argument parser keeps the quotes around a value (``--partition "ds = 'x'"``); drop one pair."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].strip()
    return value

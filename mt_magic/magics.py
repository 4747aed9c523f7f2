"""IPython glue: parse the cell, hand the statements to the runtime, display what happened. Nothing else."""

from __future__ import annotations

import concurrent.futures

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Integer, Unicode, validate

from mt_magic.errors import MtMagicError
from mt_magic.runtime.connection import Connection, ConnectionSettings, connect
from mt_magic.runtime.session import SparkSettings
from mt_magic.sql.statements import TableName
from mt_magic.widgets.render import ConfigView, HistoryView, StatementResultsView, StatusListView


MT_COMMANDS = ("list", "status", "history", "refresh", "suspend", "resume", "config")


@magics_class
class MaterializedMagics(Magics):
    """``%%materialized`` (the statements) and ``%mt`` (status and controls)."""

    catalog_name = Unicode("mt", config=True, help="Spark/pyiceberg name of the Iceberg REST catalog to use.")
    namespace = Unicode("default", config=True, help="Namespace for unqualified table names.")
    spark_master = Unicode("", config=True, help="Spark master URL for a new session (default: local[*]).")
    preview_rows = Integer(100, config=True, help="Rows shown in a table's preview.")
    max_concurrent_refreshes = Integer(2, config=True, help="Cap on refresh jobs running on Spark at once.")

    def __init__(self, shell=None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(shell=shell, **kwargs)
        self._connection: Connection | None = None

    @validate("preview_rows", "max_concurrent_refreshes")
    def _positive(self, proposal):  # type: ignore[no-untyped-def]
        if proposal["value"] < 1:
            raise ValueError(f"{proposal['trait'].name} must be at least 1, got {proposal['value']}")
        return proposal["value"]

    @property
    def connection(self) -> Connection:
        """The live connection; connects on first use."""
        if self._connection is None:
            spark = SparkSettings(master=self.spark_master) if self.spark_master else SparkSettings()
            settings = ConnectionSettings(self.catalog_name, self.namespace, spark, self.max_concurrent_refreshes)
            try:
                self._connection = connect(settings)
            except MtMagicError as exc:
                raise UsageError(str(exc)) from None
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    @magic_arguments()
    @argument("--cascade", action="store_true", help="REFRESH/DROP also the materialized tables downstream.")
    @argument("--wait", action="store_true", help="Block until the refreshes the cell started have finished.")
    @cell_magic
    def materialized(self, line: str, cell: str) -> StatementResultsView:
        """Create and manage materialized tables: a query and a freshness; the kernel keeps the table fresh.

        Example::

            %%materialized
            CREATE MATERIALIZED TABLE daily_orders
            FRESHNESS = INTERVAL '5' MINUTE
            AS SELECT order_date, count(*) AS orders, sum(amount) AS revenue
               FROM orders GROUP BY order_date

        Also: ``ALTER MATERIALIZED TABLE t SUSPEND | RESUME [WITH (...)] | REFRESH [PARTITION (k='v')]
        | AS SELECT ... | SET FRESHNESS = INTERVAL '1' HOUR``, ``CREATE OR ALTER ...``,
        ``DROP MATERIALIZED TABLE [IF EXISTS] t``. Several statements may share a cell.
        """
        from mt_magic.sql import parse_cell

        args = parse_argstring(self.materialized, line)
        service = self.connection.service
        results = []
        try:
            for statement in parse_cell(cell):
                results.append(service.execute(statement, cascade=args.cascade))
            if args.wait:
                concurrent.futures.wait([r.refresh for r in results if r.refresh is not None])
                for r in results:
                    if r.refresh is not None and r.refresh.exception() is not None:
                        raise r.refresh.exception()  # type: ignore[misc]
        except MtMagicError as exc:
            raise UsageError(str(exc)) from None
        return StatementResultsView(tuple(results))

    @line_magic
    def mt(self, line: str) -> object:
        """Status and controls of materialized tables.

        ``%mt`` / ``%mt list``: every table with its state and freshness · ``%mt status NAME`` ·
        ``%mt history NAME`` · ``%mt refresh|suspend|resume NAME`` · ``%mt config``.
        """
        words = line.split()
        command, names = (words[0].lower(), words[1:]) if words else ("list", [])
        if command not in MT_COMMANDS:
            raise UsageError(f"Unknown %mt command {command!r}; use {', '.join(MT_COMMANDS)}.")
        try:
            if command == "list":
                return StatusListView(tuple(self._manager().statuses()))
            if command == "config":
                return ConfigView(self.connection.describe())
            if len(names) != 1:
                raise UsageError(f"%mt {command} needs one table name, e.g. %mt {command} daily_orders")
            service = self.connection.service
            name = service.workspace.qualify(TableName(*reversed(names[0].split("."))))
            if command == "status":
                return StatusListView((self._manager().status(name),))
            if command == "history":
                return HistoryView(name, tuple(service.engine.history(name)))
            if command in ("refresh", "suspend", "resume"):
                return StatementResultsView((getattr(service, command)(name),))
        except MtMagicError as exc:
            raise UsageError(str(exc)) from None
        raise AssertionError(command)

    def _manager(self):  # type: ignore[no-untyped-def]
        manager = self.connection.manager
        if manager is None:
            raise UsageError("The refresh manager is not running in this kernel.")
        return manager

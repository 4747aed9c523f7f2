"""What a card's buttons do, behind one small interface: the widgets call it, the runtime does the work.

:class:`ServiceActions` goes through the service, so a button does exactly what the equivalent statement does
(persisted in the catalog, then the manager told). Every method returns the one-line message to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from mt_magic.runtime.preview import Preview, preview
from mt_magic.sql.errors import SqlError
from mt_magic.sql.statements import AlterFreshness, AlterRefresh, Freshness, Position, TableName

if TYPE_CHECKING:
    from mt_magic.runtime.service import MaterializedTables

Partition = tuple[tuple[str, str], ...]


class TableActions(Protocol):
    """The controls of one materialized table."""

    def refresh(self, name: str, partition: Partition = (), cascade: bool = False) -> str:
        """Refresh now (a backfill with ``partition``), optionally cascading downstream; returns at once."""
        ...

    def suspend(self, name: str) -> str: ...

    def resume(self, name: str) -> str: ...

    def set_freshness(self, name: str, freshness: Freshness) -> str:
        """Persist a new freshness (and schedule) for ``name``."""
        ...

    def preview(self, name: str, limit: int) -> Preview:
        """The newest ``limit`` rows (runs Spark: never call it on the manager's thread)."""
        ...


def table_name(qualified: str) -> TableName:
    """``catalog.namespace.table`` → :class:`TableName`."""
    parts = qualified.split(".")
    return TableName(parts[-1], ".".join(parts[1:-1]) or None, parts[0] if len(parts) > 2 else None)


def parse_partition(text: str) -> Partition:
    """``ds = '20250101'`` → ``(("ds", "20250101"),)``, read by the statement grammar's ``PARTITION (…)``.

    Raises:
        SqlError: not a partition spec; the message quotes ``text``.
    """
    from mt_magic.sql.parser import parse_cell

    try:
        statements = parse_cell(f"ALTER MATERIALIZED TABLE t REFRESH PARTITION ({text})")
    except SqlError as exc:
        raise SqlError(exc.problem, statement=f"PARTITION ({text})", fix="write it as ds = '20250101'") from None
    if len(statements) != 1 or not isinstance(statements[0], AlterRefresh) or not statements[0].partition:
        raise SqlError(f"{text!r} is not one partition spec", statement="PARTITION", fix="write it as ds = '20250101'")
    return statements[0].partition


class ServiceActions:
    """The controls, through the statement service (the same code paths as the SQL statements)."""

    def __init__(self, service: MaterializedTables) -> None:
        self.service = service

    def refresh(self, name: str, partition: Partition = (), cascade: bool = False) -> str:
        return self.service.refresh(name, partition, cascade).message

    def suspend(self, name: str) -> str:
        return self.service.suspend(name).message

    def resume(self, name: str) -> str:
        return self.service.resume(name).message

    def set_freshness(self, name: str, freshness: Freshness) -> str:
        text = f"ALTER MATERIALIZED TABLE {name} SET FRESHNESS = {freshness.sql()}"
        statement = AlterFreshness(text, Position(1, 1), name=table_name(name), freshness=freshness)
        return self.service.execute(statement).message

    def preview(self, name: str, limit: int) -> Preview:
        return preview(self.service.workspace, name, limit)

"""``materialize()``: a materialized table defined from Python — ``CREATE OR ALTER MATERIALIZED TABLE`` written
from the arguments (:mod:`.statements`), then the ``ALTER … SET`` that give an existing table the freshness and
refresh mode asked for — returning its handle (:class:`~mt_magic.api.handle.MaterializedTable`).

Example (a notebook after ``%load_ext mt_magic``, or a plain script)::

    import mt_magic

    daily = mt_magic.materialize(
        "daily_orders",
        "SELECT order_date, count(*) AS orders FROM orders GROUP BY order_date",
        freshness="INTERVAL '5' MINUTE",
    )
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from mt_magic.api import session
from mt_magic.api import statements as build
from mt_magic.api.handle import MaterializedTable, waited

if TYPE_CHECKING:
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.sql.ddl.statements import Freshness
    from mt_magic.vocabulary import Expectation, RefreshMode


def materialize(
    name: str,
    query: str,
    *,
    freshness: build.FreshnessArg | None = None,
    refresh_mode: RefreshMode | str | None = None,
    options: Mapping[str, build.OptionValue] | None = None,
    partitioned_by: Sequence[str] = (),
    expectations: Sequence[Expectation] = (),
    wait: bool = False,
) -> MaterializedTable:
    """``CREATE OR ALTER MATERIALIZED TABLE name … AS query`` (FLIP-616's ``materializeInto``).

    A new table is created and its first refresh starts (``wait``: finishes; with the kernel's manager it runs in
    the background, in a script within this call). An existing materialized table gets the new query (Flink's
    CREATE OR ALTER: the schema may only append nullable columns) and then, if they differ from its own, the
    given refresh mode and freshness (``ALTER … SET``); everything is checked before the first change. A plain
    Iceberg table is converted in place with ``options={"convert-existing-table": "true"}``. ``expectations``:
    ``mt_magic.Expectation(name, condition, OnViolation.…)`` each, the cell's ``CONSTRAINT … EXPECT (…)``; a refresh
    whose rows fail one with ``FAIL UPDATE`` is held off ``main``.

    >>> mt_magic.materialize(  # doctest: +SKIP
    ...     "daily_orders",
    ...     "SELECT order_date, sum(amount) AS revenue FROM orders GROUP BY order_date",
    ...     freshness=timedelta(minutes=5),
    ...     options={"incremental": "auto"},
    ... )
    MaterializedTable('mt.default.daily_orders')

    Raises:
        SqlError: what a ``%%materialized`` cell with this statement would be refused for (the same Fix line).
        MtMagicError: what the service refuses (unknown source, schema change, …), nothing changed.
    """
    service = session.service()
    fresh = build.freshness(freshness) if freshness is not None else None
    mode = build.refresh_mode(refresh_mode) if refresh_mode is not None else None
    stmt = build.create_or_alter(
        name,
        query,
        service.workspace.rules,
        fresh=fresh,
        mode=mode,
        options=options,
        partitioned_by=partitioned_by,
        expectations=expectations,
    )
    qualified = service.workspace.qualify(stmt.name)
    follow_ups = _schedule_changes(service, qualified, fresh, mode)
    result = service.execute(stmt)
    for change in follow_ups:
        change()
    waited(result, wait)
    return MaterializedTable(qualified)


def _schedule_changes(
    service: MaterializedTables, name: str, fresh: Freshness | None, mode: RefreshMode | None
) -> list[Callable[[], object]]:
    """For an existing materialized table: the ``ALTER … SET`` calls that give it ``mode`` and ``fresh``, checked
    now (before anything changes) and in the order that never passes through an invalid schedule."""
    from mt_magic.sql.ddl.freshness import resolve_schedule
    from mt_magic.sql.ddl.parser import parse_interval
    from mt_magic.vocabulary import RefreshMode

    if (fresh is None and mode is None) or not service.workspace.catalog.exists(name):
        return []
    definition = service.workspace.catalog.load(name).definition
    if definition is None:  # a plain table: CREATE OR ALTER converts it (or refuses), with the statement's schedule
        return []
    current = parse_interval(definition.freshness)
    new_fresh = fresh if fresh is not None and fresh != current else None
    new_mode = mode if mode is not None and mode is not definition.refresh_mode else None
    resolve_schedule(new_fresh or current, new_mode or definition.refresh_mode, service.workspace.rules)
    set_fresh = [partial(service.set_freshness, name, new_fresh)] if new_fresh is not None else []
    set_mode = [partial(service.set_refresh_mode, name, new_mode)] if new_mode is not None else []
    return [*set_fresh, *set_mode] if new_mode is RefreshMode.FULL else [*set_mode, *set_fresh]

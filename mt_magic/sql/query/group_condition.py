"""What an expectation's condition groups by: the ``PARTITION BY`` keys of its window functions.

A condition with a window function (``count(*) OVER (PARTITION BY order_id) = 1``) is an expectation over groups
of rows: a row passes or fails with its group, so it is evaluated on the table as published, group by group
(``runtime.refresh.audit_groups``). Each window's keys are read here, rendered with every identifier quoted so
that ``order_id`` and ```order_id``` are one key.

>>> window_partitions("count(*) OVER (PARTITION BY order_id, `day`) = 1")
(('`order_id`', '`day`'),)
>>> window_partitions("amount >= 0")
()
>>> window_partitions("count(*) OVER () = 1")
((),)
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from mt_magic.sql.query.tree import DIALECT


@lru_cache(maxsize=256)
def window_partitions(condition: str) -> tuple[tuple[str, ...], ...]:
    """Each window function's ``PARTITION BY`` expressions in ``condition`` (Spark SQL, identifiers quoted), in the
    order written; ``()`` for a row condition (or one sqlglot cannot read: Spark judges it)."""
    try:
        tree = sqlglot.parse_one(condition, read=DIALECT)
    except sqlglot.errors.ParseError:
        return ()
    return tuple(
        tuple(key.sql(dialect=DIALECT, identify=True) for key in window.args.get("partition_by") or [])
        for window in tree.find_all(exp.Window)
    )

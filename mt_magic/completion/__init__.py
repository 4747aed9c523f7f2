"""Completion for ``%%materialized`` statements, query cells and ``%mt`` lines.

- ``grammar``: :func:`complete` / :func:`fragment`, pure: what may come next at a cursor (keywords in Flink's
  grammar order, table and column names, WITH keys and values, FRESHNESS units)
- ``queries``: what may come next inside a query (names, columns, aliases) and in CREATE's column list
- what the query being typed reads (tables and aliases, CTEs, subqueries) comes from sqlglot, in
  :mod:`mt_magic.sql.query.typed_reads` (sqlglot stays in ``mt_magic.sql``)
- ``mt_line``: a ``%mt`` line part by part (command, table or ``explain``'s statement, flags from the magic's parser)
- ``options``: the WITH option keys and values, gathered from where each option is defined
- ``names``: the catalog's names and columns, cached and reloaded in the background
- ``ipython``: :class:`SqlCompleter`, IPython's completer in SQL cells (JupyterLab's Tab), IPython's own elsewhere
"""

from __future__ import annotations

from mt_magic.completion.grammar import complete, fragment
from mt_magic.completion.names import CatalogNames, NameSnapshot

__all__ = ["CatalogNames", "NameSnapshot", "complete", "fragment"]

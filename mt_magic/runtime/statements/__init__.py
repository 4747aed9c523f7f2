"""Each statement's one home: its check, apply and undo (a handler, found by the statement's type in ``registry``)
and what it writes.

* ``registry`` — statement type → handler (:func:`~.registry.handler_for`); ``base`` — what a handler is.
* ``create`` — CREATE [OR ALTER]; ``convert`` — CREATE OR ALTER over a plain Iceberg table.
* ``alter`` — every ALTER but RENAME: AS, constraints, SET FRESHNESS / REFRESH_MODE / scheduler, SUSPEND, RESUME,
  REFRESH; ``alter_commit`` — the definition each of those writes, decided first (``change``: what ``%mt explain``
  previews; ``registry.PREVIEWED``: which statements it takes) and committed to the catalog.
* ``rename`` — ALTER … RENAME TO.  ``drop`` — DROP [CASCADE].  ``looks`` — SHOW, SHOW CREATE, DESCRIBE.
* Shared: ``definition`` (a CREATE's definition checked against Spark and the catalog), ``schema`` (a table's
  columns, keys, partitions), ``expectations`` (EXPECT constraints), ``iceberg_view`` (each write to the table's
  ``<table>__mv`` view).
"""

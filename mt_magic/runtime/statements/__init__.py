"""What each statement changes, checked first and written in order (its handler calls these; nothing else does).

* ``definition`` — a definition checked against Spark and the catalog (sources, schema under the recorded SQL
  settings, schedule, incremental options) before anything is written; shared by CREATE, ALTER and converting.
* ``create``, ``alter``, ``drop`` — CREATE; ALTER (AS, SET FRESHNESS / REFRESH_MODE, SUSPEND, RESUME, REFRESH's
  partition check) and CREATE OR ALTER of a materialized table; DROP [CASCADE].
* ``schema`` — the rules a table's columns follow (declared columns, keys, partitions, buckets).
* ``convert`` — CREATE OR ALTER over a plain Iceberg table: check its columns, add the definition in place.
* ``rename`` — RENAME: the table, its Iceberg view, and the definitions of the tables reading it.
* ``iceberg_view`` — each statement's write to the table's Iceberg view (``<table>__mv``), undone with the
  table's when a later step fails.
"""

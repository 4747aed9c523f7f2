"""Everything that talks to Spark: ``session`` (the session, its Iceberg jars: ``iceberg_maven``,
``iceberg_jars``), ``jobs`` (child sessions, job groups, progress, cancellation), ``semantics`` (the SQL settings a
definition records), ``quoting`` (every name in SQL text), ``time_travel``, ``preview``, ``event_log``,
``cluster`` (a local standalone cluster), ``ui_auth`` (the token on Spark's web UIs)."""

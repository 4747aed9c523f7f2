"""The read side: what the service answers without changing anything (catalog metadata plus this kernel's view).

* ``questions`` — the service's read-only half: SHOW, SHOW CREATE, DESCRIBE, statuses, history, lineage, explain,
  previews, staleness and rows.
* ``describe`` — the listings SHOW and DESCRIBE print, and the statement SHOW CREATE writes.
* ``history`` — a table's refreshes with the staleness each one ended.
* ``read`` — reading a table under a staleness policy (``mt_magic.read``).
* ``query`` — a query cell's query (``%%mtsql``): names resolved, tables pinned to snapshots, run by Spark.
"""

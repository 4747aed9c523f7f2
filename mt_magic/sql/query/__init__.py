"""A definition query read and rewritten on sqlglot's tree (spark dialect), never as raw text. Only this package
imports sqlglot: the runtime and completion hand it text and get facts, text or opaque conditions back (an
import-linter contract in ``pyproject.toml``).

- ``tree``: small readers of sqlglot trees shared by the others
- ``analysis`` / ``facts``: facts about a definition query (data only, no decisions)
- ``result_shape`` / ``result_rewrite``: the result SELECT, its facts and the rewrites strategies run
- ``rewrite``: the query's source tables renamed or pinned to snapshots
- ``keys`` / ``hidden_keys``: keys that locate affected rows; the hidden row identity and back
- ``text_constants``: STRING constants that are not valid UTF-8
- ``group_condition``: the ``PARTITION BY`` keys of an expectation's window functions (one over groups of rows)
- ``filtered_columns``: the column names a query's conditions compare (where Spark may push a filter into a scan)
- ``in_process_gate``: which queries DuckDB answers exactly as Spark (typed from the sources' schemas)
- ``typed_reads``: what a query being typed reads (tables, aliases, CTEs, subqueries), for completion
"""

"""What statements that are not materialized-table statements mean here, and what to run instead.

Pasted from Flink's and Paimon's documents, a cell often starts with ``SET 'execution.runtime-mode' = …``,
``CREATE CATALOG paimon …`` or a ``CREATE TABLE … WITH ('connector' = …)``; written from habit, it holds a
peer's statement: Snowflake's ``CREATE DYNAMIC TABLE … TARGET_LAG``, Databricks' ``REFRESH MATERIALIZED VIEW``,
``CREATE STREAMING TABLE`` or ``EXPLAIN CREATE MATERIALIZED VIEW``. ``%%materialized`` refuses them (they are not
its statements); this module supplies the "Fix:" that says what each does on Spark and Iceberg, or which
statement here does the same.
"""

from __future__ import annotations

from mt_magic.sql.ddl.lexing import STATEMENTS_HINT

_FIXES = {
    ("SET",): "Flink's SET configures the SQL client and job (result mode, runtime mode, checkpoints); on Spark, "
    "the refresh mode follows FRESHNESS or REFRESH_MODE, and Spark settings go into spark.conf.set(…) or "
    "ALTER MATERIALIZED TABLE … RESUME WITH ('spark.…' = '…'); drop the SET",
    ("CREATE", "CATALOG"): "catalogs are configured, not created: mt_magic uses the Iceberg REST catalog of the "
    "pyiceberg configuration (an embedded one by default); drop CREATE CATALOG and the catalog prefix of table "
    "names (`paimon`.`default`.t → t)",
    ("CREATE", "TABLE"): 'create source tables with Spark: spark.sql("CREATE TABLE t (…) USING iceberg '
    "[PARTITIONED BY (…)]\") — without WITH ('connector' = …), bucket options or NOT ENFORCED keys",
    ("CREATE", "TEMPORARY"): "a temporary (connector) table has no Iceberg equivalent; to generate data, "
    "use mt_magic.datagen, which writes seeded rows into an Iceberg table",
    ("BEGIN",): "Flink's statement set has no equivalent; run each INSERT INTO with spark.sql(…)",
    ("END",): "Flink's statement set has no equivalent; run each INSERT INTO with spark.sql(…)",
    ("INSERT",): "run INSERT INTO (or MERGE INTO for upserts by key) with spark.sql(…)",
    ("SELECT",): "query tables with spark.sql(…).show() or spark.table(…)",
    ("//",): "// is not a SQL comment; write -- comment",
    ("REFRESH",): "a materialized table refreshes now with ALTER MATERIALIZED TABLE t REFRESH [PARTITION (k = 'v')] "
    "(Databricks' REFRESH MATERIALIZED VIEW); Spark's REFRESH TABLE, which only clears Spark's cache, runs with "
    "spark.sql(…)",
    ("EXPLAIN",): "%mt explain CREATE MATERIALIZED TABLE … (or ALTER …, or a table's name) says how the table "
    "refreshes and why, and writes nothing (Databricks' EXPLAIN CREATE MATERIALIZED VIEW); Spark's EXPLAIN of a "
    "query runs with spark.sql(…)",
    ("CREATE", "DYNAMIC"): "a Snowflake dynamic table is a materialized table here: CREATE [OR ALTER] MATERIALIZED "
    "TABLE t FRESHNESS = INTERVAL '5' MINUTE AS SELECT … (TARGET_LAG is FRESHNESS; REFRESH_MODE = INCREMENTAL is "
    "CONTINUOUS, FULL is FULL, AUTO is leaving REFRESH_MODE out; WAREHOUSE has no equivalent, and the first "
    "refresh runs at CREATE)",
    ("ALTER", "DYNAMIC"): "ALTER MATERIALIZED TABLE t SUSPEND, RESUME, REFRESH or SET FRESHNESS = INTERVAL '5' MINUTE "
    "(Snowflake's SET TARGET_LAG)",
    ("DROP", "DYNAMIC"): "DROP MATERIALIZED TABLE t",
    ("SHOW", "DYNAMIC"): "SHOW MATERIALIZED TABLES [FROM namespace] [LIKE 'pattern']",
    ("DESCRIBE", "DYNAMIC"): "DESCRIBE MATERIALIZED TABLE t",
    ("CREATE", "STREAMING"): "a streaming table's incremental processing is a CONTINUOUS materialized table here: "
    "CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' MINUTE AS SELECT … (each refresh applies what its "
    "sources appended since the last)",
}
_FIXES[("DESC", "DYNAMIC")] = _FIXES[("DESCRIBE", "DYNAMIC")]

_CREATE_MODIFIERS = ("OR", "REPLACE", "ALTER")
"""Words between CREATE and what it creates (``CREATE OR REPLACE DYNAMIC TABLE`` reads as ``CREATE DYNAMIC``)."""


def statement_fix(words: list[str]) -> str:
    """The Fix: for a statement starting with ``words`` (upper case) that ``%%materialized`` does not run."""
    key = ["CREATE", *[w for w in words[1:] if w not in _CREATE_MODIFIERS]] if words[:1] == ["CREATE"] else words
    for length in (2, 1):
        fix = _FIXES.get(tuple(key[:length]))
        if fix is not None:
            return f"{fix} ({STATEMENTS_HINT})"
    what = " ".join(words)
    return f"{STATEMENTS_HINT}; run {what} with spark.sql(…)"

"""What Flink SQL statements that are not materialized-table statements mean here, and what to run instead.

Pasted from Flink's and Paimon's documents, a cell often starts with ``SET 'execution.runtime-mode' = …``,
``CREATE CATALOG paimon …`` or a ``CREATE TABLE … WITH ('connector' = …)``. ``%%materialized`` refuses them
(they are not its statements); this module supplies the "Fix:" that says what each does on Spark and Iceberg.
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
}


def statement_fix(words: list[str]) -> str:
    """The Fix: for a statement starting with ``words`` (upper case) that ``%%materialized`` does not run."""
    for length in (2, 1):
        fix = _FIXES.get(tuple(words[:length]))
        if fix is not None:
            return f"{fix} ({STATEMENTS_HINT})"
    what = " ".join(words)
    return f"{STATEMENTS_HINT}; run {what} with spark.sql(…)"

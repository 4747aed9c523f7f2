"""The Spark SQL settings a definition may pin in ``WITH`` (``'spark.sql.session.timeZone' = 'UTC'``).

Moved here from :mod:`mt_magic.runtime.spark.semantics` (which still applies them) so completion and the option
registry offer them without importing the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping

ANSWER_SETTINGS: Mapping[str, str] = {
    # The six that change the most answers.
    "spark.sql.session.timeZone": "string ↔ timestamp casts and TIMESTAMP literals, hour()/date_format()/"
    "to_date() of timestamps, current_date(): `ts > '2024-03-10 02:30:00'` selects other rows in another zone",
    "spark.sql.ansi.enabled": "overflow and invalid casts fail instead of giving NULL or wrapping, and type "
    "coercion follows ANSI rules (on by default from Spark 4.0)",
    "spark.sql.storeAssignmentPolicy": "how a refresh's values are cast into the table's column types (ANSI, "
    "LEGACY or STRICT)",
    "spark.sql.caseSensitive": "which column or field a name resolves to",
    "spark.sql.legacy.timeParserPolicy": "to_date/to_timestamp/unix_timestamp with a pattern: lenient (LEGACY), "
    "NULL (CORRECTED) or an error (EXCEPTION) for text the pattern does not fit (default EXCEPTION in 3.5, "
    "CORRECTED in 4)",
    "spark.sql.decimalOperations.allowPrecisionLoss": "the result type and rounding of decimal arithmetic",
    # Types of literals and results.
    "spark.sql.timestampType": "whether TIMESTAMP literals and casts are TIMESTAMP_LTZ or TIMESTAMP_NTZ",
    "spark.sql.legacy.allowNegativeScaleOfDecimal": "the type of decimal literals such as 1E10",
    "spark.sql.legacy.exponentLiteralAsDecimal.enabled": "whether 1.5E2 is a DECIMAL or a DOUBLE",
    "spark.sql.legacy.literal.pickMinimumPrecision": "the precision of integral literals in decimal arithmetic",
    "spark.sql.legacy.interval.enabled": "the type of date and timestamp subtraction",
    "spark.sql.legacy.typeCoercion.datetimeToString.enabled": "dates compared with strings as strings or as dates",
    "spark.sql.function.concatBinaryAsString": "concat of binaries gives a string or a binary",
    "spark.sql.function.eltOutputAsString": "elt of binaries gives a string or a binary",
    "spark.sql.legacy.lpadRpadAlwaysReturnString": "lpad/rpad of binaries gives a string or a binary",
    "spark.sql.legacy.decimal.retainFractionDigitsOnTruncate": "the scale of a truncated decimal (Spark 4)",
    # What the query text means.
    "spark.sql.ansi.doubleQuotedIdentifiers": 'whether "x" is a column or a string literal',
    "spark.sql.ansi.relationPrecedence": "whether JOIN binds tighter than a comma in FROM",
    "spark.sql.ansi.enforceReservedKeywords": "whether reserved words may name columns and tables",
    "spark.sql.parser.escapedStringLiterals": "whether backslashes in string literals escape",
    "spark.sql.legacy.setopsPrecedence.enabled": "whether INTERSECT binds tighter than UNION and EXCEPT",
    "spark.sql.legacy.ctePrecedencePolicy": "which of two nested WITH names of the same name a query reads "
    "(default EXCEPTION in 3.5, CORRECTED in 4)",
    "spark.sql.groupByOrdinal": "whether GROUP BY 1 groups by the first column or by the constant 1",
    "spark.sql.orderByOrdinal": "whether ORDER BY 1 orders by the first column (a top-N query keeps other rows)",
    "spark.sql.groupByAliases": "whether GROUP BY may name a SELECT alias",
    "spark.sql.legacy.bangEqualsNot": "whether ! means NOT in `a ! IN (…)` (Spark 4)",
    # Function and operator answers.
    "spark.sql.legacy.sizeOfNull": "size(NULL): -1 or NULL",
    "spark.sql.legacy.nullInEmptyListBehavior": "NULL IN (): NULL or false",
    "spark.sql.legacy.statisticalAggregate": "stddev/variance of one row: NaN or NULL",
    "spark.sql.legacy.scalarSubqueryCountBugBehavior": "a correlated COUNT subquery without rows: NULL or 0 (Spark 4)",
    "spark.sql.legacy.inSubqueryNullability": "the nullability of IN (subquery) results",
    "spark.sql.mapKeyDedupPolicy": "duplicate map keys: an error or the last one wins",
    "spark.sql.legacy.castComplexTypesToString.enabled": "the text of arrays, maps and structs cast to string",
    "spark.sql.legacy.followThreeValuedLogicInArrayExists": "exists() over an array with NULLs",
    "spark.sql.legacy.percentileDiscCalculation": "percentile_disc's answer",
    "spark.sql.legacy.negativeIndexInArrayInsert": "where array_insert puts a negative position",
    "spark.sql.legacy.integerGroupingId": "the type of grouping_id()",
    "spark.sql.legacy.groupingIdWithAppendedUserGroupBy": "grouping_id() when GROUP BY columns are added to a "
    "grouping set",
    "spark.sql.legacy.codingErrorAction": "decode/encode of invalid bytes: an error or a replacement character "
    "(Spark 4)",
    "spark.sql.legacy.javaCharsets": "which charsets encode/decode accept (Spark 4)",
}
"""Every Spark SQL setting captured with a definition, and how it changes a query's answer.

Left out on purpose: settings of plans and speed (``spark.sql.shuffle.*``, ``spark.sql.adaptive.*``,
``spark.sql.optimizer.*``), of the product (catalogs, ``spark.sql.iceberg.check-nullability``), of how Python
receives rows (``spark.sql.datetime.java8API.enabled``, Arrow), CHAR padding (Iceberg has no CHAR type), and
``spark.sql.variable.substitute`` (``${…}`` in the query would read other settings; write the value instead)."""

RUN_SETTINGS: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "how many tasks a shuffle (GROUP BY, JOIN, DISTINCT) splits into",
    "spark.sql.adaptive.enabled": "whether Spark re-plans a query from the sizes it meets while it runs",
    "spark.sql.adaptive.coalescePartitions.enabled": "whether small shuffle partitions are merged after a shuffle",
    "spark.sql.autoBroadcastJoinThreshold": "the largest join side (bytes) broadcast, not shuffled; -1: never",
    "spark.sql.files.maxPartitionBytes": "how many bytes of a source's files one task reads",
}
"""Spark settings of a refresh's speed, not its answer: what ``ALTER … RESUME WITH (…)`` is for (completion offers
them there; RESUME accepts any ``spark.*`` key, and a definition's pinned :data:`ANSWER_SETTINGS` win over them)."""

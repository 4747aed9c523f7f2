"""Malformed cells: each is rejected with its own error type and a message naming the statement, the
offending text, the line and column, and the fix."""

from __future__ import annotations

import re

import pytest

from mt_magic.sql import (
    ClauseOrderError,
    ColumnError,
    ConstraintError,
    DuplicateClauseError,
    FormatterError,
    FreshnessError,
    FreshnessRules,
    OptionError,
    Position,
    SqlError,
    SqlSyntaxError,
    UnsupportedClauseError,
    UnsupportedStatementError,
    parse_cell,
)

T = "CREATE MATERIALIZED TABLE t"
Q = "AS SELECT 1 AS ds"


def fresh(interval: str, extra: str = "") -> str:
    return f"{T} FRESHNESS = {interval} {extra} {Q}"


MALFORMED = [
    # --- FRESHNESS values and units -----------------------------------------------------------------
    (
        "unit-month",
        fresh("INTERVAL '1' MONTH"),
        FreshnessError,
        r"MONTH is not a FRESHNESS unit \(Flink's rule: no MONTH or YEAR\)",
    ),
    ("unit-year", fresh("INTERVAL '1' YEAR"), FreshnessError, r"YEAR is not a FRESHNESS unit"),
    ("unit-years", fresh("INTERVAL '2' YEARS"), FreshnessError, r"YEARS is not a FRESHNESS unit"),
    (
        "unit-week",
        fresh("INTERVAL '1' WEEK"),
        FreshnessError,
        r"WEEK is not a FRESHNESS unit.*use SECOND, MINUTE, HOUR or DAY",
    ),
    ("unit-unknown", fresh("INTERVAL '1' FORTNIGHT"), FreshnessError, r"FORTNIGHT is not a FRESHNESS unit"),
    ("unit-missing", fresh("INTERVAL '1'"), FreshnessError, r"INTERVAL '1' needs a unit, found 'AS'"),
    (
        "unit-in-quotes",
        fresh("INTERVAL '5 minutes'"),
        FreshnessError,
        r"puts the unit inside the quotes.*INTERVAL '5' MINUTES",
    ),
    ("zero", fresh("INTERVAL '0' SECOND"), FreshnessError, r"FRESHNESS must be positive, got INTERVAL '0'"),
    ("negative", fresh("INTERVAL '-1' SECOND"), FreshnessError, r"FRESHNESS must be positive, got INTERVAL '-1'"),
    ("fractional", fresh("INTERVAL '1.5' HOUR"), FreshnessError, r"positive whole number, got INTERVAL '1.5'"),
    ("not-a-number", fresh("INTERVAL 'soon' HOUR"), FreshnessError, r"positive whole number, got INTERVAL 'soon'"),
    ("empty-number", fresh("INTERVAL '' HOUR"), FreshnessError, r"positive whole number, got INTERVAL ''"),
    ("unquoted-number", fresh("INTERVAL 5 MINUTE"), FreshnessError, r"must be a single-quoted string, found '5'"),
    ("no-interval-keyword", fresh("'5' MINUTE"), FreshnessError, r"expected INTERVAL after FRESHNESS =, found \"'5'\""),
    (
        "interval-range",
        fresh("INTERVAL '1' DAY TO HOUR"),
        FreshnessError,
        r"interval ranges like DAY TO … are not supported",
    ),
    (
        "freshness-no-equals",
        f"{T} FRESHNESS INTERVAL '1' HOUR {Q}",
        SqlSyntaxError,
        r"expected '=' after FRESHNESS, found 'INTERVAL'",
    ),
    # --- FULL-mode divisors -------------------------------------------------------------------------
    (
        "full-5-hours-inferred",
        fresh("INTERVAL '5' HOUR"),
        FreshnessError,
        r"FRESHNESS = INTERVAL '5' HOUR is not allowed in FULL mode: hours must divide 24 \(1, 2, 3, 4, 6, 8, 12\)",
    ),
    (
        "full-60-seconds",
        fresh("INTERVAL '60' SECOND", "REFRESH_MODE = FULL"),
        FreshnessError,
        r"INTERVAL '60' SECOND is not allowed in FULL mode: "
        r"seconds must divide 60 \(1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30\)",
    ),
    ("full-7-minutes", fresh("INTERVAL '7' MINUTE", "REFRESH_MODE = FULL"), FreshnessError, r"minutes must divide 60"),
    (
        "full-45-minutes-inferred",
        fresh("INTERVAL '45' MINUTE"),
        FreshnessError,
        r"minutes must divide 60.*FULL mode was inferred: freshness 45 minutes ≥ 30 minutes threshold",
    ),
    (
        "full-2-days",
        fresh("INTERVAL '2' DAY"),
        FreshnessError,
        r"INTERVAL '2' DAY is not allowed in FULL mode: days must be 1",
    ),
    ("full-24-hours", fresh("INTERVAL '24' HOUR", "REFRESH_MODE = FULL"), FreshnessError, r"hours must divide 24"),
    (
        "refresh-mode-unknown",
        f"{T} REFRESH_MODE = BATCH {Q}",
        SqlSyntaxError,
        r"REFRESH_MODE must be CONTINUOUS or FULL, found 'BATCH'",
    ),
    (
        "refresh-mode-missing",
        f"{T} REFRESH_MODE = {Q}",
        SqlSyntaxError,
        r"REFRESH_MODE must be CONTINUOUS or FULL, found 'AS'",
    ),
    # --- structure ----------------------------------------------------------------------------------
    (
        "missing-as",
        f"{T} FRESHNESS = INTERVAL '1' HOUR",
        SqlSyntaxError,
        r"missing AS <select>.*Fix: end the statement with AS SELECT",
    ),
    ("as-without-query", f"{T} AS", SqlSyntaxError, r"AS is not followed by a query"),
    (
        "as-then-not-a-query",
        f"{T} AS INSERT INTO x VALUES (1)",
        SqlSyntaxError,
        r"AS must be followed by a query, found 'INSERT'",
    ),
    ("missing-table-name", "CREATE MATERIALIZED TABLE AS SELECT 1", SqlSyntaxError, r"missing table name before 'AS'"),
    (
        "missing-table-name-at-end",
        "DROP MATERIALIZED TABLE",
        SqlSyntaxError,
        r"missing table name before the end of the statement",
    ),
    ("missing-name-after-if-exists", "DROP MATERIALIZED TABLE IF EXISTS", SqlSyntaxError, r"missing table name"),
    (
        "name-four-parts",
        "DROP MATERIALIZED TABLE a.b.c.d",
        SqlSyntaxError,
        r"table name 'a.b.c.d' has 4 parts.*at most catalog.namespace.table",
    ),
    ("name-trailing-dot", "DROP MATERIALIZED TABLE a.", SqlSyntaxError, r"expected a name part after '.'"),
    (
        "missing-materialized",
        "CREATE OR ALTER TABLE t AS SELECT 1",
        UnsupportedStatementError,
        r"CREATE OR ALTER TABLE is not a materialized-table statement",
    ),
    (
        "create-table",
        "CREATE TABLE t (a INT)",
        UnsupportedStatementError,
        r"CREATE TABLE is not a materialized-table statement.*spark.sql",
    ),
    (
        "create-view",
        "CREATE VIEW v AS SELECT 1",
        UnsupportedStatementError,
        r"CREATE VIEW is not a materialized-table statement",
    ),
    ("drop-table", "DROP TABLE t", UnsupportedStatementError, r"DROP TABLE is not a materialized-table statement"),
    (
        "select",
        "SELECT * FROM t",
        UnsupportedStatementError,
        r"statement 'SELECT'.*SELECT … is not a materialized-table statement",
    ),
    (
        "flink-set",
        "SET 'execution.checkpointing.savepoint-dir' = 'hdfs://x'",
        UnsupportedStatementError,
        r"SET … is not a materialized-table statement",
    ),
    # A peer's statement, written from habit: the Fix names the statement that does it here.
    (
        "refresh-materialized",
        "REFRESH MATERIALIZED TABLE t",
        UnsupportedStatementError,
        r"REFRESH … is not a materialized-table statement. Fix: .*ALTER MATERIALIZED TABLE t REFRESH",
    ),
    (
        "databricks-view",
        "CREATE MATERIALIZED VIEW mv AS SELECT 1",
        SqlSyntaxError,
        r"column 21: MATERIALIZED VIEW is another engine's name.*Fix: write CREATE MATERIALIZED TABLE",
    ),
    (
        "databricks-or-replace-view",
        "CREATE OR REPLACE MATERIALIZED VIEW mv AS SELECT 1",
        SqlSyntaxError,
        r"Fix: write CREATE OR ALTER MATERIALIZED TABLE",
    ),
    ("show-views", "SHOW MATERIALIZED VIEWS", SqlSyntaxError, r"Fix: write SHOW MATERIALIZED TABLES"),
    ("drop-view", "DROP MATERIALIZED VIEW mv", SqlSyntaxError, r"Fix: write DROP MATERIALIZED TABLE"),
    (
        "snowflake-dynamic",
        "CREATE OR REPLACE DYNAMIC TABLE dt TARGET_LAG = '5 minutes' WAREHOUSE = wh AS SELECT 1",
        UnsupportedStatementError,
        r"CREATE OR REPLACE DYNAMIC is not.*Fix: a Snowflake dynamic table is a materialized table here.*"
        r"TARGET_LAG is FRESHNESS",
    ),
    ("snowflake-alter", "ALTER DYNAMIC TABLE dt SUSPEND", UnsupportedStatementError, r"ALTER MATERIALIZED TABLE t"),
    (
        "databricks-streaming",
        "CREATE STREAMING TABLE st AS SELECT 1",
        UnsupportedStatementError,
        r"CONTINUOUS materialized table",
    ),
    (
        "databricks-explain",
        "EXPLAIN CREATE MATERIALIZED VIEW mv AS SELECT 1",
        UnsupportedStatementError,
        r"Fix: %mt explain CREATE MATERIALIZED TABLE",
    ),
    (
        "or-replace",
        "CREATE OR REPLACE MATERIALIZED TABLE t AS SELECT 1",
        SqlSyntaxError,
        r"CREATE OR REPLACE is not supported.*CREATE OR ALTER",
    ),
    (
        "if-not-exists",
        "CREATE MATERIALIZED TABLE IF NOT EXISTS t AS SELECT 1",
        SqlSyntaxError,
        r"IF NOT EXISTS is not part of CREATE MATERIALIZED TABLE",
    ),
    ("drop-if-without-exists", "DROP MATERIALIZED TABLE IF t", SqlSyntaxError, r"expected EXISTS after IF, found 't'"),
    (
        "trailing-garbage-drop",
        "DROP MATERIALIZED TABLE t garbage",
        SqlSyntaxError,
        r"unexpected 'garbage' after DROP MATERIALIZED TABLE t",
    ),
    (
        "trailing-garbage-suspend",
        "ALTER MATERIALIZED TABLE t SUSPEND NOW",
        SqlSyntaxError,
        r"unexpected 'NOW' after SUSPEND",
    ),
    (
        "trailing-garbage-refresh",
        "ALTER MATERIALIZED TABLE t REFRESH PARTITION (ds = '1') x",
        SqlSyntaxError,
        r"unexpected 'x' after REFRESH PARTITION",
    ),
    (
        "trailing-garbage-set",
        "ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '1' HOUR ok",
        SqlSyntaxError,
        r"unexpected 'ok' after SET FRESHNESS",
    ),
    (
        "unknown-alter-action",
        "ALTER MATERIALIZED TABLE t PAUSE",
        SqlSyntaxError,
        r"unknown ALTER action 'PAUSE'.*SUSPEND, RESUME, REFRESH, AS, RENAME TO, SET FRESHNESS = INTERVAL …, "
        r"SET REFRESH_MODE = …, SET \('scheduler' = …\), ADD CONSTRAINT or DROP CONSTRAINT",
    ),
    ("alter-without-action", "ALTER MATERIALIZED TABLE t", SqlSyntaxError, r"ALTER MATERIALIZED TABLE needs an action"),
    (
        "alter-set-other",
        "ALTER MATERIALIZED TABLE t SET COMMENT = 'x'",
        SqlSyntaxError,
        r"SET supports FRESHNESS, REFRESH_MODE and \('scheduler' = …\), found 'COMMENT'",
    ),
    (
        "alter-set-freshness-month",
        "ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '1' MONTH",
        FreshnessError,
        r"MONTH is not a FRESHNESS unit",
    ),
    (
        "unknown-clause-typo",
        f"{T} FRESHNES = INTERVAL '1' HOUR {Q}",
        SqlSyntaxError,
        r"unexpected 'FRESHNES'.*did you mean FRESHNESS\?",
    ),
    (
        "unknown-clause",
        f"{T} STORED AS parquet {Q}",
        SqlSyntaxError,
        r"unexpected 'STORED': expected COMMENT, DISTRIBUTED BY, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE, "
        r"START_MODE or AS",
    ),
    ("partitioned-without-by", f"{T} PARTITIONED (ds) {Q}", SqlSyntaxError, r"expected BY after PARTITIONED"),
    (
        "column-list-late",
        f"{T} COMMENT 'c' (a, b) {Q}",
        SqlSyntaxError,
        r"the column list must come right after the table name",
    ),
    # --- parentheses, strings, comments, empty ------------------------------------------------------
    (
        "unbalanced-open-ddl",
        f"{T} PARTITIONED BY (ds {Q}",
        SqlSyntaxError,
        r"unbalanced parentheses: this '\(' is never closed",
    ),
    (
        "unbalanced-open-query",
        f"{T} AS SELECT count(x FROM s",
        SqlSyntaxError,
        r"CREATE MATERIALIZED TABLE t, line 1, column 44: unbalanced parentheses",
    ),
    ("unbalanced-close", f"{T} AS SELECT 1)", SqlSyntaxError, r"this '\)' has no matching '\('"),
    (
        "unterminated-string",
        f"{T} COMMENT 'abc {Q}",
        SqlSyntaxError,
        r"CREATE MATERIALIZED TABLE t, line 1, column 37: unterminated string literal",
    ),
    ("unterminated-string-in-body", f"{T} AS SELECT 'abc FROM s", SqlSyntaxError, r"unterminated string literal"),
    (
        "unterminated-backtick",
        "DROP MATERIALIZED TABLE `abc",
        SqlSyntaxError,
        r"unterminated backtick-quoted identifier",
    ),
    ("unterminated-comment", f"{T} {Q} /* open", SqlSyntaxError, r"unterminated comment: this /\* is never closed"),
    ("empty-cell", "", SqlSyntaxError, r"the cell is empty"),
    ("whitespace-cell", "  \n\t ", SqlSyntaxError, r"the cell is empty"),
    ("comment-only-cell", "-- nothing here\n/* nor here */ ;;", SqlSyntaxError, r"the cell is empty"),
    # --- duplicate and out-of-order clauses ---------------------------------------------------------
    (
        "duplicate-freshness",
        fresh("INTERVAL '1' HOUR", "FRESHNESS = INTERVAL '2' HOUR"),
        DuplicateClauseError,
        r"FRESHNESS is given twice \(first at line 1, column 29\)",
    ),
    ("duplicate-with", f"{T} WITH ('a'='1') WITH ('b'='2') {Q}", DuplicateClauseError, r"WITH is given twice"),
    ("duplicate-comment", f"{T} COMMENT 'a' COMMENT 'b' {Q}", DuplicateClauseError, r"COMMENT is given twice"),
    (
        "duplicate-refresh-mode",
        f"{T} REFRESH_MODE = FULL REFRESH_MODE = FULL {Q}",
        DuplicateClauseError,
        r"REFRESH_MODE is given twice",
    ),
    (
        "order-partitioned-after-freshness",
        f"{T} FRESHNESS = INTERVAL '1' HOUR PARTITIONED BY (ds) {Q}",
        ClauseOrderError,
        r"PARTITIONED BY must come before FRESHNESS.*COMMENT, DISTRIBUTED BY, PARTITIONED BY, WITH, FRESHNESS, "
        r"REFRESH_MODE, START_MODE, AS",
    ),
    (
        "order-with-after-refresh-mode",
        f"{T} REFRESH_MODE = FULL WITH ('a'='b') {Q}",
        ClauseOrderError,
        r"WITH must come before REFRESH_MODE",
    ),
    (
        "order-comment-last",
        f"{T} PARTITIONED BY (ds) COMMENT 'c' {Q}",
        ClauseOrderError,
        r"COMMENT must come before PARTITIONED BY",
    ),
    # --- options and partition specs ----------------------------------------------------------------
    ("option-duplicate-key", f"{T} WITH ('k'='1', 'K'='2') {Q}", OptionError, r"WITH sets 'K' twice"),
    (
        "option-unquoted-key",
        f"{T} WITH (k = 'v') {Q}",
        SqlSyntaxError,
        r"expected a single-quoted string as an option key in WITH, found 'k'",
    ),
    (
        "option-number-value",
        f"{T} WITH ('sink.parallelism' = 10) {Q}",
        SqlSyntaxError,
        r"as the value of option 'sink.parallelism', found '10'",
    ),
    ("option-empty-key", f"{T} WITH ('' = 'v') {Q}", OptionError, r"empty key in WITH"),
    (
        "option-empty-list",
        f"{T} WITH () {Q}",
        SqlSyntaxError,
        r"expected a single-quoted string as an option key in WITH, found '\)'",
    ),
    (
        "option-missing-comma",
        f"{T} WITH ('a'='1' 'b'='2') {Q}",
        SqlSyntaxError,
        r"expected '\)' to close WITH \(or ',' before the next option\)",
    ),
    (
        "resume-with-unquoted",
        "ALTER MATERIALIZED TABLE t RESUME WITH (p = 1)",
        SqlSyntaxError,
        r"option key in RESUME WITH",
    ),
    (
        "partition-duplicate",
        "ALTER MATERIALIZED TABLE t REFRESH PARTITION (ds='1', ds='2')",
        OptionError,
        r"PARTITION sets 'ds' twice",
    ),
    (
        "partition-no-value",
        "ALTER MATERIALIZED TABLE t REFRESH PARTITION (ds)",
        SqlSyntaxError,
        r"expected '=' after partition column ds",
    ),
    (
        "partition-expression-value",
        "ALTER MATERIALIZED TABLE t REFRESH PARTITION (ds = now())",
        SqlSyntaxError,
        r"expected a literal value for partition column ds, found 'now'",
    ),
    (
        "partitioned-by-transform",
        f"{T} PARTITIONED BY (days(ts)) {Q}",
        UnsupportedClauseError,
        r"Iceberg partition transforms are not supported",
    ),
    (
        "partitioned-by-duplicate",
        f"{T} PARTITIONED BY (ds, DS) {Q}",
        ColumnError,
        r"PARTITIONED BY lists column 'DS' twice",
    ),
    (
        "partitioned-by-empty",
        f"{T} PARTITIONED BY () {Q}",
        SqlSyntaxError,
        r"expected a column name in PARTITIONED BY, found '\)'",
    ),
    # --- formatters ---------------------------------------------------------------------------------
    (
        "formatter-not-partition",
        f"{T} PARTITIONED BY (ds) WITH ('partition.fields.dt.date-formatter' = 'yyyyMMdd') {Q}",
        FormatterError,
        r"names 'dt', which is not a partition column \(partition columns: ds\).*add dt to PARTITIONED BY",
    ),
    (
        "formatter-unpartitioned",
        f"{T} WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd') {Q}",
        FormatterError,
        r"not a partition column \(partition columns: none: the table has no PARTITIONED BY\)",
    ),
    (
        "formatter-bad-letter",
        f"{T} PARTITIONED BY (ds) WITH ('partition.fields.ds.date-formatter' = 'YYYYMMdd') {Q}",
        FormatterError,
        r"'Y' is the week-based year in Java; use 'yyyy'",
    ),
    (
        "formatter-non-string-column",
        f"{T} (ds INT) PARTITIONED BY (ds) WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd') {Q}",
        FormatterError,
        r"needs a string partition column, but ds is declared INT",
    ),
    # --- column lists and constraints ---------------------------------------------------------------
    (
        "pk-without-not-enforced",
        f"{T} (PRIMARY KEY (a)) {Q}",
        ConstraintError,
        r"PRIMARY KEY must be declared NOT ENFORCED, found '\)'.*add NOT ENFORCED",
    ),
    (
        "pk-enforced",
        f"{T} (PRIMARY KEY (a) ENFORCED) {Q}",
        ConstraintError,
        r"PRIMARY KEY must be declared NOT ENFORCED, found ENFORCED",
    ),
    (
        "column-pk-without-not-enforced",
        f"{T} (a INT PRIMARY KEY) {Q}",
        ConstraintError,
        r"must be declared NOT ENFORCED",
    ),
    (
        "two-primary-keys",
        f"{T} (a INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED) {Q}",
        ConstraintError,
        r"a second PRIMARY KEY: a table has at most one",
    ),
    (
        "pk-repeated-column",
        f"{T} (PRIMARY KEY (a, a) NOT ENFORCED) {Q}",
        ConstraintError,
        r"PRIMARY KEY lists column 'a' twice",
    ),
    (
        "pk-column-not-declared",
        f"{T} (a INT, PRIMARY KEY (b) NOT ENFORCED) {Q}",
        ColumnError,
        r"PRIMARY KEY column 'b' is not in the column list",
    ),
    (
        "partition-column-not-declared",
        f"{T} (a INT) PARTITIONED BY (ds) {Q}",
        ColumnError,
        r"partition column 'ds' is not in the column list",
    ),
    ("duplicate-column", f"{T} (a INT, A STRING) {Q}", ColumnError, r"column 'A' is declared twice"),
    ("empty-column-list", f"{T} () {Q}", SqlSyntaxError, r"the column list is empty"),
    (
        "column-list-missing-comma",
        f"{T} (a INT b INT) {Q}",
        SqlSyntaxError,
        r"unexpected 'b' after the type 'INT': expected ',' or '\)'",
    ),
    ("column-bad-type", f"{T} (a 'x') {Q}", SqlSyntaxError, r"expected a column type, found \"'x'\""),
    (
        "computed-column",
        f"{T} (a INT, b AS a + 1) {Q}",
        UnsupportedClauseError,
        r"computed column b AS … is a Flink feature that is not supported on Spark/Iceberg",
    ),
    (
        "metadata-column",
        f"{T} (ts TIMESTAMP(3) METADATA FROM 'timestamp') {Q}",
        UnsupportedClauseError,
        r"METADATA column ts is a Flink feature",
    ),
    ("virtual-metadata", f"{T} (p INT METADATA VIRTUAL) {Q}", UnsupportedClauseError, r"METADATA column p"),
    (
        "watermark",
        f"{T} (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) {Q}",
        UnsupportedClauseError,
        r"WATERMARK is a Flink feature that is not supported on Spark/Iceberg",
    ),
    (
        "unique-constraint",
        f"{T} (a INT, UNIQUE (a)) {Q}",
        UnsupportedClauseError,
        r"UNIQUE constraints are not supported",
    ),
    (
        "constraint-without-pk",
        f"{T} (CONSTRAINT c CHECK (a > 0)) {Q}",
        SqlSyntaxError,
        r"expected PRIMARY after CONSTRAINT name, found 'CHECK'",
    ),
]


@pytest.mark.parametrize(("cell", "error", "message"), [pytest.param(*m[1:], id=m[0]) for m in MALFORMED])
def test_malformed_statement_is_rejected_with_its_message(cell: str, error: type[SqlError], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_cell(cell)


def test_there_are_at_least_fifty_malformed_cases() -> None:
    assert len(MALFORMED) >= 50
    assert len({m[0] for m in MALFORMED}) == len(MALFORMED)


def test_error_names_statement_offending_text_position_and_fix() -> None:
    cell = "CREATE MATERIALIZED TABLE dws_overall\nPARTITIONED BY (ds)\nFRESHNESS = INTERVAL '5' HOUR\nAS SELECT 1"
    with pytest.raises(FreshnessError) as info:
        parse_cell(cell)
    err = info.value
    assert err.statement == "CREATE MATERIALIZED TABLE dws_overall"
    assert err.position == Position(3, 1)
    assert err.offending == "INTERVAL '5' HOUR"
    assert str(err).startswith(
        "CREATE MATERIALIZED TABLE dws_overall, line 3, column 1: FRESHNESS = INTERVAL '5' HOUR is not allowed in "
        "FULL mode: hours must divide 24 (1, 2, 3, 4, 6, 8, 12)"
    )
    assert "Fix: use 1, 2, 3, 4, 6, 8, 12 HOUR, another unit, or REFRESH_MODE = CONTINUOUS." in str(err)


def test_every_malformed_message_has_a_position_and_a_fix() -> None:
    for name, cell, error, _ in MALFORMED:
        with pytest.raises(error) as info:
            parse_cell(cell)
        err = info.value
        assert err.fix_line(), name  # a Fix: what to write, or the name meant
        if cell.strip() and name != "comment-only-cell":
            assert err.position is not None and err.statement, name
            assert re.search(r"line \d+, column \d+", str(err)), name


def test_error_in_second_statement_points_at_its_line() -> None:
    cell = "DROP MATERIALIZED TABLE a;\n\nALTER MATERIALIZED TABLE b\n  PAUSE;"
    with pytest.raises(SqlSyntaxError) as info:
        parse_cell(cell)
    assert info.value.position == Position(4, 3)
    assert info.value.statement == "ALTER MATERIALIZED TABLE b"
    assert info.value.offending == "PAUSE"


def test_full_mode_check_uses_the_configured_rules() -> None:
    cell = "CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '45' MINUTE AS SELECT 1"
    with pytest.raises(FreshnessError):
        parse_cell(cell)
    (statement,) = parse_cell(cell, rules=FreshnessRules(threshold=FreshnessRules().threshold * 4))
    assert statement.freshness is not None and statement.freshness.value == 45


def test_unterminated_string_names_the_statement_it_is_in() -> None:
    cell = "ALTER MATERIALIZED TABLE a SUSPEND;\nCREATE MATERIALIZED TABLE `db`.t COMMENT 'oops AS SELECT 1"
    with pytest.raises(SqlSyntaxError) as info:
        parse_cell(cell)
    assert info.value.statement == "CREATE MATERIALIZED TABLE db.t"
    assert info.value.position == Position(2, 42)

"""Cell text → typed, immutable statements: our own small grammar over ``sqlparse`` tokens.

Grammar (Flink's materialized-table statements; the query bodies are Spark SQL and are kept as text)::

    CREATE [OR ALTER] MATERIALIZED TABLE name [(columns / constraints)] [COMMENT '…']
        [PARTITIONED BY (col, …)] [WITH ('k' = 'v', …)] [FRESHNESS = INTERVAL '<n>' <unit>]
        [REFRESH_MODE = CONTINUOUS | FULL] [START_MODE = [RESUME_OR_]FROM_BEGINNING | FROM_NOW[(…)] | FROM_TIMESTAMP(…)]
        AS <select>
    ALTER MATERIALIZED TABLE name SUSPEND | RESUME [WITH (…)] | REFRESH [PARTITION (k = 'v', …)]
        | REFRESH WITH ('publish' = 'held') | ADD CONSTRAINT c EXPECT (…) [ON VIOLATION …] | DROP CONSTRAINT c
        | AS <select> | SET FRESHNESS = INTERVAL '<n>' <unit> | SET REFRESH_MODE = CONTINUOUS | FULL
        | SET ('scheduler' = 'kernel' | 'airflow') | RENAME TO new_name
    DROP MATERIALIZED TABLE [IF EXISTS] name
    SHOW MATERIALIZED TABLES [FROM | IN namespace] [LIKE 'pattern']
    SHOW CREATE MATERIALIZED TABLE name
    { DESCRIBE | DESC } MATERIALIZED TABLE name

Statements are separated by ``;``; ``--`` and ``/* */`` comments, any letter case and backtick-quoted
identifiers are accepted. Every error names the statement, the offending text, its line and column and a fix.
"""

from __future__ import annotations

from mt_magic.errors import closest_names
from mt_magic.options import SCHEDULER
from mt_magic.sql.ddl.clauses import KeyValues, freshness_interval, option_list, partition_spec, refresh_mode_value
from mt_magic.sql.ddl.columns import expectation
from mt_magic.sql.ddl.create import NAME_RESERVED, parse_create, query_body
from mt_magic.sql.ddl.cursor import Cursor, describe
from mt_magic.sql.ddl.flink_statements import statement_fix
from mt_magic.sql.ddl.freshness import FreshnessRules
from mt_magic.sql.ddl.lexing import (
    RawStatement,
    Source,
    Tok,
    check_parentheses,
    check_terminated,
    split_statements,
    statement_label,
    tokenize,
)
from mt_magic.sql.ddl.options import check_create_options, check_resume_options
from mt_magic.sql.ddl.show import parse_describe, parse_show
from mt_magic.sql.ddl.start_mode import START_MODE_FIX, start_mode_value
from mt_magic.sql.ddl.statements import (
    AlterConstraint,
    AlterFreshness,
    AlterQuery,
    AlterRefresh,
    AlterRefreshMode,
    AlterRename,
    AlterResume,
    AlterScheduler,
    AlterSuspend,
    AnyStatement,
    DropMaterializedTable,
    Freshness,
    StartMode,
)
from mt_magic.sql.errors import SqlError, SqlSyntaxError, UnsupportedOptionError, UnsupportedStatementError
from mt_magic.sql.names import Position, TableName, closest_name

ALTER_ACTIONS = [
    "SUSPEND",
    "RESUME",
    "REFRESH",
    "AS",
    "RENAME TO",
    "SET FRESHNESS = INTERVAL …",
    "SET REFRESH_MODE = …",
    "SET ('scheduler' = …)",
    "ADD CONSTRAINT",
    "DROP CONSTRAINT",
]
_ALTER_RESERVED = NAME_RESERVED | {"SUSPEND", "RESUME", "REFRESH", "SET", "RENAME", "ADD", "DROP"}


def parse_cell(text: str, rules: FreshnessRules | None = None) -> tuple[AnyStatement, ...]:
    """Parse every statement of a ``%%materialized`` cell, in order.

    Args:
        text: the cell body (without the ``%%materialized`` line).
        rules: the FRESHNESS settings used to validate FULL-mode freshness; Flink's defaults if omitted.

    Raises:
        SqlError: the first mistake in the cell (a subclass per kind of mistake), with its position.
    """
    source = Source(text)
    toks = tokenize(text)
    check_terminated(toks, source)
    rules = rules or FreshnessRules()
    return tuple(_parse_statement(raw, source, rules) for raw in split_statements(toks, source))


def parse_interval(text: str) -> Freshness:
    """``INTERVAL '5' MINUTE`` → :class:`Freshness`, read by the FRESHNESS clause's grammar (for settings).

    Raises:
        SqlError: not exactly one interval; the message says what is wrong with it.
    """
    cur = _clause("FRESHNESS", text, "= {}")
    freshness = freshness_interval(cur)
    _end_of_clause(cur, "the interval", "write one interval such as INTERVAL '5' MINUTE")
    return freshness


def parse_start_mode(text: str) -> StartMode:
    """``FROM_NOW(INTERVAL '1' HOUR)`` → :class:`StartMode`, read by the START_MODE clause's grammar (the catalog
    stores :meth:`StartMode.sql`).

    Raises:
        SqlError: not exactly one start mode; the message says what is wrong with it.
    """
    cur = _clause("START_MODE", text, "= {}")
    mode = start_mode_value(cur)
    _end_of_clause(cur, "the start mode", START_MODE_FIX)
    return mode


def parse_partition(text: str) -> tuple[tuple[str, str], ...]:
    """``ds = '20250101'`` → ``(("ds", "20250101"),)``, read by the grammar of ``REFRESH PARTITION (…)``.

    Raises:
        SqlError: not a partition spec; the message quotes ``text``.
    """
    fix = "write it as ds = '20250101'"
    try:
        cur = _clause("PARTITION", text, "({})")
        spec = partition_spec(cur)
        _end_of_clause(cur, "the partition spec", fix)
    except SqlError as exc:
        raise SqlError(exc.problem, statement=f"PARTITION ({text})", fix=fix) from None
    return spec.pairs


def parse_table_name(text: str) -> TableName:
    """``daily``, ``ns.`m1; x``` → :class:`TableName`, read by the statements' own table-name grammar (for
    ``%mt`` commands), so a name is written the same way in a cell and on a ``%mt`` line.

    Raises:
        SqlError: not one table name, or a name part mt_magic cannot carry (the message says why).
    """
    cur = _clause("TABLE", text)
    _, name = cur.table_name(frozenset())
    _end_of_clause(cur, "the table name", "write one name, e.g. daily_orders or ns.`my table`")
    return name


class _ClauseSource(Source):
    """A clause's text behind a keyword the caller never typed: positions are counted in the caller's text."""

    def __init__(self, text: str, start: int) -> None:
        super().__init__(text)
        self._start = start

    def position(self, offset: int) -> Position:
        return Source(self.text[self._start :]).position(max(offset - self._start, 0))


def _clause(keyword: str, text: str, around: str = "{}") -> Cursor:
    """A cursor just past ``keyword`` over ``keyword around(text)``: one clause, read outside a statement; an error's
    line and column are in ``text`` as the caller wrote it (``%mt refresh t --partition …``, the API's arguments)."""
    prefix = f"{keyword} {around[: around.index('{}')]}"
    body = prefix + text + around[around.index("{}") + 2 :]
    source = _ClauseSource(body, len(prefix))
    toks = tokenize(body)
    check_terminated(toks, source)
    raws = split_statements(toks, source)
    if len(raws) != 1:
        raise SqlSyntaxError(f"{text!r} is not one {keyword} clause", statement=keyword)
    cur = Cursor(raws[0], source, keyword)
    cur.advance()
    return cur


def _end_of_clause(cur: Cursor, what: str, fix: str) -> None:
    if not cur.at_end():
        raise cur.error(SqlSyntaxError, f"unexpected {describe(cur.peek())} after {what}", cur.peek(), fix)


def _parse_statement(raw: RawStatement, source: Source, rules: FreshnessRules) -> AnyStatement:
    first = raw.significant[0]
    cur = Cursor(raw, source, statement_label(raw.significant))
    check_parentheses(raw, source, cur.label)
    cur.advance()
    if first.is_word("CREATE"):
        _require_materialized(cur, first, skip=("OR", "ALTER", "REPLACE"))
        return parse_create(cur, first, rules)
    if first.is_word("ALTER"):
        _require_materialized(cur, first)
        return _parse_alter(cur, first)
    if first.is_word("DROP"):
        _require_materialized(cur, first)
        return _parse_drop(cur, first)
    if first.is_word("SHOW"):
        _require_materialized(cur, first, skip=("CREATE",))
        return parse_show(cur, first)
    if first.is_word("DESCRIBE", "DESC"):
        _require_materialized(cur, first)
        return parse_describe(cur, first)
    second = cur.peek()
    raise cur.error(
        UnsupportedStatementError,
        f"{first.text} … is not a materialized-table statement",
        first,
        statement_fix([first.text.upper(), *([second.upper] if second is not None and second.is_word() else [])]),
    )


def _require_materialized(cur: Cursor, first: Tok, skip: tuple[str, ...] = ()) -> None:
    """``CREATE TABLE``/``DROP VIEW``/… are someone else's statements: say so instead of a syntax error."""
    words = [first.text.upper()]
    j = 0
    while (tok := cur.peek(j)) is not None and skip and tok.is_word(*skip):
        words.append(tok.upper)
        j += 1
    tok = cur.peek(j)
    if tok is not None and tok.is_word("MATERIALIZED"):
        _refuse_materialized_view(cur, words, cur.peek(j + 1))
        return
    if tok is not None and tok.is_word():
        words.append(tok.upper)
    what = " ".join(words)
    if tok is not None and tok.is_word() and closest_name(tok.upper, ["MATERIALIZED"]) is not None:  # MATERIALISED
        raise cur.error(SqlSyntaxError, f"{tok.text} is not a keyword", tok, did_you_mean=["MATERIALIZED"])
    raise cur.error(
        UnsupportedStatementError,
        f"{what} is not a materialized-table statement",
        tok or first,
        statement_fix(words),
    )


def _refuse_materialized_view(cur: Cursor, words: list[str], tok: Tok | None) -> None:
    """``CREATE MATERIALIZED VIEW`` (Databricks', StarRocks', Postgres' name) written for a materialized table: say
    which statement here does it, instead of "expected TABLE"."""
    if tok is None or not tok.is_word("VIEW", "VIEWS"):
        return
    table = "TABLES" if tok.is_word("VIEWS") else "TABLE"
    written = " ".join("ALTER" if w == "REPLACE" else w for w in words)
    raise cur.error(
        SqlSyntaxError,
        f"MATERIALIZED {tok.text} is another engine's name: Flink's, and mt_magic's, is MATERIALIZED {table}",
        tok,
        f"write {written} MATERIALIZED {table} (a materialized table is what Databricks and StarRocks call a "
        "materialized view: a query and a freshness, kept fresh)",
    )


def _name(cur: Cursor, verb: str) -> TableName:
    cur.expect_word("MATERIALIZED", f"after {verb}")
    cur.expect_word("TABLE", "after MATERIALIZED")
    return cur.table_name(_ALTER_RESERVED)[1]


def _parse_alter(cur: Cursor, alter_tok: Tok) -> AnyStatement:
    name = _name(cur, "ALTER")
    cur.label = f"ALTER MATERIALIZED TABLE {name}"
    text = cur.source.text[cur.statement.start : cur.statement.stop]
    position = cur.source.position(alter_tok.start)
    tok = cur.peek()
    if tok is None:
        raise cur.error(
            SqlSyntaxError,
            "ALTER MATERIALIZED TABLE needs an action",
            None,
            "write one of " + ", ".join(ALTER_ACTIONS[:-1]) + " or " + ALTER_ACTIONS[-1],
        )
    if tok.is_word("AS"):
        query, query_pos = query_body(cur, cur.label)
        return AlterQuery(text, position, name=name, query=query, query_position=query_pos)
    cur.advance()
    if tok.is_word("SUSPEND"):
        cur.expect_end("SUSPEND")
        return AlterSuspend(text, position, name=name)
    if tok.is_word("RESUME"):
        options = option_list(cur, "RESUME WITH") if cur.accept_word("WITH") else KeyValues((), ())
        check_resume_options(cur, options)
        cur.expect_end("RESUME" + (" WITH (…)" if options.pairs else ""))
        return AlterResume(text, position, name=name, options=options.pairs)
    if tok.is_word("REFRESH"):
        partition = partition_spec(cur).pairs if cur.accept_word("PARTITION") else ()
        publish = _publish_held(cur, partition) if cur.accept_word("WITH") else False
        cur.expect_end("REFRESH" + (" PARTITION (…)" if partition else "") + (" WITH (…)" if publish else ""))
        return AlterRefresh(text, position, name=name, partition=partition, publish_held=publish)
    if tok.is_word("RENAME"):
        cur.expect_word("TO", "after RENAME", "write RENAME TO new_name")
        new_name = cur.table_name(_ALTER_RESERVED)[1]
        cur.expect_end("RENAME TO")
        return AlterRename(text, position, name=name, new_name=new_name)
    if tok.is_word("SET"):
        return _parse_alter_set(cur, text, position, name)
    if tok.is_word("ADD", "DROP"):
        constraint_tok = cur.expect_word("CONSTRAINT", f"after {tok.upper}", f"write {tok.upper} CONSTRAINT name …")
        constraint = cur.expect_identifier("a constraint name", frozenset({"EXPECT"}))[1]
        if tok.is_word("DROP"):
            cur.expect_end("DROP CONSTRAINT name")
            return AlterConstraint(text, position, name=name, drop=constraint)
        added = expectation(cur, constraint, constraint_tok)
        cur.expect_end("ADD CONSTRAINT … EXPECT (…)")
        return AlterConstraint(text, position, name=name, add=added)
    raise cur.error(
        SqlSyntaxError,
        f"unknown ALTER action {tok.text!r}",
        tok,
        "write one of " + ", ".join(ALTER_ACTIONS[:-1]) + " or " + ALTER_ACTIONS[-1],
    )


def _parse_alter_set(cur: Cursor, text: str, position: Position, name: TableName) -> AnyStatement:
    target = cur.peek()
    if target is not None and target.is_word("FRESHNESS"):
        cur.advance()
        freshness = freshness_interval(cur)
        cur.expect_end("SET FRESHNESS")
        return AlterFreshness(text, position, name=name, freshness=freshness)
    if target is not None and target.is_word("REFRESH_MODE"):
        cur.advance()
        return AlterRefreshMode(text, position, name=name, mode=refresh_mode_value(cur))
    if target is not None and target.text == "(":
        return _parse_alter_scheduler(cur, text, position, name)
    raise cur.error(
        SqlSyntaxError,
        f"ALTER … SET supports FRESHNESS, REFRESH_MODE and ('scheduler' = …), found {describe(target)}",
        target,
        "write SET FRESHNESS = INTERVAL '5' MINUTE, SET REFRESH_MODE = FULL or SET ('scheduler' = 'airflow')",
    )


def _parse_alter_scheduler(cur: Cursor, text: str, position: Position, name: TableName) -> AlterScheduler:
    """``SET ('scheduler' = …)``: the one table option ALTER changes (it moves the table between schedulers)."""
    options = option_list(cur, "SET")
    for (key, _), tok in zip(options.pairs, options.key_toks, strict=True):
        if key.lower() != SCHEDULER.key:
            raise cur.error(
                UnsupportedOptionError,
                f"ALTER … SET (…) changes only '{SCHEDULER.key}', found '{key}'",
                tok,
                f"write SET ('{SCHEDULER.key}' = 'airflow') or SET ('{SCHEDULER.key}' = 'kernel'); other "
                "options are fixed at CREATE (use CREATE OR ALTER to change the definition)",
                [f"'{near}'" for near in closest_names(key, [SCHEDULER.key])],
            )
    check_create_options(cur, options, None, "", clause="SET")  # the scheduler's value
    cur.expect_end("SET (…)")
    return AlterScheduler(text, position, name=name, scheduler=options.pairs[0][1].strip().lower())


def _parse_drop(cur: Cursor, drop_tok: Tok) -> DropMaterializedTable:
    cur.expect_word("MATERIALIZED", "after DROP")
    cur.expect_word("TABLE", "after MATERIALIZED")
    if_exists = False
    if cur.at_word("IF"):
        cur.advance()
        cur.expect_word("EXISTS", "after IF", "write DROP MATERIALIZED TABLE IF EXISTS name")
        if_exists = True
    _, name = cur.table_name(_ALTER_RESERVED)
    cur.label = f"DROP MATERIALIZED TABLE {name}"
    cur.expect_end(f"DROP MATERIALIZED TABLE {name}")
    return DropMaterializedTable(
        text=cur.source.text[cur.statement.start : cur.statement.stop],
        position=cur.source.position(drop_tok.start),
        name=name,
        if_exists=if_exists,
    )


def _publish_held(cur: Cursor, partition: tuple[tuple[str, str], ...]) -> bool:
    """``REFRESH WITH ('publish' = 'held')``: its one option, which publishes a held refresh instead of refreshing."""
    options = option_list(cur, "REFRESH WITH")
    fix = "write ALTER MATERIALIZED TABLE t REFRESH WITH ('publish' = 'held') to publish a held refresh on purpose"
    for (key, value), tok in zip(options.pairs, options.key_toks, strict=True):
        if key.lower() != "publish" or value.lower() != "held":
            raise cur.error(
                UnsupportedOptionError, f"REFRESH WITH ('{key}' = '{value}') is not an option of REFRESH", tok, fix
            )
    if partition:
        raise cur.error(UnsupportedOptionError, "a held refresh is published whole, not one partition", cur.peek(), fix)
    return bool(options.pairs)

"""The statements that only look: ``SHOW MATERIALIZED TABLES``, ``SHOW CREATE …`` and ``DESCRIBE …`` (Flink 2.2).

Grammar::

    SHOW MATERIALIZED TABLES [FROM | IN namespace] [LIKE 'pattern']
    SHOW CREATE MATERIALIZED TABLE name
    { DESCRIBE | DESC } MATERIALIZED TABLE name
"""

from __future__ import annotations

from mt_magic.sql.ddl.cursor import Cursor
from mt_magic.sql.ddl.lexing import Tok
from mt_magic.sql.ddl.statements import (
    DescribeMaterializedTable,
    ShowCreateMaterializedTable,
    ShowMaterializedTables,
)
from mt_magic.sql.names import TableName

SHOW_FIX = "write SHOW MATERIALIZED TABLES [FROM namespace] [LIKE 'pattern'] or SHOW CREATE MATERIALIZED TABLE name"


def parse_show(cur: Cursor, show_tok: Tok) -> ShowMaterializedTables | ShowCreateMaterializedTable:
    """``SHOW`` has been read; the cursor is at what follows it."""
    text = cur.source.text[cur.statement.start : cur.statement.stop]
    position = cur.source.position(show_tok.start)
    if cur.accept_word("CREATE"):
        cur.expect_word("MATERIALIZED", "after SHOW CREATE", SHOW_FIX)
        cur.expect_word("TABLE", "after SHOW CREATE MATERIALIZED", SHOW_FIX)
        name = _name(cur)
        cur.expect_end("SHOW CREATE MATERIALIZED TABLE name")
        return ShowCreateMaterializedTable(text, position, name=name)
    cur.expect_word("MATERIALIZED", "after SHOW", SHOW_FIX)
    cur.expect_word("TABLES", "after SHOW MATERIALIZED", SHOW_FIX)
    namespace = None
    if cur.accept_word("FROM") or cur.accept_word("IN"):
        tok, namespace = cur.expect_identifier("namespace after FROM/IN", frozenset({"LIKE"}))
        while cur.accept_punct("."):
            namespace += "." + cur.expect_identifier("namespace part after '.'")[1]
    like = None
    if _accept_like(cur):
        like = cur.expect_string("after LIKE", "write LIKE 'daily_%' (% matches any text, _ one character)")[1]
    cur.expect_end("SHOW MATERIALIZED TABLES" + (" FROM …" if namespace else "") + (" LIKE …" if like else ""))
    return ShowMaterializedTables(text, position, namespace=namespace, like=like)


def parse_describe(cur: Cursor, first: Tok) -> DescribeMaterializedTable:
    """``DESCRIBE``/``DESC`` has been read; the cursor is at what follows it."""
    text = cur.source.text[cur.statement.start : cur.statement.stop]
    position = cur.source.position(first.start)
    fix = f"write {first.upper} MATERIALIZED TABLE name"
    cur.expect_word("MATERIALIZED", f"after {first.upper}", fix)
    cur.expect_word("TABLE", "after MATERIALIZED", fix)
    name = _name(cur)
    cur.expect_end(f"{first.upper} MATERIALIZED TABLE name")
    return DescribeMaterializedTable(text, position, name=name)


def _accept_like(cur: Cursor) -> bool:
    """``LIKE`` lexes as an operator (sqlparse), not a word."""
    tok = cur.peek()
    if tok is not None and tok.text.upper() == "LIKE":
        cur.advance()
        return True
    return False


def _name(cur: Cursor) -> TableName:
    return cur.table_name(frozenset())[1]

"""STRING constants that are not valid UTF-8, read from the query's tree.

Spark keeps a STRING as bytes, so ``CAST(unhex('C328') AS STRING)`` is a constant no UTF-8 text spells. Where such
a constant reaches an Iceberg scan as a pushed filter, Iceberg reads it as text (U+FFFD for the stray bytes) and
skips the files whose bounds fall on the wrong side of that text; Spark's answer then depends on whether the
filter reached the scan (the 4.1 chain soak, seed 7: ``s >= CAST(unhex('C328') AS STRING)`` left out '日本', whose
bytes are above C3 28, from the table's scan, and kept it where the rows came from elsewhere). A refresh equals
Spark's answer only by running the query itself, so such a query recomputes.

>>> import sqlglot
>>> text_not_utf8(sqlglot.parse_one("SELECT * FROM t WHERE s >= CAST(unhex('C328') AS STRING)", read="spark"))
("CAST(UNHEX('C328') AS STRING)",)
>>> text_not_utf8(sqlglot.parse_one("SELECT CAST(unhex('C3A9') AS STRING) FROM t", read="spark"))
()
"""

from __future__ import annotations

import base64
import binascii

from sqlglot import exp

from mt_magic.sql.query.tree import spark_sql


def _constant_bytes(node: exp.Expr) -> bytes | None:
    """The bytes of a constant BINARY expression: ``unhex('…')``, ``X'…'``, ``unbase64('…')`` of a literal."""
    try:
        if isinstance(node, exp.HexString):
            return bytes.fromhex(str(node.this))
        if isinstance(node, exp.Unhex) and isinstance(node.this, exp.Literal) and node.this.is_string:
            return bytes.fromhex(node.this.name)
        if isinstance(node, exp.FromBase64) and isinstance(node.this, exp.Literal) and node.this.is_string:
            return base64.b64decode(node.this.name)
    except (ValueError, binascii.Error):  # not hex or base64: Spark answers NULL, which is no text at all
        return None
    return None


def text_not_utf8(tree: exp.Expr) -> tuple[str, ...]:
    """Every cast of a constant BINARY to STRING whose bytes are not valid UTF-8, as Spark SQL, deduplicated."""
    found: dict[str, None] = {}
    for cast in tree.find_all(exp.Cast):  # TRY_CAST too (a subclass)
        if not cast.to.is_type(exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR):
            continue
        data = _constant_bytes(cast.this)
        if data is None:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            found[spark_sql(cast)] = None
    return tuple(found)

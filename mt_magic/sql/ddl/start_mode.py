"""``START_MODE = …`` of CREATE [OR ALTER] MATERIALIZED TABLE (Flink 2.3, FLINK-39303).

Values: ``FROM_BEGINNING``, ``FROM_NOW``, ``FROM_NOW(INTERVAL '<n>' <unit>)``,
``FROM_TIMESTAMP([TIMESTAMP] '<yyyy-MM-dd[ HH:mm[:ss[.fff]]][offset]>')`` (UTC unless an offset is written), and
each with ``RESUME_OR_`` in front. Whether a timestamp lies in the future is the runtime's check (it owns the
clock); everything else about the clause is decided here.
"""

from __future__ import annotations

from datetime import datetime, timezone

from mt_magic.sql.ddl.clauses import UNITS
from mt_magic.sql.ddl.cursor import Cursor, describe
from mt_magic.sql.ddl.lexing import TokKind
from mt_magic.sql.ddl.statements import Freshness, StartFrom, StartMode
from mt_magic.sql.errors import SqlSyntaxError

RESUME_PREFIX = "RESUME_OR_"
VALUES = tuple(s.value for s in StartFrom)
_EXAMPLES = "FROM_BEGINNING, FROM_NOW, FROM_NOW(INTERVAL '1' HOUR) or FROM_TIMESTAMP('2026-06-25 00:00:00')"
START_MODE_FIX = f"write START_MODE = {_EXAMPLES} (each may start with RESUME_OR_)"
MAX_LOOKBACK_SECONDS = 100 * 365 * 86_400
"""A century: further back is the beginning of any table's history (and beyond it datetimes overflow)."""


def start_mode_value(cur: Cursor) -> StartMode:
    """``= <value>`` after ``START_MODE`` (the cursor is just past START_MODE)."""
    cur.expect_punct("=", "after START_MODE", START_MODE_FIX)
    tok = cur.peek()
    word = tok.upper if tok is not None and tok.kind is TokKind.WORD else ""
    resume = word.startswith(RESUME_PREFIX)
    base = word[len(RESUME_PREFIX) :] if resume else word
    if tok is None or base not in VALUES:
        raise cur.error(
            SqlSyntaxError, f"START_MODE must be one of {_EXAMPLES}, found {describe(tok)}", tok, START_MODE_FIX
        )
    cur.advance()
    start = StartFrom(base)
    if start is StartFrom.BEGINNING:
        if cur.at_punct("("):
            raise cur.error(
                SqlSyntaxError, f"{tok.text} takes no argument", cur.peek(), "write START_MODE = FROM_BEGINNING"
            )
        return StartMode(start, resume)
    if start is StartFrom.NOW:
        if not cur.accept_punct("("):
            return StartMode(start, resume)
        lookback = _lookback(cur, tok.text)
        cur.expect_punct(")", f"to close {tok.text}(…)", "write FROM_NOW(INTERVAL '1' HOUR)")
        return StartMode(start, resume, lookback=lookback)
    fix = "write FROM_TIMESTAMP('2026-06-25 00:00:00') or FROM_TIMESTAMP(TIMESTAMP '2026-06-25 00:00:00+02:00')"
    cur.expect_punct("(", f"after {tok.text}", fix)
    cur.accept_word("TIMESTAMP")
    text_tok, text = cur.expect_string(f"as the instant of {tok.text}", fix)
    instant = parse_timestamp(text)
    if instant is None:
        raise cur.error(
            SqlSyntaxError,
            f"{text_tok.text} is not a timestamp (yyyy-MM-dd HH:mm:ss, optionally with fractions and an offset)",
            text_tok,
            fix,
        )
    cur.expect_punct(")", f"to close {tok.text}(…)", fix)
    return StartMode(start, resume, timestamp=instant)


def _lookback(cur: Cursor, after: str) -> Freshness:
    fix = "write FROM_NOW(INTERVAL '1' HOUR): a whole number of SECOND, MINUTE, HOUR or DAY"
    cur.expect_word("INTERVAL", f"inside {after}(…)", fix)
    value_tok, text = cur.expect_string("as the interval's number", fix)
    number = text.strip()
    if not (number.isascii() and number.isdigit() and int(number) > 0):
        raise cur.error(
            SqlSyntaxError,
            f"the interval of {after} must be a positive whole number, got {value_tok.text}",
            value_tok,
            fix,
        )
    unit_tok = cur.peek()
    unit = UNITS.get(unit_tok.upper) if unit_tok is not None and unit_tok.kind is TokKind.WORD else None
    if unit is None:
        raise cur.error(SqlSyntaxError, f"{describe(unit_tok)} is not an interval unit of {after}", unit_tok, fix)
    cur.advance()
    if int(number) * unit.seconds > MAX_LOOKBACK_SECONDS:
        raise cur.error(
            SqlSyntaxError,
            f"INTERVAL {value_tok.text} {unit_tok.text} reaches back more than a century",  # type: ignore[union-attr]
            value_tok,
            "use FROM_BEGINNING to read all of the sources' history",
        )
    return Freshness(int(number), unit)


def parse_timestamp(text: str) -> datetime | None:
    """``yyyy-MM-dd[ HH:mm[:ss[.fff]]]`` with an optional ``Z`` or ``±HH:MM`` offset; UTC without one."""
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return instant.replace(tzinfo=timezone.utc) if instant.tzinfo is None else instant

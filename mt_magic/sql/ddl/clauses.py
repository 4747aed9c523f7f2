"""Grammar pieces shared by CREATE and ALTER: option lists, partition specs, name lists, FRESHNESS."""

from __future__ import annotations

from dataclasses import dataclass

from mt_magic.sql.ddl.cursor import Cursor, describe, unquote_string
from mt_magic.sql.ddl.lexing import Tok, TokKind
from mt_magic.sql.ddl.statements import Distribution, Freshness, FreshnessUnit
from mt_magic.sql.errors import FreshnessError, OptionError, SqlError, SqlSyntaxError, UnsupportedClauseError
from mt_magic.vocabulary import RefreshMode

UNITS = {u.value: u for u in FreshnessUnit} | {u.value + "S": u for u in FreshnessUnit}
_NOT_UNITS = (
    "MONTH",
    "MONTHS",
    "YEAR",
    "YEARS",
    "WEEK",
    "WEEKS",
    "MILLISECOND",
    "MILLISECONDS",
    "MICROSECOND",
    "MICROSECONDS",
    "QUARTER",
    "QUARTERS",
)
_FOLLOWERS = frozenset({"AS", "REFRESH_MODE", "START_MODE"})
"""What may follow a FRESHNESS clause: seeing it where the unit belongs means the unit is missing."""
_UNIT_FIX = "use SECOND, MINUTE, HOUR or DAY (plural forms are accepted), e.g. INTERVAL '5' MINUTE"


@dataclass(frozen=True)
class KeyValues:
    """``('k' = 'v', …)`` or ``(k = 'v', …)`` as written, with each key's token for error positions."""

    pairs: tuple[tuple[str, str], ...]
    key_toks: tuple[Tok, ...]


def option_list(cur: Cursor, clause: str) -> KeyValues:
    """``( 'key' = 'value' [, …] )`` — keys and values single-quoted strings, keys unique."""
    fix = "write options as 'key' = 'value', both single-quoted"
    cur.expect_punct("(", f"after {clause}", fix)
    pairs: list[tuple[str, str]] = []
    toks: list[Tok] = []
    while True:
        key_tok, key = cur.expect_string(f"as an option key in {clause}", fix)
        cur.expect_punct("=", f"after the option key '{key}'", fix)
        _, value = cur.expect_string(f"as the value of option '{key}'", fix)
        _check_key(cur, key_tok, key, [k for k, _ in pairs], clause)
        pairs.append((key, value))
        toks.append(key_tok)
        if not cur.accept_punct(","):
            break
    cur.expect_punct(")", f"to close {clause} (or ',' before the next option)", fix)
    return KeyValues(tuple(pairs), tuple(toks))


def partition_spec(cur: Cursor) -> KeyValues:
    """``PARTITION ( col = 'value' [, …] )`` — a column name, then a string or number literal."""
    fix = "write PARTITION (col = 'value', …)"
    cur.expect_punct("(", "after PARTITION", fix)
    pairs: list[tuple[str, str]] = []
    toks: list[Tok] = []
    while True:
        key_tok, key = cur.expect_identifier("a partition column name")
        cur.expect_punct("=", f"after partition column {key}", fix)
        tok = cur.peek()
        if tok is None or tok.kind not in (TokKind.STRING, TokKind.NUMBER):
            raise cur.error(
                SqlSyntaxError, f"expected a literal value for partition column {key}, found {describe(tok)}", tok, fix
            )
        cur.advance()
        _check_key(cur, key_tok, key, [k for k, _ in pairs], "PARTITION")
        pairs.append((key, unquote_string(tok) if tok.kind is TokKind.STRING else tok.text))
        toks.append(key_tok)
        if not cur.accept_punct(","):
            break
    cur.expect_punct(")", "to close PARTITION (or ',' before the next column)", fix)
    return KeyValues(tuple(pairs), tuple(toks))


def _check_key(cur: Cursor, tok: Tok, key: str, seen: list[str], clause: str) -> None:
    if not key.strip():
        raise cur.error(OptionError, f"empty key in {clause}", tok, "give every entry a non-empty key")
    if key.lower() in (k.lower() for k in seen):
        raise cur.error(OptionError, f"{clause} sets {key!r} twice", tok, "keep one of the two entries")


def name_list(cur: Cursor, clause: str, duplicate: type[SqlError]) -> tuple[tuple[str, Tok], ...]:
    """``( col [, …] )`` of plain column names, unique; a transform like ``days(ts)`` is refused."""
    cur.expect_punct("(", f"after {clause}", f"write {clause} (col, …)")
    names: list[tuple[str, Tok]] = []
    while True:
        tok, name = cur.expect_identifier(f"a column name in {clause}")
        if cur.at_punct("("):
            raise cur.error(
                UnsupportedClauseError,
                f"{clause} takes column names, not expressions like "
                f"{tok.text}(…); Iceberg partition transforms are not supported",
                tok,
                "partition by a column the query computes (e.g. date_format(ts, 'yyyyMMdd') AS ds)",
            )
        if name.lower() in (n.lower() for n, _ in names):
            raise cur.error(duplicate, f"{clause} lists column {name!r} twice", tok, "list each column once")
        names.append((name, tok))
        if not cur.accept_punct(","):
            break
    cur.expect_punct(")", f"to close {clause} (or ',' before the next column)", f"write {clause} (col, …)")
    return tuple(names)


def freshness_interval(cur: Cursor) -> Freshness:
    """``= INTERVAL '<n>' <unit>`` after FRESHNESS (the cursor is just past FRESHNESS)."""
    example = "write FRESHNESS = INTERVAL '5' MINUTE"
    cur.expect_punct("=", "after FRESHNESS", example)
    tok = cur.peek()
    if not cur.accept_word("INTERVAL"):
        raise cur.error(FreshnessError, f"expected INTERVAL after FRESHNESS =, found {describe(tok)}", tok, example)
    value_tok = cur.peek()
    if value_tok is None or value_tok.kind is not TokKind.STRING:
        raise cur.error(
            FreshnessError,
            f"the interval number must be a single-quoted string, found {describe(value_tok)}",
            value_tok,
            example,
        )
    cur.advance()
    value = _interval_value(cur, value_tok, unquote_string(value_tok))
    unit_tok = cur.peek()
    if unit_tok is None or unit_tok.kind is not TokKind.WORD or unit_tok.upper in _FOLLOWERS:
        raise cur.error(
            FreshnessError, f"INTERVAL {value_tok.text} needs a unit, found {describe(unit_tok)}", unit_tok, _UNIT_FIX
        )
    unit = UNITS.get(unit_tok.upper)
    if unit is None:
        why = " (Flink's rule: no MONTH or YEAR)" if unit_tok.upper in _NOT_UNITS else ""
        raise cur.error(FreshnessError, f"{unit_tok.text} is not a FRESHNESS unit{why}", unit_tok, _UNIT_FIX)
    cur.advance()
    if cur.at_word("TO"):
        raise cur.error(
            FreshnessError, f"interval ranges like {unit_tok.text} TO … are not supported", cur.peek(), example
        )
    if value * unit.seconds > MAX_FRESHNESS_SECONDS:
        raise cur.error(
            FreshnessError,
            f"FRESHNESS = INTERVAL {value_tok.text} {unit_tok.text} is longer than a year",
            value_tok,
            "a table refreshed less than yearly is a snapshot: use at most INTERVAL '365' DAY",
        )
    return Freshness(value, unit)


MAX_FRESHNESS_SECONDS = 365 * 86_400
"""A year: beyond it a freshness is not a schedule (and Python's timedelta overflows not far beyond)."""


def _interval_value(cur: Cursor, tok: Tok, text: str) -> int:
    number = text.strip()
    words = number.split()
    if len(words) == 2 and words[0].isdigit():
        raise cur.error(
            FreshnessError,
            f"INTERVAL {tok.text} puts the unit inside the quotes",
            tok,
            f"write INTERVAL '{words[0]}' {words[1].upper()}",
        )
    if number.isascii() and number.isdigit() and int(number) > 0:
        return int(number)
    if number.lstrip("+-").isascii() and number.lstrip("+-").isdigit():
        problem = f"FRESHNESS must be positive, got INTERVAL {tok.text}"
    else:
        problem = f"FRESHNESS must be a positive whole number, got INTERVAL {tok.text}"
    raise cur.error(FreshnessError, problem, tok, "use a whole number of at least 1, e.g. INTERVAL '5' MINUTE")


def refresh_mode_value(cur: Cursor) -> RefreshMode:
    """``= CONTINUOUS | FULL`` after ``REFRESH_MODE`` (in CREATE and in ALTER … SET)."""
    fix = "write REFRESH_MODE = CONTINUOUS or REFRESH_MODE = FULL"
    cur.expect_punct("=", "after REFRESH_MODE", fix)
    tok = cur.peek()
    mode = RefreshMode.__members__.get(tok.upper) if tok is not None and tok.kind is TokKind.WORD else None
    if mode is None:
        raise cur.error(SqlSyntaxError, f"REFRESH_MODE must be CONTINUOUS or FULL, found {describe(tok)}", tok, fix)
    cur.advance()
    return mode


def distribution(cur: Cursor) -> Distribution:
    """``BY [HASH] (col, …) INTO n BUCKETS`` after ``DISTRIBUTED`` (Flink's bucketing, as Iceberg buckets)."""
    fix = "write DISTRIBUTED BY HASH(col) INTO 16 BUCKETS"
    cur.expect_word("BY", "after DISTRIBUTED", fix)
    if cur.at_word("RANGE"):
        raise cur.error(
            UnsupportedClauseError,
            "DISTRIBUTED BY RANGE has no Iceberg equivalent",
            cur.peek(),
            "use DISTRIBUTED BY HASH(col) INTO n BUCKETS, or PARTITIONED BY for ranges of values",
        )
    cur.accept_word("HASH")
    columns = tuple(name for name, _ in name_list(cur, "DISTRIBUTED BY", SqlSyntaxError))
    cur.expect_word("INTO", "after the bucket columns", fix)
    tok = cur.peek()
    if tok is None or not tok.text.isdigit() or int(tok.text) < 1:
        raise cur.error(SqlSyntaxError, f"expected a positive number of buckets, found {describe(tok)}", tok, fix)
    cur.advance()
    cur.expect_word("BUCKETS", "after the number of buckets", fix)
    return Distribution(columns, int(tok.text))

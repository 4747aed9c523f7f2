"""The cell as a flat list of tokens with offsets, split into statements.

``sqlparse``'s lexer does the hard part (strings, ``--`` and ``/* */`` comments, backtick identifiers), so a
``;`` inside a string, comment or query body never splits a statement. This module only turns its
``(ttype, value)`` stream into :class:`Tok` records that know where they are, splits multi-word keyword
tokens (``PRIMARY KEY``, ``IF EXISTS``) into words, and rejects what can never be valid: unterminated
strings and comments, unbalanced parentheses, an empty cell.
"""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass

from sqlparse import lexer
from sqlparse import tokens as T

from mt_magic.sql.errors import SqlSyntaxError
from mt_magic.sql.names import Position

STATEMENTS_HINT = (
    "%%materialized runs CREATE [OR ALTER] MATERIALIZED TABLE, ALTER MATERIALIZED TABLE, DROP MATERIALIZED TABLE, "
    "SHOW MATERIALIZED TABLES, SHOW CREATE MATERIALIZED TABLE and DESCRIBE MATERIALIZED TABLE"
)


class TokKind(enum.Enum):
    """What a token is, as far as our grammar cares."""

    WORD = "word"
    """An unquoted keyword or identifier; compared case-insensitively."""
    QUOTED = "quoted"
    """A backtick-quoted identifier; never a keyword."""
    STRING = "string"
    """A single-quoted string literal."""
    DQSTRING = "dqstring"
    """A double-quoted string (a string in Spark, an identifier elsewhere)."""
    NUMBER = "number"
    PUNCT = "punct"
    """``( ) , ; . :`` and friends."""
    OPERATOR = "operator"
    """``=``, ``<``, ``*``, … and anything else without a role in the DDL grammar."""
    COMMENT = "comment"
    SPACE = "space"
    ERROR = "error"
    """A character sqlparse could not lex (e.g. the quote of an unterminated string)."""


@dataclass(frozen=True)
class Tok:
    """One token: its kind, its text exactly as written and its offsets in the cell."""

    kind: TokKind
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper()

    @property
    def significant(self) -> bool:
        return self.kind not in (TokKind.SPACE, TokKind.COMMENT)

    def is_word(self, *words: str) -> bool:
        return self.kind is TokKind.WORD and (not words or self.upper in words)

    def is_punct(self, text: str) -> bool:
        """Punctuation or an operator symbol (``=`` lexes as an operator)."""
        return self.kind in (TokKind.PUNCT, TokKind.OPERATOR) and self.text == text


class Source:
    """The cell text and a line index, to turn offsets into 1-based line/column positions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def position(self, offset: int) -> Position:
        line = bisect.bisect_right(self._line_starts, offset)
        return Position(line, offset - self._line_starts[line - 1] + 1)


def _kind(ttype: object, value: str) -> TokKind:
    if ttype in T.Comment:
        return TokKind.COMMENT
    if ttype in T.Whitespace or ttype in T.Newline:
        return TokKind.SPACE
    if ttype in T.String.Single:
        return TokKind.STRING
    if ttype in T.String.Symbol:
        return TokKind.DQSTRING
    if ttype in T.Number:
        return TokKind.NUMBER
    if ttype in T.Punctuation:
        return TokKind.PUNCT
    if ttype in T.Error:
        return TokKind.ERROR
    if ttype in T.Name and value.startswith("`"):
        return TokKind.QUOTED
    if (ttype in T.Keyword or ttype in T.Name) and (value[0].isalpha() or value[0] == "_"):
        return TokKind.WORD
    return TokKind.OPERATOR


def _split_words(value: str, start: int) -> list[Tok]:
    """``PRIMARY  KEY`` (one sqlparse token) → two WORD tokens at their own offsets."""
    words: list[Tok] = []
    i = 0
    while i < len(value):
        if value[i].isspace():
            i += 1
            continue
        j = i
        while j < len(value) and not value[j].isspace():
            j += 1
        words.append(Tok(TokKind.WORD, value[i:j], start + i, start + j))
        i = j
    return words


def tokenize(text: str) -> list[Tok]:
    """Every token of the cell, whitespace and comments included, with offsets."""
    toks: list[Tok] = []
    offset = 0
    for ttype, value in lexer.tokenize(text):
        kind = _kind(ttype, value)
        if kind is TokKind.WORD and any(ch.isspace() for ch in value):
            toks.extend(_split_words(value, offset))
        else:
            toks.append(Tok(kind, value, offset, offset + len(value)))
        offset += len(value)
    return toks


_QUOTE_NAMES = {"'": "string literal", '"': "double-quoted string", "`": "backtick-quoted identifier"}


_LABEL_WORDS = (
    "CREATE",
    "OR",
    "ALTER",
    "REPLACE",
    "DROP",
    "SHOW",
    "DESCRIBE",
    "DESC",
    "MATERIALIZED",
    "TABLE",
    "TABLES",
)


def statement_label(significant: list[Tok] | tuple[Tok, ...]) -> str:
    """How errors name a statement before it is parsed: "CREATE MATERIALIZED TABLE dws_overall".

    The leading words up to TABLE, then the table name if one follows; "statement 'SELECT'" for a
    statement that does not start like ours.
    """
    if not significant or not significant[0].is_word("CREATE", "ALTER", "DROP", "SHOW", "DESCRIBE", "DESC"):
        return f"statement {significant[0].text!r}" if significant else "statement"
    words: list[str] = []
    i = 0
    while i < len(significant) and significant[i].is_word(*_LABEL_WORDS) and len(words) < 5:
        words.append(significant[i].upper)
        i += 1
    parts: list[str] = []
    while i < len(significant) and significant[i].kind in (TokKind.WORD, TokKind.QUOTED) and words[-1] == "TABLE":
        tok = significant[i]
        if tok.kind is TokKind.WORD and tok.upper in ("AS", "IF", "PARTITIONED", "WITH", "FRESHNESS"):
            break
        parts.append(tok.text[1:-1].replace("``", "`") if tok.kind is TokKind.QUOTED else tok.text)
        if not (i + 1 < len(significant) and significant[i + 1].is_punct(".")):
            break
        i += 2
    return " ".join(words + ([".".join(parts)] if parts else []))


def check_terminated(toks: list[Tok], source: Source) -> None:
    """Reject unterminated strings, quoted identifiers and ``/*`` comments before anything else.

    sqlparse leaves a lone quote character as an error token and an unclosed ``/*`` as ``/`` then ``*``.
    """
    for i, tok in enumerate(toks):
        if tok.kind is TokKind.ERROR and tok.text in _QUOTE_NAMES:
            what = _QUOTE_NAMES[tok.text]
            raise SqlSyntaxError(
                f"unterminated {what}: the {tok.text} here is never closed",
                statement=_label_before(toks, i),
                offending=source.text[tok.start : tok.start + 20].split("\n")[0],
                position=source.position(tok.start),
                fix=f"close it with a matching {tok.text} (write {tok.text * 2} for a literal {tok.text})",
            )
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if (
            tok.kind is TokKind.OPERATOR
            and tok.text.endswith("/")
            and nxt is not None
            and nxt.start == tok.end
            and nxt.text.startswith("*")
        ):
            raise SqlSyntaxError(
                "unterminated comment: this /* is never closed",
                statement=_label_before(toks, i),
                offending="/*",
                position=source.position(tok.end - 1),
                fix="close the comment with */",
            )


def _label_before(toks: list[Tok], index: int) -> str:
    """The label of the statement that token ``index`` belongs to (it starts after the last ``;``)."""
    start = index
    while start > 0 and not toks[start - 1].is_punct(";"):
        start -= 1
    return statement_label([t for t in toks[start:index] if t.significant] or [toks[index]])


@dataclass(frozen=True)
class RawStatement:
    """The tokens of one ``;``-separated statement: all of them, and the significant ones."""

    toks: tuple[Tok, ...]
    significant: tuple[Tok, ...]
    end: int
    """Offset where the statement ends (its ``;`` or the end of the cell), for "missing …" errors."""

    @property
    def start(self) -> int:
        return self.significant[0].start

    @property
    def stop(self) -> int:
        return self.significant[-1].end


def split_statements(toks: list[Tok], source: Source) -> list[RawStatement]:
    """Split on top-level ``;`` tokens; empty statements (``;;``, only comments) are skipped."""
    statements: list[RawStatement] = []
    current: list[Tok] = []
    for tok in [*toks, None]:
        if tok is None or tok.is_punct(";"):
            significant = tuple(t for t in current if t.significant)
            if significant:
                end = tok.start if tok is not None else len(source.text)
                statements.append(RawStatement(tuple(current), significant, end))
            current = []
        else:
            current.append(tok)
    if not statements:
        raise SqlSyntaxError(
            "the cell is empty: it has no statement, only whitespace or comments",
            statement="%%materialized cell",
            fix=f"write a statement, e.g. CREATE MATERIALIZED TABLE t AS SELECT …; {STATEMENTS_HINT}",
        )
    return statements


def check_parentheses(statement: RawStatement, source: Source, label: str) -> None:
    """Every ``(`` closed by a ``)`` within the statement; the error points at the unmatched one."""
    stack: list[Tok] = []
    for tok in statement.significant:
        if tok.is_punct("("):
            stack.append(tok)
        elif tok.is_punct(")"):
            if not stack:
                raise SqlSyntaxError(
                    "unbalanced parentheses: this ')' has no matching '('",
                    statement=label,
                    offending=")",
                    position=source.position(tok.start),
                    fix="remove the extra ')' or add the missing '('",
                )
            stack.pop()
    if stack:
        tok = stack[-1]
        raise SqlSyntaxError(
            "unbalanced parentheses: this '(' is never closed",
            statement=label,
            offending="(",
            position=source.position(tok.start),
            fix="add the missing ')' before the end of the statement",
        )

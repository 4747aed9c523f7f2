"""A cursor over one statement's significant tokens: the primitives our grammar is written in.

Every error raised through the cursor names the statement (its label grows as the parser learns it, e.g.
"CREATE MATERIALIZED TABLE" then "CREATE MATERIALIZED TABLE dws_overall"), the offending token and its
position, so grammar code only says what was wrong and how to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mt_magic.errors import closest_names
from mt_magic.sql.ddl.lexing import RawStatement, Source, Tok, TokKind
from mt_magic.sql.errors import SqlError, SqlSyntaxError, UnsupportedNameError
from mt_magic.sql.names import Position, TableName, name_part_refusal


def describe(tok: Tok | None) -> str:
    """How a token is quoted in messages: its text, or "the end of the statement"."""
    return "the end of the statement" if tok is None else repr(tok.text)


def unquote_identifier(tok: Tok) -> str:
    """A backtick identifier without its backticks (doubled backticks → one); a word as written."""
    if tok.kind is TokKind.QUOTED:
        return tok.text[1:-1].replace("``", "`")
    return tok.text


def unquote_string(tok: Tok) -> str:
    """A single-quoted literal's value: ``''`` and ``\\'`` are quotes, ``\\\\`` is a backslash."""
    body = tok.text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and body[i + 1] in "'\\":
            out.append(body[i + 1])
            i += 2
        elif ch == "'" and i + 1 < len(body) and body[i + 1] == "'":
            out.append("'")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class Cursor:
    """Reads one statement's significant tokens left to right."""

    def __init__(self, statement: RawStatement, source: Source, label: str) -> None:
        self.statement = statement
        self.source = source
        self.toks = statement.significant
        self.i = 0
        self.label = label

    # --- looking -------------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Tok | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def at_word(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.is_word(*words)

    def at_punct(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.is_punct(text)

    def position_of(self, tok: Tok | None) -> Position:
        return self.source.position(self.statement.end if tok is None else tok.start)

    # --- consuming -----------------------------------------------------------------------------------
    def advance(self) -> Tok:
        tok = self.peek()
        if tok is None:
            raise self.error(SqlSyntaxError, "the statement ends too early", None)
        self.i += 1
        return tok

    def accept_word(self, word: str) -> Tok | None:
        if self.at_word(word):
            return self.advance()
        return None

    def accept_punct(self, text: str) -> Tok | None:
        if self.at_punct(text):
            return self.advance()
        return None

    def expect_word(self, word: str, context: str, fix: str | None = None) -> Tok:
        tok = self.peek()
        if tok is not None and tok.is_word(word):
            return self.advance()
        raise self.error(SqlSyntaxError, f"expected {word} {context}, found {describe(tok)}", tok, fix)

    def expect_punct(self, text: str, context: str, fix: str | None = None) -> Tok:
        tok = self.peek()
        if tok is not None and tok.is_punct(text):
            return self.advance()
        raise self.error(SqlSyntaxError, f"expected '{text}' {context}, found {describe(tok)}", tok, fix)

    def expect_string(self, context: str, fix: str) -> tuple[Tok, str]:
        tok = self.peek()
        if tok is None or tok.kind is not TokKind.STRING:
            raise self.error(
                SqlSyntaxError, f"expected a single-quoted string {context}, found {describe(tok)}", tok, fix
            )
        self.advance()
        return tok, unquote_string(tok)

    def expect_identifier(self, context: str, reserved: frozenset[str] = frozenset()) -> tuple[Tok, str]:
        tok = self.peek()
        if tok is None or not (tok.kind is TokKind.QUOTED or (tok.kind is TokKind.WORD and tok.upper not in reserved)):
            raise self.error(
                SqlSyntaxError,
                f"expected {context}, found {describe(tok)}",
                tok,
                f"write {context} here (quote it with backticks if it is a keyword)",
            )
        self.advance()
        return tok, unquote_identifier(tok)

    def expect_end(self, after: str) -> None:
        """Nothing may follow a complete statement but ``;`` or the end of the cell."""
        tok = self.peek()
        if tok is not None:
            raise self.error(
                SqlSyntaxError,
                f"unexpected {describe(tok)} after {after}",
                tok,
                "remove it, or end the statement with ';' before starting another",
            )

    def table_name(self, reserved: frozenset[str]) -> tuple[Tok, TableName]:
        """``[catalog.][namespace.]name``; a reserved word where the name should be means it is missing."""
        tok = self.peek()
        if tok is None or (tok.kind is TokKind.WORD and tok.upper in reserved):
            raise self.error(
                SqlSyntaxError,
                f"missing table name before {describe(tok)}",
                tok,
                f"write the table name after '{self.label}', e.g. {self.label} my_table",
            )
        first, name = self.expect_identifier("a table name", reserved)
        toks, parts = [first], [name]
        while self.accept_punct("."):
            tok, part = self.expect_identifier("a name part after '.'")
            toks.append(tok)
            parts.append(part)
        for tok, part in zip(toks, parts, strict=True):
            refusal = name_part_refusal(part)
            if refusal is not None:
                raise self.error(UnsupportedNameError, refusal[0], tok, refusal[1])
        if len(parts) > 3:
            raise self.error(
                SqlSyntaxError,
                f"table name {'.'.join(parts)!r} has {len(parts)} parts",
                first,
                "use at most catalog.namespace.table",
            )
        return first, TableName.from_parts(parts)

    # --- errors --------------------------------------------------------------------------------------
    def error(
        self,
        cls: type[SqlError],
        problem: str,
        tok: Tok | None,
        fix: str | None = None,
        did_you_mean: Sequence[str] = (),
    ) -> SqlError:
        """An error at ``tok`` (``None``: the end of the statement), naming this statement."""
        return cls(
            problem,
            statement=self.label,
            offending=None if tok is None else tok.text,
            position=self.position_of(tok),
            fix=fix,
            did_you_mean=did_you_mean,
        )

    def unexpected(self, tok: Tok | None, expected: list[str]) -> SqlError:
        """ "Unexpected X: expected A, B or C", with a did-you-mean when X is a near miss."""
        listed = ", ".join(expected[:-1]) + f" or {expected[-1]}" if len(expected) > 1 else expected[0]
        close = closest_names(tok.upper, expected) if tok is not None and tok.kind is TokKind.WORD else []
        problem = f"unexpected {describe(tok)}: expected {listed}"
        if close:
            return self.error(SqlSyntaxError, problem, tok, did_you_mean=close[:1])
        return self.error(SqlSyntaxError, problem, tok, f"write one of {listed}")

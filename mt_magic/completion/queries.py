"""What may come next inside a query (a cell's ``AS SELECT …`` body or a query cell), and in CREATE's column list.

Table names after FROM / JOIN (part by part after ``mt.`` or ``mt.ns.``); elsewhere the columns of every relation the
query reads (:func:`~mt_magic.sql.query.typed_reads.relations`), wherever the cursor is, then how the query names those
relations; after ``s.`` the columns of ``s``'s relation. Pure, like :mod:`~mt_magic.completion.grammar`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mt_magic.completion.names import NameSnapshot, shown_part
from mt_magic.sql.ddl.lexing import Tok, TokKind
from mt_magic.sql.query.typed_reads import Relation, output_columns, relations

READS = frozenset({"FROM", "JOIN"})
NAME_KINDS = (TokKind.WORD, TokKind.QUOTED)


@dataclass(frozen=True)
class Cursor:
    """The cell's text, the word being typed (``text[start:end]``) and the tokens of its statement."""

    text: str
    start: int
    end: int
    statement: list[Tok]

    def query_after(self, tok: Tok | None) -> tuple[str, int, int]:
        """The statement's text after ``tok`` (the query body after AS; all of it without ``tok``), and the
        word being typed as offsets in that text."""
        begin = tok.end if tok is not None else (self.statement[0].start if self.statement else self.start)
        begin = min(begin, self.start)
        finish = max(self.statement[-1].end if self.statement else self.end, self.end)
        return self.text[begin:finish], self.start - begin, self.end - begin


def new_columns(at: Cursor, names: NameSnapshot) -> list[str]:
    """The columns of the table a CREATE makes: its query's result columns (``*``: the columns it reads)."""
    depth, body = 0, None
    for tok in (t for t in at.statement if t.start >= at.end):  # after the cursor, the list may be open or closed
        depth += tok.is_punct("(") - tok.is_punct(")")
        if depth <= 0 and tok.is_word("AS"):
            body = tok
            break
    if body is None:
        return []
    query = at.text[body.end : at.statement[-1].end]
    columns: list[str] = []
    for name in output_columns(query):
        if name == "*":
            read = relations(query)
            columns.extend(c for r in read for c in _columns(r, names))
        else:
            columns.append(name)
    return _unique(columns)


def query_candidates(
    before: Sequence[Tok],
    at: Cursor,
    names: NameSnapshot,
    qualifier: tuple[str, ...] = (),
    after: Tok | None = None,
) -> list[str]:
    """In a query: table names after FROM / JOIN (part by part after ``mt.`` or ``mt.ns.``); elsewhere the
    columns of every relation the query reads, then how the query names those relations (``s.`` → ``s``'s)."""
    if not qualifier and before and before[-1].is_punct("."):
        return []  # after a '.' that follows no name
    if before and before[-1].is_word(*READS):
        if qualifier:
            return next_parts((*names.materialized_paths, *names.plain_paths), qualifier)
        return [*names.materialized, *names.plain]
    read = relations(*at.query_after(after))
    if qualifier:
        return _unique(c for r in read if r.known_as(qualifier) for c in _columns(r, names))
    return _unique([*(c for r in read for c in _columns(r, names)), *(r.reference for r in read)])


def _columns(relation: Relation, names: NameSnapshot) -> tuple[str, ...]:
    if relation.derived is not None:
        return relation.derived
    return names.columns_of(relation.parts)


def qualifier_of(before: list[Tok]) -> tuple[tuple[str, ...], list[Tok]]:
    """The name parts typed before the word at the cursor (``mt.ns`` in ``mt.ns.ta``, ``s`` in ``s.or``) and the
    tokens before them."""
    end = len(before)
    parts: list[str] = []
    while end >= 2 and before[end - 1].is_punct(".") and before[end - 2].kind in NAME_KINDS:
        tok = before[end - 2]
        parts.insert(0, tok.text[1:-1].replace("``", "`") if tok.kind is TokKind.QUOTED else tok.text)
        end -= 2
    return tuple(parts), before[:end]


def next_parts(paths: Sequence[tuple[str, ...]], qualifier: tuple[str, ...]) -> list[str]:
    """The name parts that follow ``qualifier`` in full names (from the catalog: ``mt.`` → namespaces) or in
    names from their namespace (``sales.`` → the tables of namespace ``sales``)."""
    typed = tuple(part.lower() for part in qualifier)
    found = []
    for path in paths:
        for tail in (path, path[1:]):
            if len(tail) > len(typed) and tuple(p.lower() for p in tail[: len(typed)]) == typed:
                found.append(shown_part(tail[len(typed)]))
    return _unique(found)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))

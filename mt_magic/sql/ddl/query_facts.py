"""The query facts of a DDL statement: sqlglot's reading of its ``AS SELECT`` body, errors pointing into the cell."""

from __future__ import annotations

from mt_magic.sql.ddl.statements import AlterQuery, CreateMaterializedTable
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.facts import QueryFacts


def analyze_statement(statement: CreateMaterializedTable | AlterQuery) -> QueryFacts:
    """:func:`analyze_query` on a statement's body, errors pointing into the cell."""
    verb = "ALTER" if isinstance(statement, AlterQuery) else "CREATE OR ALTER" if statement.or_alter else "CREATE"
    return analyze_query(
        statement.query, statement=f"{verb} MATERIALIZED TABLE {statement.name}", origin=statement.query_position
    )

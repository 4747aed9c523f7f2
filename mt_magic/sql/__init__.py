"""The SQL front end: cell text → typed statements, FRESHNESS rules, date formatters, query facts.

Pure Python (sqlparse for our DDL grammar, sqlglot for reading the query body, croniter for checking
schedules); nothing here needs Spark, and nothing imports the rest of mt_magic except ``mt_magic.errors``.
"""

from __future__ import annotations

from mt_magic.sql.ddl.formatter import DateFormatter, PartitionFormatters, partition_formatters
from mt_magic.sql.ddl.freshness import FULL_MODE_DIVISORS, FreshnessRules, RefreshSchedule, resolve_schedule
from mt_magic.sql.ddl.parser import parse_cell
from mt_magic.sql.ddl.statements import (
    AlterFreshness,
    AlterQuery,
    AlterRefresh,
    AlterResume,
    AlterScheduler,
    AlterSuspend,
    AnyStatement,
    ColumnDef,
    CreateMaterializedTable,
    DropMaterializedTable,
    Freshness,
    FreshnessUnit,
    PrimaryKey,
    Statement,
)
from mt_magic.sql.errors import (
    ClauseOrderError,
    ColumnError,
    ConstraintError,
    DuplicateClauseError,
    FormatterError,
    FreshnessError,
    OptionError,
    QueryAnalysisError,
    SqlError,
    SqlSyntaxError,
    UnsupportedClauseError,
    UnsupportedNameError,
    UnsupportedOptionError,
    UnsupportedStatementError,
)
from mt_magic.sql.names import Position, TableName
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.facts import (
    AggregateCall,
    GroupingKind,
    JoinFact,
    JoinKind,
    QueryFacts,
    SetOperation,
    SetOpKind,
    WindowCall,
)
from mt_magic.vocabulary import RefreshMode

__all__ = [
    "FULL_MODE_DIVISORS",
    "AggregateCall",
    "AlterFreshness",
    "AlterQuery",
    "AlterRefresh",
    "AlterResume",
    "AlterScheduler",
    "AlterSuspend",
    "AnyStatement",
    "ClauseOrderError",
    "ColumnDef",
    "ColumnError",
    "ConstraintError",
    "CreateMaterializedTable",
    "DateFormatter",
    "DropMaterializedTable",
    "DuplicateClauseError",
    "FormatterError",
    "Freshness",
    "FreshnessError",
    "FreshnessRules",
    "FreshnessUnit",
    "GroupingKind",
    "JoinFact",
    "JoinKind",
    "OptionError",
    "PartitionFormatters",
    "Position",
    "PrimaryKey",
    "QueryAnalysisError",
    "QueryFacts",
    "RefreshMode",
    "RefreshSchedule",
    "SetOpKind",
    "SetOperation",
    "SqlError",
    "SqlSyntaxError",
    "Statement",
    "TableName",
    "UnsupportedClauseError",
    "UnsupportedOptionError",
    "UnsupportedNameError",
    "UnsupportedStatementError",
    "WindowCall",
    "analyze_query",
    "parse_cell",
    "partition_formatters",
    "resolve_schedule",
]

"""Which queries DuckDB answers exactly as Spark: every expression typed as Spark types it, every operator allowed
only for the operand types of the table below — each row shown equal in both engines by the differential fuzzer
(``tests/incremental/fuzz``), on both PySpark lines, ANSI on and off, in several session time zones.

=====================================  ==============================================================================
operator                               operand types (Spark's)
=====================================  ==============================================================================
column read (``SELECT *`` included)    INT, BIGINT, DECIMAL, STRING, BOOLEAN, DATE, TIMESTAMP, TIMESTAMP_NTZ
literal                                integer (fits BIGINT), decimal ``1.50`` (no exponent: ``1E3`` is a DOUBLE),
                                       string, TRUE/FALSE, NULL (not as an output column)
= <> < <= > >= <=> IN BETWEEN          one family, no cast but an exact widening: integers and decimals whose
                                       Spark wider type fits 38 digits (past it Spark rounds or gives NULL, DuckDB
                                       goes to DOUBLE); STRING, BOOLEAN, DATE, each TIMESTAMP with itself; NULL
IS [NOT] NULL                          any readable type
IS [NOT] TRUE / FALSE                  BOOLEAN only (Spark reads ``i IS TRUE`` on an INT as ``i <=> true``)
AND OR NOT, WHERE                      BOOLEAN
date_trunc(unit, x)                    TIMESTAMP → TIMESTAMP, in a session whose time zone is UTC (no offset or
                                       daylight saving to apply: both truncate the same instant the same way);
                                       unit YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE or SECOND
count(*), count(x)                     any readable type → BIGINT (not DISTINCT)
sum(x)                                 INT, BIGINT → BIGINT; DECIMAL(p, s) → DECIMAL(min(38, p + 10), s)
min(x), max(x)                         any readable type
SELECT [DISTINCT] … GROUP BY keys      keys: columns or ``date_trunc`` of one; no HAVING, ORDER, LIMIT, window or
                                       subquery
FROM t [INNER | LEFT] JOIN u ON c      one table, or two different tables joined once; ``c`` typed as a WHERE
                                       condition; names in both tables qualified (no USING, NATURAL, ``t.*``)
=====================================  ==============================================================================

No cast, arithmetic, floating point, time literal or function but ``date_trunc`` in a UTC session runs in process,
so the session's time zone, the time-parser policy and decimal precision loss cannot change an accepted query's
answer; ANSI mode changes only
overflow, which the data guards (:mod:`.guards`) send to Spark; the result must have the table's own types, so
the store-assignment policy never applies; names resolve as ``spark.sql.caseSensitive`` says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp

MAX_DIGITS = 38
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SparkType:
    """A Spark type, named as Iceberg names it (``long`` is BIGINT, ``timestamptz`` is TIMESTAMP, ``timestamp``
    TIMESTAMP_NTZ); ``null`` is the type of the NULL literal; any other name is a type not run in process."""

    kind: str
    precision: int = 0
    scale: int = 0

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})" if self.kind == "decimal" else self.kind


INT, LONG, STRING, BOOLEAN, NULL = (SparkType(k) for k in ("int", "long", "string", "boolean", "null"))
READABLE = frozenset({"int", "long", "decimal", "string", "boolean", "date", "timestamptz", "timestamp"})
INTEGRAL = frozenset({"int", "long"})
NUMERIC = INTEGRAL | {"decimal"}
_AS_DECIMAL = {"int": (10, 0), "long": (20, 0)}  # Spark's DecimalType.forType


def iceberg_type(text: str) -> SparkType:
    """The type of an Iceberg column as ``TableInfo.columns`` names it, e.g. ``decimal(38, 10)``."""
    found = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", text.strip())
    return SparkType("decimal", int(found[1]), int(found[2])) if found else SparkType(text.strip())


SPARK_SQL_TYPES = {
    "tinyint": "int", "smallint": "int", "int": "int", "integer": "int", "bigint": "long", "string": "string",
    "boolean": "boolean", "date": "date", "timestamp": "timestamptz", "timestamp_ltz": "timestamptz",
    "timestamp_ntz": "timestamp",
}  # fmt: skip
"""Spark SQL type names (a CREATE's column list) as Iceberg stores them; others (CHAR pads, VARCHAR checks) are
not run in process."""


def spark_sql_type(text: str) -> SparkType:
    """The type a declared column (``BIGINT``, ``DECIMAL(38,10)``) has in the Iceberg table."""
    normal = text.strip().lower()
    found = re.fullmatch(r"(?:decimal|dec|numeric)\s*\((\d+)\s*,\s*(\d+)\)", normal)
    if found:
        return SparkType("decimal", int(found[1]), int(found[2]))
    if normal in ("decimal", "dec", "numeric"):
        return SparkType("decimal", 10, 0)
    return SparkType(SPARK_SQL_TYPES.get(normal, normal))


class Refused(Exception):
    """The query holds something not shown equal in both engines; the message says what."""


def literal_type(node: exp.Literal) -> SparkType:
    """Spark's type of a literal: ``7`` INT, ``3000000000`` BIGINT, ``1.50`` DECIMAL(3, 2), ``'x'`` STRING."""
    if node.is_string:
        return STRING
    text = node.this
    if not re.fullmatch(r"\d+|\d+\.\d*|\.\d+", text):
        raise Refused(f"the literal {text} (a DOUBLE in Spark)")
    if "." not in text:
        value = int(text)
        if value > LONG_MAX:
            raise Refused(f"the literal {text} (a DECIMAL beyond BIGINT)")
        return INT if value <= 2**31 - 1 else LONG
    try:
        parts = Decimal(text).as_tuple()
    except InvalidOperation as exc:  # pragma: no cover - the pattern admits only decimals
        raise Refused(f"the literal {text}") from exc
    assert isinstance(parts.exponent, int)
    scale = max(0, -parts.exponent)
    precision = max(len(parts.digits), scale)  # java.math.BigDecimal's precision, as Spark's Literal takes it
    if precision > MAX_DIGITS:
        raise Refused(f"the literal {text} (more than 38 digits)")
    return SparkType("decimal", precision, scale)


def comparable(types: Sequence[SparkType], what: str) -> None:
    """Operands compared together (``=``, IN, BETWEEN) in one family, needing no cast but an exact widening."""
    known = [t for t in types if t.kind != "null"]
    kinds = {t.kind for t in known}
    if not kinds:
        return
    if not kinds <= NUMERIC:
        if len(kinds) > 1:
            raise Refused(f"{what} across types ({', '.join(sorted(str(t) for t in known))})")
        return
    if "decimal" not in kinds:
        return  # integers widen exactly in both engines
    ranges, scales = [], []
    for t in known:
        precision, scale = _AS_DECIMAL.get(t.kind, (t.precision, t.scale))
        ranges.append(precision - scale)
        scales.append(scale)
    if max(ranges) + max(scales) > MAX_DIGITS:
        listed = ", ".join(str(t) for t in known)
        raise Refused(f"{what} of {listed}: Spark's implicit decimal widening passes 38 digits")


@dataclass(frozen=True)
class Columns:
    """The columns a query's expressions may name: each source's (by alias), resolved as
    ``spark.sql.caseSensitive`` says; a name in more than one source must be qualified (Spark refuses it too)."""

    tables: Mapping[str, Mapping[str, SparkType]]
    """Alias (or table name) → the source's columns, both folded unless case-sensitive, in the source's order."""
    case_sensitive: bool = False
    utc: bool = False
    """The table's session time zone is UTC, so truncating a TIMESTAMP needs no zone rules."""

    def _fold(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def star(self) -> list[tuple[str, SparkType]]:
        """``SELECT *``: every source's columns, in FROM order (Spark's and DuckDB's)."""
        return [(name, self.type_of(name, alias)) for alias, types in self.tables.items() for name in types]

    def type_of(self, name: str, table: str = "") -> SparkType:
        if table:
            source = self.tables.get(self._fold(table))
            if source is None:
                raise Refused(f"{table}.{name} names no source of the query")
            found = source.get(self._fold(name))
        else:
            held = [types[self._fold(name)] for types in self.tables.values() if self._fold(name) in types]
            if len(held) > 1:
                raise Refused(f"column {name} is in more than one source (unqualified)")
            found = held[0] if held else None
        if found is None:
            raise Refused(f"column {name} is not a source column")
        if found.kind not in READABLE:
            raise Refused(f"column {name} is {found}, a type not run in process")
        return found


def _source_types(columns: Sequence[tuple[str, str]], case_sensitive: bool) -> dict[str, SparkType]:
    names = [name if case_sensitive else name.lower() for name, _ in columns]
    if len({n.lower() for n in names}) != len(names):
        raise Refused("source columns whose names differ only in case (DuckDB resolves names ignoring case)")
    return {n: iceberg_type(t) for n, (_, t) in zip(names, columns, strict=True)}


def expression_type(node: exp.Expr, columns: Columns) -> SparkType:
    """Spark's type of ``node``; raises :class:`Refused` for anything outside the module's table."""
    from sqlglot import exp

    if isinstance(node, exp.Paren):
        return expression_type(node.this, columns)
    if isinstance(node, exp.Column):
        return columns.type_of(node.name, node.table)
    if isinstance(node, exp.Literal):
        return literal_type(node)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return literal_type(node.this)
    if isinstance(node, exp.Null):
        return NULL
    if isinstance(node, exp.Boolean):
        return BOOLEAN
    if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)):
        operands = [node.this, node.expression]
        comparable([expression_type(o, columns) for o in operands], "a comparison")
        return BOOLEAN
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise Refused("IN over a subquery")
        if not node.expressions:
            raise Refused("an empty IN list")
        comparable([expression_type(o, columns) for o in [node.this, *node.expressions]], "IN")
        return BOOLEAN
    if isinstance(node, exp.Between):
        operands = [node.this, node.args["low"], node.args["high"]]
        comparable([expression_type(o, columns) for o in operands], "BETWEEN")
        return BOOLEAN
    if isinstance(node, exp.Is):
        operand = expression_type(node.this, columns)
        if isinstance(node.expression, exp.Boolean) and operand.kind not in ("boolean", "null"):
            raise Refused(f"IS TRUE/FALSE on {operand} (Spark compares with <=>, DuckDB casts to BOOLEAN)")
        if not isinstance(node.expression, (exp.Boolean, exp.Null)):
            raise Refused("IS with an operand other than NULL, TRUE or FALSE")
        return BOOLEAN
    if isinstance(node, (exp.And, exp.Or, exp.Not)):
        for part in node.iter_expressions():
            boolean(part, columns, f"an operand of {type(node).__name__.upper()}")
        return BOOLEAN
    if isinstance(node, (exp.Count, exp.Sum, exp.Min, exp.Max)):
        return _aggregate_type(node, columns)
    if isinstance(node, exp.TimestampTrunc):
        return _truncated(node, columns)
    raise Refused(f"{type(node).__name__} is not run in process")


TRUNCATED_UNITS = frozenset({"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"})
UTC_ZONES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "+00:00"})
"""Session time zones (upper case) that are UTC: no offset, no daylight saving."""


def _truncated(node: exp.TimestampTrunc, columns: Columns) -> SparkType:
    """``date_trunc(unit, x)``: a TIMESTAMP truncated in a UTC session (see the module's table)."""
    from sqlglot import exp

    unit = node.args.get("unit")
    name = unit.name.upper() if isinstance(unit, (exp.Var, exp.Literal)) else ""
    if name not in TRUNCATED_UNITS:
        raise Refused(
            f"date_trunc to {unit.sql() if unit is not None else 'no unit'} (only {', '.join(sorted(TRUNCATED_UNITS))})"
        )
    operand = expression_type(node.this, columns)
    if operand.kind != "timestamptz":
        shown = "TIMESTAMP_NTZ" if operand.kind == "timestamp" else str(operand)
        raise Refused(f"date_trunc of {shown} (only TIMESTAMP)")
    if not columns.utc:
        raise Refused("date_trunc in a session time zone other than UTC (the zone's rules apply)")
    return operand


def boolean(node: exp.Expr, columns: Columns, what: str) -> None:
    found = expression_type(node, columns)
    if found.kind not in ("boolean", "null"):
        raise Refused(f"{what} of type {found}")


def _aggregate_type(node: exp.Count | exp.Sum | exp.Min | exp.Max, columns: Columns) -> SparkType:
    from sqlglot import exp

    operand = node.this
    if isinstance(operand, exp.Distinct):
        raise Refused("an aggregate of DISTINCT values, e.g. COUNT(DISTINCT …)")
    if isinstance(node, exp.Count):
        if not isinstance(operand, exp.Star):
            expression_type(operand, columns)
        return LONG
    if not isinstance(operand, exp.Column):
        raise Refused("an aggregate over an expression")
    found = columns.type_of(operand.name, operand.table)
    if isinstance(node, exp.Sum):
        if found.kind in INTEGRAL:
            return LONG
        if found.kind != "decimal":
            raise Refused(f"a sum of {found} (only integers and decimals)")
        return SparkType("decimal", min(MAX_DIGITS, found.precision + 10), found.scale)
    return found


_SELECT_PARTS = frozenset({"expressions", "from", "from_", "where", "group", "distinct", "joins"})
JOIN_KINDS = {("", ""): "JOIN", ("", "INNER"): "JOIN", ("LEFT", ""): "LEFT JOIN", ("LEFT", "OUTER"): "LEFT JOIN"}
"""(side, kind) of the joins run in process: inner and left outer, each with an ON condition."""

SourceColumns = Sequence[tuple[str, str]] | Mapping[str, Sequence[tuple[str, str]]]
"""One source's columns (name, Iceberg type), or each source's by its qualified name as the query names it."""


def _sources(tree: exp.Select, sources: SourceColumns, case_sensitive: bool, utc: bool) -> Columns:
    """The columns of the FROM table and the joined one, by alias; checks the joins' kinds."""
    from sqlglot import exp

    from mt_magic.sql.query.rewrite import table_name_parts

    source = tree.args.get("from_") or tree.args.get("from")
    joins = tree.args.get("joins") or []
    if not isinstance(source, exp.From) or not isinstance(source.this, exp.Table) or len(joins) > 1:
        raise Refused("not a SELECT of one table or of one join of two tables")
    tables = [source.this]
    for join in joins:
        side, kind = (str(join.args.get(k) or "").upper() for k in ("side", "kind"))
        if (side, kind) not in JOIN_KINDS or join.args.get("method") or join.args.get("using"):
            raise Refused(f"a {' '.join(p for p in (join.args.get('method'), side, kind) if p) or 'USING'} join")
        if join.args.get("on") is None or not isinstance(join.this, exp.Table):
            raise Refused("a join without an ON condition, or of a subquery")
        tables.append(join.this)
    names = [".".join(table_name_parts(t)).lower() for t in tables]
    if len(set(names)) != len(names):
        raise Refused("a self-join (one source read twice)")
    if isinstance(sources, Mapping):
        by_name = {name.lower(): columns for name, columns in sources.items()}
        if any(name not in by_name for name in names):
            raise Refused(f"a source whose columns are not known ({', '.join(n for n in names if n not in by_name)})")
        listed = [by_name[name] for name in names]
    elif len(tables) == 1:
        listed = [sources]
    else:
        raise Refused("a join, given one source's columns")
    fold = (lambda text: text) if case_sensitive else str.lower
    aliases = [fold(t.alias_or_name) for t in tables]
    if len(set(aliases)) != len(aliases):
        raise Refused("two sources under one name")
    return Columns(
        {alias: _source_types(columns, case_sensitive) for alias, columns in zip(aliases, listed, strict=True)},
        case_sensitive,
        utc,
    )


def output_types(
    query: str, sources: SourceColumns, case_sensitive: bool = False, time_zone: str | None = None
) -> list[tuple[str, SparkType]]:
    """The query's output columns and their Spark types, every expression checked against the module's table
    (``time_zone``: the table's session time zone, ``None`` when not recorded).

    Raises:
        Refused: the query holds an operator, operand type or clause not shown equal in both engines.
    """
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="spark")
    if not isinstance(tree, exp.Select):
        raise Refused("not a single SELECT")
    extra = sorted(key for key, value in tree.args.items() if value and key not in _SELECT_PARTS)
    if extra:
        raise Refused(f"a {extra[0].upper()} clause")
    distinct = tree.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise Refused("DISTINCT ON")
    utc = time_zone is not None and time_zone.strip().upper() in UTC_ZONES
    columns = _sources(tree, sources, case_sensitive, utc)
    for join in tree.args.get("joins") or []:
        boolean(join.args["on"], columns, "a join condition")
    where = tree.args.get("where")
    if where is not None:
        boolean(where.this, columns, "a WHERE condition")
    group = tree.args.get("group")
    for key in group.expressions if group is not None else ():
        if not isinstance(key, (exp.Column, exp.TimestampTrunc)):  # what the fuzzer draws as keys
            raise Refused("a GROUP BY key other than a column or date_trunc")
        expression_type(key, columns)
    if group is not None and any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        raise Refused("grouping sets")
    out: list[tuple[str, SparkType]] = []
    for item in tree.expressions:
        if isinstance(item, exp.Star):
            out.extend(columns.star())
        elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            raise Refused(f"{item.table}.* (a qualified star)")
        elif isinstance(item, exp.Column):
            out.append((item.name, expression_type(item, columns)))
        elif isinstance(item, exp.Alias):
            found = expression_type(item.this, columns)
            if found.kind == "null":
                raise Refused(f"the output column {item.alias} is an untyped NULL")
            out.append((item.alias, found))
        else:
            raise Refused("an output column without a name")  # each engine names it its own way
    names = [name if case_sensitive else name.lower() for name, _ in out]
    if len({n.lower() for n in names}) != len(names):
        raise Refused("output columns whose names differ only in case, or a name two sources give")
    return out


def unsupported(
    query: str,
    source: SourceColumns,
    table: Sequence[tuple[str, SparkType]] | None = None,
    case_sensitive: bool = False,
    time_zone: str | None = None,
) -> str | None:
    """Why Spark and DuckDB could give different rows for ``query`` (``None``: they cannot).

    Args:
        source: the source's columns, (name, Iceberg type); for a join, each source's by its qualified name.
        table: the table's columns, (name, type) — the result must have exactly these types, so no store
            assignment applies; ``None`` when the table is made from the query (a CREATE without a column list).
        case_sensitive: ``spark.sql.caseSensitive`` of the table's settings.
        time_zone: ``spark.sql.session.timeZone`` of the table's settings (``None``: not recorded).
    """
    try:
        out = output_types(query, source, case_sensitive, time_zone)
    except Refused as exc:
        return str(exc)
    if table is None:
        return None
    produced = {name.lower(): found for name, found in out}
    for name, declared in table:
        found = produced.pop(name.lower(), None)
        if found is None:
            return f"the table's column {name} is not an output of the query"
        if found != declared:
            return f"the table's column {name} is {declared}, the query gives {found} (Spark converts it)"
    if produced:
        return f"the output column {next(iter(produced))} is not a column of the table"
    return None


def duckdb_sql(spark_sql: str) -> str:
    """A query the gate accepted, written in DuckDB's dialect (what runs in process)."""
    import sqlglot

    return sqlglot.transpile(spark_sql, read="spark", write="duckdb")[0]


def column_names(query: str) -> set[str] | None:
    """The column names ``query`` reads, lower case (``None``: every column, for a ``*`` other than ``count(*)``)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="spark")
    if any(not isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star)):
        return None
    return {c.name.lower() for c in tree.find_all(exp.Column)}

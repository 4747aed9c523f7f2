"""Which ``WITH (…)`` options mean something on Spark and Iceberg, and what to write instead of those that don't.

Statements pasted from Flink's documentation and from Paimon/Kafka articles carry connector options. On
Paimon ``'merge-engine' = 'aggregation'`` changes what the table holds (rows are summed per primary key as they
are written); stored as an Iceberg table property it would change nothing, and the table would silently hold
something else than the user expects. So every option is sorted here:

* Iceberg table properties (``write.*``, ``format-version``, ``history.expire.*``, …) and mt_magic's own
  (``partition.fields.<col>.date-formatter``, ``incremental``) are accepted;
* options of Paimon, Kafka and other Flink connectors are refused, all of them in one error that says what
  each means there and what does the same here (for an aggregation merge engine: the rewritten query);
* the value of every option mt_magic declares (:mod:`mt_magic.options`: ``'incremental'``, ``'scheduler'``,
  ``'convert-existing-table'`` — a one-time instruction, never stored —, Iceberg's ``history.expire.*``, …) is
  checked here, at its key, with the registry's Fix;
* anything else is kept as written (a table property of the user's own).

``ALTER … RESUME WITH (…)`` options are Spark settings of that resumption's refreshes, so only ``spark.*``
keys are accepted there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from mt_magic.errors import closest_names
from mt_magic.options import CONVERT, DATE_FORMATTER, problems
from mt_magic.sql.ddl.clauses import KeyValues
from mt_magic.sql.ddl.cursor import Cursor
from mt_magic.sql.ddl.statements import PrimaryKey
from mt_magic.sql.errors import UnsupportedOptionError

REMOVE = "remove it"
FILE_FORMAT = "remove it; Iceberg writes Parquet data files ('write.format.default' = 'orc' or 'avro' to change that)"
RETENTION = "use 'history.expire.max-snapshot-age-ms' / 'history.expire.min-snapshots-to-keep'"
CONVERT_OPTION = CONVERT.key
"""Kept for :mod:`mt_magic.runtime.refresh.incremental.explain` (another owner's module); use ``CONVERT.key``."""
ROWS_PER_KEY = "make the query return one row per key (GROUP BY the key, e.g. max_by(col, ts) per column)"


@dataclass(frozen=True)
class ForeignOption:
    """An option pattern (``fnmatch`` syntax, lower case) from another system, what it does there, what to do here."""

    pattern: str
    system: str
    meaning: str
    instead: str


FOREIGN_OPTIONS = (
    ForeignOption("merge-engine", "Paimon", "combines rows with the same primary key as they are written", REMOVE),
    ForeignOption("fields.*.aggregate-function", "Paimon", "aggregates a column per primary key on write", REMOVE),
    ForeignOption("fields.default-aggregate-function", "Paimon", "aggregates columns per key on write", REMOVE),
    ForeignOption("fields.*.ignore-retract", "Paimon", "tunes the aggregation merge engine", REMOVE),
    ForeignOption("fields.*.sequence-group", "Paimon", "orders partial updates", ROWS_PER_KEY),
    ForeignOption("sequence.field", "Paimon", "orders updates of a key", ROWS_PER_KEY),
    ForeignOption(
        "changelog-producer",
        "Paimon",
        "writes a changelog for streaming readers",
        "remove it; CONTINUOUS refreshes read the changes between Iceberg snapshots themselves",
    ),
    ForeignOption(
        "scan.*",
        "Flink source",
        "tunes how a streaming job reads its source",
        "remove it; each refresh reads from the snapshots the previous one consumed",
    ),
    ForeignOption("format", "Flink connector", "is the (de)serialization format of a connector", FILE_FORMAT),
    ForeignOption("file.format", "Paimon", "is Paimon's data file format", "use 'write.format.default'"),
    ForeignOption("debezium-json.*", "Flink format", "configures the debezium-json format", REMOVE),
    ForeignOption("json.*", "Flink format", "configures the json format", REMOVE),
    ForeignOption("csv.*", "Flink format", "configures the csv format", REMOVE),
    ForeignOption("key.format", "Kafka", "is the record key's format", REMOVE),
    ForeignOption("value.format", "Kafka", "is the record value's format", REMOVE),
    ForeignOption("key.fields", "Kafka", "names the record key's columns", "use PRIMARY KEY (…) NOT ENFORCED"),
    ForeignOption("value.fields-include", "Kafka", "selects the record value's columns", REMOVE),
    ForeignOption("topic", "Kafka", "names the topic to read or write", "write the data into an Iceberg table"),
    ForeignOption("topic-pattern", "Kafka", "names the topics to read", "write the data into an Iceberg table"),
    ForeignOption("properties.*", "Kafka", "configures the Kafka client", "write the data into an Iceberg table"),
    ForeignOption(
        "connector",
        "Flink",
        "selects a Flink connector",
        "remove it; a materialized table is an Iceberg table in the catalog, and sources are catalog tables",
    ),
    ForeignOption("path", "Flink connector", "is a table's storage path", "remove it; the catalog places tables"),
    ForeignOption("bucket", "Paimon", "sets the number of buckets", "write DISTRIBUTED BY HASH(col) INTO n BUCKETS"),
    ForeignOption("bucket-key", "Paimon", "sets the bucket key", "write DISTRIBUTED BY HASH(col) INTO n BUCKETS"),
    ForeignOption("dynamic-bucket.*", "Paimon", "tunes dynamic buckets", REMOVE),
    ForeignOption("snapshot.*", "Paimon", "sets snapshot retention", RETENTION),
    ForeignOption("partition.expiration-*", "Paimon", "expires old partitions", "delete old partitions with Spark"),
    ForeignOption("partition.timestamp-*", "Paimon", "reads partition values as time", REMOVE),
    ForeignOption("lookup.*", "Paimon", "tunes lookup joins and the lookup changelog", REMOVE),
    ForeignOption("compaction.*", "Paimon", "tunes compaction", REMOVE),
    ForeignOption("full-compaction.*", "Paimon", "tunes compaction", REMOVE),
    ForeignOption("num-sorted-run.*", "Paimon", "tunes compaction", REMOVE),
    ForeignOption("deletion-vectors.*", "Paimon", "enables deletion vectors", REMOVE),
    ForeignOption("write-only", "Paimon", "skips compaction", REMOVE),
    ForeignOption("consumer-id", "Paimon", "names a streaming consumer", REMOVE),
    ForeignOption("continuous.*", "Paimon", "tunes streaming reads", REMOVE),
    ForeignOption("streaming-read-*", "Paimon", "tunes streaming reads", REMOVE),
    ForeignOption(
        "sink.parallelism",
        "Flink",
        "sets the sink operator's parallelism",
        "set Spark's instead: ALTER MATERIALIZED TABLE … RESUME WITH ('spark.sql.shuffle.partitions' = 'N')",
    ),
    ForeignOption("sink.*", "Flink connector", "tunes a Flink sink", REMOVE),
    ForeignOption("fields.*.expression", "Flink faker", "generates a column", "use mt_magic.datagen"),
    ForeignOption("fields.*.kind", "Flink datagen", "generates a column", "use mt_magic.datagen"),
    ForeignOption("rows-per-second", "Flink faker", "sets the generated rows' rate", "use mt_magic.datagen"),
)

PAIMON_AGGREGATES = {
    "sum": "sum({c})",
    "max": "max({c})",
    "min": "min({c})",
    "count": "count({c})",
    "product": "product({c})",
    "bool_and": "bool_and({c})",
    "bool_or": "bool_or({c})",
    "listagg": "concat_ws(',', collect_list({c}))",
    "collect": "collect_list({c})",
}
"""Paimon's aggregate functions that have an order-free Spark SQL equivalent."""


def foreign_option(key: str) -> ForeignOption | None:
    """The rule for ``key`` when it belongs to Paimon, Kafka or another Flink connector; ``None`` otherwise."""
    lowered = key.lower()
    if DATE_FORMATTER.column(lowered) is not None:
        return None
    return next((rule for rule in FOREIGN_OPTIONS if fnmatchcase(lowered, rule.pattern)), None)


def check_create_options(
    cur: Cursor, options: KeyValues, primary_key: PrimaryKey | None, query: str, clause: str = "WITH"
) -> None:
    """Refuse a bad value of a declared option (at its key), then the foreign options of a CREATE's ``WITH``, all
    of those in one error positioned at the first of them.

    Raises:
        UnsupportedOptionError: a declared option's value is not one it takes (the registry's Fix), or at least
            one option is Paimon's, Kafka's or another Flink connector's.
    """
    refused = problems(options.pairs)
    if refused:
        index, problem = refused[0]
        raise cur.error(
            UnsupportedOptionError, problem.describe(clause), options.key_toks[index], problem.fix, problem.did_you_mean
        )
    found = [
        (key, value, tok)
        for (key, value), tok in zip(options.pairs, options.key_toks, strict=True)
        if foreign_option(key) is not None
    ]
    if not found:
        return
    explained = "; ".join(_explain(key, value) for key, value, _ in found)
    fixes = [_aggregation_fix(options.pairs, primary_key, query)] if _merge_engine(options.pairs) else []
    fixes.append("remove " + ", ".join(repr(key) for key, _, _ in found) + " from WITH")
    raise cur.error(
        UnsupportedOptionError,
        f"WITH has {_count(found)} that Spark and Iceberg cannot honour: {explained}",
        found[0][2],
        "; ".join(fixes),
    )


def check_resume_options(cur: Cursor, options: KeyValues) -> None:
    """``RESUME WITH`` options become Spark settings of the resumed refreshes: only ``spark.*`` keys.

    Raises:
        UnsupportedOptionError: a key that is not a Spark setting (Flink's ``sink.parallelism`` among them).
    """
    for (key, value), tok in zip(options.pairs, options.key_toks, strict=True):
        if key.lower().startswith("spark."):
            continue
        rule = foreign_option(key)
        problem = f"RESUME WITH options are Spark settings of the resumed refreshes; '{key}' is not one"
        if rule is not None:
            problem += f" ({_explain(key, value, instead=False)})"
        fix = (
            rule.instead
            if rule is not None and rule.instead != REMOVE
            else ("use Spark settings, e.g. RESUME WITH ('spark.sql.shuffle.partitions' = '8'), or remove it")
        )
        head, dot, rest = key.partition(".")
        near = () if rule is not None or not dot or not closest_names(head, ["spark"]) else (f"'spark.{rest}'",)
        raise cur.error(UnsupportedOptionError, problem, tok, fix, near)


def _explain(key: str, value: str, instead: bool = True) -> str:
    rule = foreign_option(key)
    assert rule is not None
    text = f"'{key}' = '{value}' is a {rule.system} option that {rule.meaning}"
    return text if rule.instead == REMOVE or not instead else f"{text} ({rule.instead})"


def _count(found: Sequence[object]) -> str:
    return "an option" if len(found) == 1 else f"{len(found)} options"


def _merge_engine(pairs: tuple[tuple[str, str], ...]) -> str | None:
    return next((value.lower() for key, value in pairs if key.lower() == "merge-engine"), None)


def _aggregation_fix(pairs: tuple[tuple[str, str], ...], primary_key: PrimaryKey | None, query: str) -> str:
    """The query that computes on read what Paimon's merge engine computed on write."""
    engine = _merge_engine(pairs)
    if primary_key is None:
        return f"Paimon's '{engine}' merge engine works per primary key; " + ROWS_PER_KEY
    keys = ", ".join(primary_key.columns)
    if engine != "aggregation":
        return f"Paimon's '{engine}' merge engine keeps one row per key ({keys}); " + ROWS_PER_KEY
    aggregates, unknown = [], []
    for key, value in pairs:
        lowered = key.lower()
        if fnmatchcase(lowered, "fields.*.aggregate-function"):
            column = key[len("fields.") : -len(".aggregate-function")]
            template = PAIMON_AGGREGATES.get(value.lower())
            if template is None:
                unknown.append(f"'{value}' on {column}")
            else:
                aggregates.append(f"{template.format(c=column)} AS {column}")
    if unknown or not aggregates:
        detail = ", ".join(unknown) or "no fields.<col>.aggregate-function"
        return f"aggregate in the query instead ({detail} has no order-free equivalent): GROUP BY {keys}"
    body = query.strip() if "--" in query else " ".join(query.split())
    return (
        f"write the aggregation in the query, e.g. AS SELECT {keys}, {', '.join(aggregates)} "
        f"FROM ({body}) t GROUP BY {keys} (other columns: aggregate them or add them to the key)"
    )

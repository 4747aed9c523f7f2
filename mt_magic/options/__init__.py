"""Every ``WITH (…)`` option mt_magic gives a meaning to, declared once (Spark's ``SQLConf`` habit).

registry.py   :class:`Option` (key, allowed values or parser, default, one-line help, its check and Fix)
declared.py   mt_magic's own options: incremental, incremental.engine, incremental.max-change-fraction,
              scheduler, convert-existing-table, sql-settings.baseline, Iceberg's history.expire.* retention,
              partition.fields.<col>.date-formatter (a :class:`ColumnOption`)
lookup.py     the lookups every reader, checker and completer asks (:func:`option`, :func:`registered`,
              :func:`problems`)
settings.py   the Spark SQL settings a definition may pin in WITH (``ANSWER_SETTINGS``) and what each changes,
              and the run settings RESUME WITH offers (``RUN_SETTINGS``)

It sits just above :mod:`mt_magic.vocabulary`, so the grammar, the scheduling seam, the runtime and completion
all import it.
"""

from __future__ import annotations

from mt_magic.options.declared import (
    BASELINE,
    CONVERT,
    DATE_FORMATTER,
    DEFAULT_MAX_CHANGE,
    ENGINE,
    INCREMENTAL,
    MAX_AGE_MS,
    MAX_CHANGE,
    MIN_TO_KEEP,
    OPTIONS,
    SCHEDULER,
    IncrementalPolicy,
)
from mt_magic.options.lookup import option, problems, registered
from mt_magic.options.registry import Choice, ColumnOption, Option, OptionProblem

__all__ = [
    "BASELINE",
    "CONVERT",
    "DATE_FORMATTER",
    "DEFAULT_MAX_CHANGE",
    "ENGINE",
    "INCREMENTAL",
    "MAX_AGE_MS",
    "MAX_CHANGE",
    "MIN_TO_KEEP",
    "OPTIONS",
    "SCHEDULER",
    "Choice",
    "ColumnOption",
    "IncrementalPolicy",
    "Option",
    "OptionProblem",
    "option",
    "problems",
    "registered",
]

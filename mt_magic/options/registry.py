"""One declared ``WITH`` option: its key, the values it takes, its default, its help and its check.

Every place that reads, checks, completes or prints an option asks its :class:`Option` (found through
:mod:`~mt_magic.options.lookup`): the grammar refuses a bad value where it is written, the definition checks it
again for statements not built by the grammar, the runtime reads it with :meth:`Option.read`, completion offers
the registered keys and each option's :attr:`Option.values`. A bad value's message has one shape everywhere::

    WITH ('incremental' = 'sometimes') is not a known value. Fix: use 'auto' (the default: …), 'always' (…), …

(the one shape of :class:`~mt_magic.errors.MtMagicError`), with a "did you mean" for a near miss of a value or of a
declared key (``WITH ('incremental.engin' = 'spark')``: :func:`~mt_magic.options.lookup.misspelt`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mt_magic.errors import MtMagicError, closest_names

T = TypeVar("T")


@dataclass(frozen=True)
class Choice:
    """One allowed value of an option and what it means (completion shows it, a Fix quotes it)."""

    value: str
    help: str


@dataclass(frozen=True)
class OptionProblem:
    """Why a value is refused and what to write instead (the caller adds where: a position or a statement)."""

    key: str
    value: str
    problem: str
    fix: str
    did_you_mean: tuple[str, ...] = ()
    """The declared keys or values (quoted) a misspelt one most likely meant."""

    def describe(self, clause: str = "WITH") -> str:
        """``WITH ('k' = 'v') <problem>`` (``clause``: where the option was written, e.g. ALTER's ``SET``)."""
        return f"{clause} ('{self.key}' = '{self.value}') {self.problem}"

    def error(self, clause: str = "WITH") -> MtMagicError:
        """The problem in the one message shape (the caller's error type adds where)."""
        return MtMagicError(self.describe(clause), fix=self.fix, did_you_mean=self.did_you_mean)

    def __str__(self) -> str:
        """``WITH ('k' = 'v') <problem>. Fix: [did you mean 'x'? Otherwise, ]<fix>.``"""
        return str(self.error())


@dataclass(frozen=True)
class Option(Generic[T]):
    """A ``WITH`` option mt_magic gives a meaning to.

    ``choices``: the values it takes (compared case-insensitively, after stripping); without them ``parse`` turns
    the text into the value and raises ``ValueError`` for a bad one, and ``expects`` says what a good one is.
    ``default`` is what :meth:`read` answers when the option is absent (``None``: the reader decides, e.g. from
    the freshness).
    """

    key: str
    help: str
    parse: Callable[[str], T]
    default: T | None = None
    choices: tuple[Choice, ...] = ()
    expects: str = ""
    fix: str = ""

    @property
    def values(self) -> tuple[str, ...]:
        """The allowed values (empty: a free value checked by ``parse``)."""
        return tuple(choice.value for choice in self.choices)

    def raw(self, options: Mapping[str, str]) -> str | None:
        """The text written for this option (its key matched case-insensitively); ``None`` when absent."""
        if self.key in options:
            return options[self.key]
        wanted = self.key.lower()
        return next((value for key, value in options.items() if key.lower() == wanted), None)

    def read(self, options: Mapping[str, str]) -> T | None:
        """The option's value in ``options`` (:attr:`default` when absent).

        Raises:
            ValueError: the value is not one the option takes (the grammar refuses those before they are stored).
        """
        raw = self.raw(options)
        if raw is None:
            return self.default
        problem = self.check(raw)
        if problem is not None:
            raise ValueError(str(problem))
        return self.parse(raw.strip().lower() if self.choices else raw.strip())

    def check(self, value: str) -> OptionProblem | None:
        """What is wrong with ``value`` for this option, with the Fix; ``None`` when it is fine."""
        if self.choices:
            if value.strip().lower() in self.values:
                return None
            listed = [f"'{c.value}' ({c.help})" for c in self.choices]
            fix = "use " + (", ".join(listed[:-1]) + " or " if len(listed) > 1 else "") + listed[-1]
            near = tuple(f"'{v}'" for v in closest_names(value.strip(), self.values))
            return OptionProblem(self.key, value, "is not a known value", fix, near)
        try:
            self.parse(value.strip())
        except ValueError:
            return OptionProblem(self.key, value, f"must be {self.expects}", self.fix)
        return None


@dataclass(frozen=True)
class ColumnOption:
    """A ``WITH`` option written once per column: ``<prefix><column><suffix>`` (its values are checked where the
    column is known: the grammar's PARTITIONED BY)."""

    prefix: str
    suffix: str
    help: str

    def key(self, column: str) -> str:
        """The option key for ``column``."""
        return f"{self.prefix}{column}{self.suffix}"

    def column(self, key: str) -> str | None:
        """The column ``key`` names (the prefix and suffix as declared); ``None`` for any other key."""
        if key.startswith(self.prefix) and key.endswith(self.suffix) and len(key) > len(self.prefix + self.suffix):
            return key[len(self.prefix) : -len(self.suffix)]
        return None


def declared(*options: Option[Any]) -> dict[str, Option[Any]]:
    """The registry: lower-cased key → option, in declaration order (completion offers them in it)."""
    found: dict[str, Option[Any]] = {}
    for opt in options:
        assert opt.key.lower() not in found, f"{opt.key} is declared twice"
        found[opt.key.lower()] = opt
    return found

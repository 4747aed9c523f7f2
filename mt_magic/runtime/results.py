"""What the service answers: a statement's result (with its refresh and what it shows) and a table's history."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from datetime import timedelta

from mt_magic.errors import MtMagicError
from mt_magic.runtime.status import Listing, RefreshOutcome, RefreshRecord
from mt_magic.vocabulary import StatementAction


@dataclass(frozen=True)
class StatementResult:
    """What a statement did, for display."""

    action: StatementAction
    tables: tuple[str, ...]
    message: str
    refresh: concurrent.futures.Future[RefreshOutcome] | None = field(default=None, compare=False)
    """The refresh it started, when it started one (already done with an inline manager)."""
    listing: Listing | None = None
    """What a SHOW or DESCRIBE statement shows."""


@dataclass(frozen=True)
class TableHistory:
    """``%mt history``: a table's refreshes, newest first, and its freshness target."""

    name: str
    records: tuple[RefreshRecord, ...]
    freshness: timedelta | None


def first_error(results: list[StatementResult]) -> MtMagicError | None:
    """The first failed refresh among finished ``results``, as the error to show (``--wait``)."""
    for result in results:
        future = result.refresh
        if future is not None and future.done() and future.exception() is not None:
            error = future.exception()
            return error if isinstance(error, MtMagicError) else MtMagicError(str(error))
    return None

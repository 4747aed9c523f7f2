"""Errors of the catalog layer (client side), all :class:`mt_magic.errors.CatalogError`, and :func:`not_granted`:
the grant a refusal of mt_magic's catalog server names, wherever the refusal surfaced."""

from __future__ import annotations

import re

from mt_magic.errors import CatalogError


class EmbeddedServerError(CatalogError):
    """The embedded REST catalog server could not be started, reached or stopped; the message says why."""


class CatalogConfigError(CatalogError):
    """A configured catalog cannot be used by mt_magic (wrong type, missing URI, …)."""


class NotGrantedError(CatalogError):
    """The catalog's principal lacks a grant for what was asked; the message names it and who may give it."""


_REFUSAL = re.compile(r"(Principal '[^']+' lacks .*?)\s+Fix: (.*?)(?:\n|$)", re.S)


def not_granted(exc: BaseException | str, doing: str = "") -> NotGrantedError | None:
    """The :class:`NotGrantedError` in a refusal of mt_magic's catalog server, wherever it surfaced (pyiceberg's
    ``ForbiddenError``, a Spark failure quoting Java's ``ForbiddenException``); ``None`` when it is none.
    ``doing``: what was refused, said first (``refresh of mt.dws.t``)."""
    found = _REFUSAL.search(str(exc))
    if found is None:
        return None
    problem = found.group(1).rstrip(".")
    return NotGrantedError(f"{doing}: {problem}" if doing else problem, fix=found.group(2).rstrip("."))

"""Errors of the catalog layer (client side); all are :class:`mt_magic.errors.CatalogError`."""

from __future__ import annotations

from mt_magic.errors import CatalogError


class EmbeddedServerError(CatalogError):
    """The embedded REST catalog server could not be started, reached or stopped; the message says why."""


class CatalogConfigError(CatalogError):
    """A configured catalog cannot be used by mt_magic (wrong type, missing URI, …)."""


class NotGrantedError(CatalogError):
    """The catalog's principal lacks a grant for what was asked; the message names it and who may give it."""

"""Names as the REST protocol allows them, and how they are stored and laid out in the warehouse.

The protocol allows any non-empty string as a namespace level or a table/view name: dots (``("new.db",)`` is
one level; levels are separated by ``%1F`` on the wire), slashes, spaces, non-ASCII. Two places cannot take
them as they are:

* pyiceberg's ``SqlCatalog`` stores a namespace as its levels joined with ``.``, so a level is stored with
  ``%`` and ``.`` percent-encoded (:func:`storage_namespace`); plain names are stored unchanged, so the
  database stays a valid pyiceberg SQL catalog.
* A default location is a directory per level: a name that is not a plain file name (``[A-Za-z0-9_.-]``, not
  all dots) becomes a sanitized name plus a hash of the original (:func:`directory_name`), so names can
  neither escape the warehouse (``..``, ``/``) nor collide.
"""

from __future__ import annotations

import hashlib
import re

from pyiceberg.typedef import Identifier

from mt_magic.catalog.server.errors_http import BadRequest

NAMESPACE_SEPARATOR = "\x1f"
MAX_NAME_CHARS = 255  # the catalog database's column width for names and joined namespaces
_PLAIN = re.compile(r"[A-Za-z0-9_.-]+")
_ENCODED = re.compile(r"%(25|2E)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_level(level: object, what: str) -> str:
    """A namespace level or a table/view name: a non-empty string without control characters.

    Raises:
        BadRequest: naming the value and what is wrong with it.
    """
    if not isinstance(level, str) or not level.strip():
        raise BadRequest(f"Invalid {what} {level!r}: it must be a non-empty string")
    if match := _CONTROL.search(level):
        raise BadRequest(
            f"Invalid {what} {level!r}: control character {match.group()!r} at position {match.start()} "
            "(the unit separator %1F separates namespace levels)"
        )
    if len(level) > MAX_NAME_CHARS:
        raise BadRequest(f"Invalid {what} {level[:40]!r}…: {len(level)} characters, at most {MAX_NAME_CHARS}")
    return level


def _encode_level(level: str) -> str:
    return level.replace("%", "%25").replace(".", "%2E")


def _decode_level(level: str) -> str:
    return _ENCODED.sub(lambda m: "%" if m.group(1) == "25" else ".", level)


def storage_namespace(namespace: Identifier) -> Identifier:
    """The namespace as stored by ``SqlCatalog``: levels with ``%`` and ``.`` percent-encoded."""
    return tuple(_encode_level(level) for level in namespace)


def namespace_from_storage(stored: Identifier) -> Identifier:
    """Inverse of :func:`storage_namespace`."""
    return tuple(_decode_level(level) for level in stored)


def namespace_key(namespace: Identifier) -> str:
    """The namespace column value of the catalog's table rows (``SqlCatalog``'s own convention).

    Raises:
        BadRequest: the stored form is longer than the database column.
    """
    key = ".".join(storage_namespace(namespace))
    if len(key) > MAX_NAME_CHARS:
        raise BadRequest(f"Invalid namespace: {len(key)} characters when stored, at most {MAX_NAME_CHARS}")
    return key


def directory_name(level: str) -> str:
    """A safe, readable, collision-free directory name for a namespace level or a table/view name."""
    if _PLAIN.fullmatch(level) and level.strip(".") and len(level) <= 100:
        return level
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", level).strip("_")[:60] or "name"
    return f"{readable}-{hashlib.sha256(level.encode()).hexdigest()[:10]}"

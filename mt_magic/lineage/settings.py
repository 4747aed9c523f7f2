"""Whether lineage is on, and its client: configured exactly as OpenLineage's own clients are.

On when any of these is set (off otherwise, and ``OPENLINEAGE_DISABLED=true`` wins): ``OPENLINEAGE_URL`` (with
``OPENLINEAGE_API_KEY``, ``OPENLINEAGE_ENDPOINT``), ``OPENLINEAGE_CONFIG`` (a path to an ``openlineage.yml``), an
``openlineage.yml`` in the working directory or in ``~/.openlineage/``, or ``OPENLINEAGE__TRANSPORT__…`` variables.
The job namespace is ``OPENLINEAGE_NAMESPACE`` (``default``, as in Airflow's and Spark's integrations).
A configuration that cannot be used is a warning that names it and says how to fix it; refreshes go on without
lineage.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient

log = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "default"
CONFIG_FILE = "openlineage.yml"


class LineageConfigWarning(UserWarning):
    """The OpenLineage configuration cannot be used: refreshes run, without lineage."""


def disabled(env: Mapping[str, str]) -> bool:
    return env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true"


def config_file(env: Mapping[str, str]) -> Path | None:
    """The ``openlineage.yml`` the client reads, in its order: ``OPENLINEAGE_CONFIG``, the working directory,
    ``~/.openlineage/``."""
    named = env.get("OPENLINEAGE_CONFIG")
    if named:
        return Path(named)
    for candidate in (Path.cwd() / CONFIG_FILE, Path.home() / ".openlineage" / CONFIG_FILE):
        if candidate.is_file():
            return candidate
    return None


def configured(env: Mapping[str, str]) -> bool:
    """Lineage is on: not disabled, and a transport is configured somewhere the client looks."""
    if disabled(env):
        return False
    if env.get("OPENLINEAGE_URL") or any(k.startswith("OPENLINEAGE__TRANSPORT") for k in env):
        return True
    return config_file(env) is not None


def namespace(env: Mapping[str, str]) -> str:
    return env.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE


def shown_url(url: str) -> str:
    """A URL as a message may show it: without user info (a credential in it stays out of logs)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else "(no scheme)"


def _check(env: Mapping[str, str]) -> str | None:
    """What is wrong with the configuration, before the client tries it (``None``: nothing seen)."""
    url = env.get("OPENLINEAGE_URL")
    if url and urlsplit(url).scheme not in ("http", "https"):
        return (
            f"OPENLINEAGE_URL = {shown_url(url)!r} is not an http(s) URL; "
            "set it to the consumer's base URL, e.g. http://localhost:5000"
        )
    path = config_file(env)
    if path is not None and not url and not path.is_file():
        return f"OPENLINEAGE_CONFIG names {path}, which is not a file; point it at an {CONFIG_FILE} or unset it"
    return None


def open_client(env: Mapping[str, str] | None = None) -> OpenLineageClient | None:
    """The configured client, or ``None`` (off, or unusable: then a :class:`LineageConfigWarning` says why)."""
    env = os.environ if env is None else env
    if not configured(env):
        return None
    problem = _check(env)
    if problem is None:
        try:
            from openlineage.client import OpenLineageClient

            return OpenLineageClient()  # resolves its transport now: a bad openlineage.yml fails here
        except Exception as exc:  # the client's own errors for a bad file or transport
            where = config_file(env)
            problem = (
                f"the OpenLineage client could not be configured from {where or 'the environment'}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}; fix it "
                "(see OpenLineage's Python client configuration) or set OPENLINEAGE_DISABLED=true"
            )
    warnings.warn(f"mt_magic lineage is off: {problem}", LineageConfigWarning, stacklevel=2)
    log.warning("mt_magic lineage is off: %s", problem)
    return None

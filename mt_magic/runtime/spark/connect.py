"""The Spark Connect line: a kernel without a JVM, whose Spark is a remote server reached over gRPC.

What the classic line does through ``sparkContext`` and Py4J, this one does with Connect's own means:

* a refresh thread's child session is a *new Connect session* on the same server (its own SQL settings and temp
  views, as ``newSession()`` gives; ``newSession()`` does not exist over Connect), made from the kernel session's
  connection string without its session id; a custom channel builder gets ``cloneSession()`` reset to the
  server's defaults;
* job groups are *operation tags* (``addTag``; cancellation is ``interruptTag`` on every session the run used),
  tags being thread-local in the client as job groups are in pinned thread mode;
* the status tracker is a *progress handler* per session: the client calls it on the thread that runs the
  operation, so the thread's current group says whose progress it is;
* the JVM's log level and the Iceberg runtime belong to the server: it is checked by what the session answers.

Nothing outside :mod:`mt_magic.runtime.spark` knows which line runs (:func:`.session.spark_jobs` picks).
"""

from __future__ import annotations

import hashlib
import logging
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mt_magic.errors import RuntimeSetupError
from mt_magic.runtime.spark.connect_token import client_url
from mt_magic.runtime.spark.jobs import SparkJobs
from mt_magic.runtime.spark.quoting import identifier
from mt_magic.runtime.status import JobProgress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

CONNECT_MODULE = "pyspark.sql.connect.session"
SESSION_IDLE_SECONDS = 30 * 60
"""A child session idle this long is replaced: the server closes sessions idle for an hour by default
(``spark.connect.session.manager.defaultSessionTimeout``), and a closed one answers every call with an error."""

INSTALL_HINT = "pip install 'pyspark[connect]' (or `make setup-other`, whose PySpark 4.1 line has it)"


def is_connect(spark: object) -> bool:
    """True for a Spark Connect session (``sc://…``), False for a classic one with a JVM in this process."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def active_connect_session() -> SparkSession | None:
    """The kernel's active (or default) Connect session, if the client was imported and made one."""
    module = sys.modules.get(CONNECT_MODULE)
    if module is None:
        return None
    connect_session: Any = module.SparkSession
    session = connect_session.getActiveSession() or connect_session._get_default_session()
    return session  # type: ignore[no-any-return,unused-ignore]


def stop_session(session: SparkSession) -> None:
    """Stop a Connect session mt_magic made, and keep its ``__del__`` from closing a client again.

    PySpark's ``SparkConnectClient.close`` shuts down the release thread pool every Connect client of the process
    shares, waiting for its workers; a session collected as garbage closes its client from ``__del__``, in whatever
    thread the collector interrupts. When that thread was being started by one of the pool's own workers, the two
    wait for each other for ever (seen on the Connect line under load: test_jobs_contract's cancel test hung in its
    teardown, every Connect call of the process blocked). Without its client, ``__del__`` does nothing (it ignores
    the error)."""
    try:
        session.stop()
    except Exception:  # the server may be gone; the channel is closed either way
        log.debug("stopping a Connect child session failed", exc_info=True)
    session.__dict__.pop("_client", None)


def remote_session(url: str) -> SparkSession:
    """A Connect session on ``url`` (``sc://host:port``), made the kernel's active one; a server on this machine
    gets the token of the one this user started there (:func:`.connect_token.client_url`).

    Raises:
        RuntimeSetupError: the Connect client is not installed, the URL is malformed, or no server answers.
    """
    try:
        import pyspark.sql.connect.session  # noqa: F401  (grpc, pandas: the client's dependencies)
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise RuntimeSetupError(
            f"spark_remote is {url!r}, but the Spark Connect client is not installed ({exc}). {INSTALL_HINT}."
        ) from exc
    try:
        spark = SparkSession.builder.remote(client_url(url)).getOrCreate()
        spark.version  # noqa: B018  (the first call reaches the server)
    except Exception as exc:
        if "UNAUTHENTICATED" in str(exc) or "authenticat" in str(exc).lower():
            raise RuntimeSetupError(
                f"The Spark Connect server at {url} refused this client: it asks for its token. Fix: for a server "
                "started with `make spark-connect-start`, use the same MT_MAGIC_HOME (the token is in its "
                "spark-connect/connect.json); otherwise set SPARK_CONNECT_AUTHENTICATE_TOKEN to the server's "
                "spark.connect.authenticate.token."
            ) from exc
        raise RuntimeSetupError(
            f"No Spark Connect server answers at {url} ({str(exc).splitlines()[0]}). Start one "
            "(`make spark-connect-start` runs one on 127.0.0.1:15002) or fix MT_MAGIC_SPARK_REMOTE / "
            "%config MaterializedMagics.spark_remote."
        ) from exc
    return spark  # type: ignore[no-any-return,unused-ignore]


def quiet_recorded_deprecations() -> None:
    """Silence the Connect client's warning about deprecated SQL settings for the keys a definition records.

    A CREATE reads, and every refresh sets, each answer-changing setting (:mod:`.semantics`), a few of them
    deprecated in Spark 4 (``spark.sql.parser.escapedStringLiterals``); the classic line says nothing, but the
    Connect client warns on every get and set, into whatever cell is running. The user's own uses of other
    deprecated settings still warn.
    """
    import re
    import warnings

    from mt_magic.runtime.spark.semantics import ANSWER_SETTINGS

    keys = "|".join(re.escape(key) for key in ANSWER_SETTINGS)
    warnings.filterwarnings("ignore", message=f"The SQL config '({keys})' has been deprecated", category=UserWarning)


def remote_url(spark: SparkSession) -> str:
    """The connection string of a Connect session, without credentials or its session id."""
    builder = spark._client._builder  # type: ignore[attr-defined]
    url = getattr(builder, "url", None)
    return f"sc://{url.netloc}" if url is not None else f"sc://{builder.endpoint}"


def catalogs_on_server(spark: SparkSession, catalog_conf: Mapping[str, str]) -> set[str]:
    """Catalog names of ``catalog_conf`` that the server already defines (its configuration wins: the server
    may reach the catalog at another address than the kernel, and holds its credentials)."""
    names = {key.split(".")[3] for key in catalog_conf if key.count(".") >= 3}
    return {name for name in names if spark.conf.get(f"spark.sql.catalog.{name}", None)}


def client_catalog_conf(spark: SparkSession, catalog_conf: Mapping[str, str]) -> dict[str, str]:
    """The part of ``catalog_conf`` a Connect session must set itself (catalogs the server lacks)."""
    served = catalogs_on_server(spark, catalog_conf)
    return {k: v for k, v in catalog_conf.items() if k.count(".") < 3 or k.split(".")[3] not in served}


def check_client(spark: SparkSession) -> None:
    """Raise a clear error for a Connect client older than PySpark 4.0 (no progress reports to the client).

    Raises:
        RuntimeSetupError: the client lacks what mt_magic's Connect line uses.
    """
    if not hasattr(spark, "registerProgressHandler"):
        import pyspark

        raise RuntimeSetupError(
            f"mt_magic over Spark Connect needs the PySpark 4.0+ client (progress reports, operation tags); this "
            f"kernel has PySpark {pyspark.__version__}. pip install 'pyspark[connect]>=4.0,<4.2', or use a classic "
            "session (unset MT_MAGIC_SPARK_REMOTE)."
        )


def check_iceberg(spark: SparkSession, catalog_conf: Mapping[str, str]) -> None:
    """Raise a clear error when the server cannot host mt_magic's tables.

    Raises:
        RuntimeSetupError: the Iceberg SQL extensions or the Iceberg runtime are missing on the server.
    """
    from mt_magic.runtime.spark.iceberg_maven import ICEBERG_EXTENSIONS

    fix = (
        "Start the server with the Iceberg runtime for its Spark on --jars and "
        f"spark.sql.extensions={ICEBERG_EXTENSIONS} (`make spark-connect-start` does both)."
    )
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if ICEBERG_EXTENSIONS not in extensions:
        raise RuntimeSetupError(
            f"The Spark Connect server at {remote_url(spark)} lacks the Iceberg SQL extensions (needed for MERGE "
            f"INTO and CALL). {fix}"
        )
    names = sorted({key.split(".")[3] for key in catalog_conf if key.count(".") == 3})
    for name in names:
        try:
            spark.sql(f"SHOW NAMESPACES IN {identifier(name)}").collect()
        except Exception as exc:
            text = str(exc)
            if "CLASS_NOT_FOUND" in text or "ClassNotFound" in text:
                raise RuntimeSetupError(
                    f"The Spark Connect server at {remote_url(spark)} has no Iceberg runtime on its classpath, so "
                    f"catalog {name!r} cannot load. {fix}"
                ) from exc
            raise


def _child_url(spark: SparkSession) -> str | None:
    """The kernel session's connection string without its session id (so a new session is made), or ``None``
    for a custom channel builder."""
    builder = spark._client._builder  # type: ignore[attr-defined]
    url = getattr(builder, "url", None)
    if url is None:
        return None
    params = {k: v for k, v in getattr(builder, "_params", {}).items() if k != "session_id"}
    text = ";".join(f"{k}={urllib.parse.quote(str(v), safe='')}" for k, v in params.items())
    return f"sc://{url.netloc}/;{text}" if text else f"sc://{url.netloc}"


def new_connect_session(spark: SparkSession) -> SparkSession:
    """A new session on ``spark``'s server: the server's defaults, its own settings and temp views.

    Not made the active or default session: the kernel's stays the user's.
    """
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    url = _child_url(spark)
    if url is None:  # a custom channel builder (credentials we cannot rebuild): clone, back to the defaults
        clone = spark.cloneSession()  # type: ignore[attr-defined]
        clone.sql("RESET").collect()
        return clone  # type: ignore[no-any-return,unused-ignore]
    return ConnectSession(connection=url)  # type: ignore[return-value,unused-ignore]


def operation_tag(group: str) -> str:
    """The Connect operation tag of a job group: tags may not hold ',' (table names may), so a digest."""
    return "mt-refresh-" + hashlib.sha256(group.encode()).hexdigest()[:24]


class ConnectJobs(SparkJobs):
    """:class:`SparkJobs` over Spark Connect: the same contract (child sessions, groups, cancellation,
    progress), with sessions, tags and progress handlers instead of newSession, job groups and the tracker."""

    def __init__(self, spark: SparkSession, session_conf: Mapping[str, str]) -> None:
        super().__init__(spark, session_conf)
        self._sessions: dict[str, list[SparkSession]] = {}
        self._made: list[SparkSession] = []
        self._progress: dict[str, dict[str, tuple[int, int]]] = {}
        spark.registerProgressHandler(self._on_progress)  # type: ignore[attr-defined,arg-type,unused-ignore]

    def _thread_session(self) -> SparkSession | None:
        session = getattr(self._threads, "session", None)
        now = time.monotonic()
        if session is not None and now - getattr(self._threads, "used", now) > SESSION_IDLE_SECONDS:
            stop_session(session)
            with self._lock:
                self._made = [made for made in self._made if made is not session]
            session = self._threads.session = None
        self._threads.used = now
        return session

    def _new_session(self) -> SparkSession:
        session = new_connect_session(self.spark)
        session.registerProgressHandler(self._on_progress)  # type: ignore[attr-defined,arg-type,unused-ignore]
        with self._lock:
            self._made.append(session)
        group = getattr(self._threads, "group", None)
        if group:  # made inside a job group: its operations belong to the group too
            session.addTag(operation_tag(group))
            with self._lock:
                self._sessions.setdefault(group, []).append(session)
        return session

    def close(self) -> None:
        """Release the child sessions on the server and close their channels (each client's exit hook talks to
        the server; a closed one does not)."""
        with self._lock:
            made, self._made = self._made, []
        for session in made:
            stop_session(session)
        self._threads = threading.local()

    def _tag(self, group: str, description: str) -> None:
        tag = operation_tag(group)
        sessions = [self.spark]
        child = getattr(self._threads, "session", None)
        if child is not None:
            sessions.append(child)
        for session in sessions:
            session.addTag(tag)
        self._threads.group = group
        with self._lock:
            self._sessions[group] = sessions
            self._progress[group] = {}

    def _untag(self, group: str) -> None:
        tag = operation_tag(group)
        with self._lock:
            sessions = self._sessions.pop(group, [])
            self._progress.pop(group, None)
        for session in sessions:
            session.removeTag(tag)
        self._threads.group = None

    def _interrupt(self, group: str) -> None:
        tag = operation_tag(group)
        with self._lock:
            sessions = list(self._sessions.get(group, []))
        for session in sessions:
            try:
                session.interruptTag(tag)
            except Exception:  # the run is marked cancelled either way and stops at its next check
                log.warning("interrupting %s on the Spark Connect server failed", group, exc_info=True)

    def _on_progress(self, **report: Any) -> None:
        """A progress handler (the client calls it with keywords, on the thread running the operation)."""
        group = getattr(self._threads, "group", None)
        if not group:
            return
        stages = list(report.get("stages") or ())
        done = sum(stage.num_completed_tasks for stage in stages)
        total = sum(stage.num_tasks for stage in stages)
        with self._lock:
            operations = self._progress.get(group)
            if operations is not None:
                operations[str(report.get("operation_id"))] = (done, total)

    def progress(self, group: str) -> JobProgress | None:
        with self._lock:
            operations = list(self._progress.get(group, {}).values())
        if not operations:
            return None
        return JobProgress(sum(done for done, _ in operations), sum(total for _, total in operations))

"""Snapshot properties on a SQL command's Iceberg commit, so a row-level ``MERGE`` carries the refresh state in its
own snapshot as ``DataFrameWriterV2``'s ``snapshot-property.*`` options do for appends and overwrites.

SQL commands take no write options; Iceberg offers two other ways, and each line uses the one it has:

- **Classic** (a JVM in this process): Iceberg's ``CommitMetadata.withCommitProperties`` — a thread-local of the
  driver thread that runs the command — called through Py4J with the command as a ``java.util.concurrent.Callable``
  that calls back into Python. In PySpark's pinned thread mode the callback runs on the calling Python thread and
  its Spark calls on the same JVM thread, so the thread-local (and the refresh's job group) reach the commit.
  Every Iceberg runtime we pin has it.
- **Spark Connect**: the session settings ``spark.sql.iceberg.snapshot-property.<key>`` (Iceberg 1.12 on Spark 4.x),
  set on the refresh's own session for the command only.

Whether the properties reached the commit is for the caller to check: the snapshot must carry the refresh id
(:func:`mt_magic.runtime.refresh.commit.commit` does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mt_magic.runtime.spark.connect import is_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_PREFIX = "spark.sql.iceberg.snapshot-property."
COMMIT_METADATA = "org.apache.iceberg.spark.CommitMetadata"


def run_with_snapshot_properties(
    session: SparkSession, properties: Mapping[str, str], command: Callable[[], None]
) -> None:
    """Run ``command`` (Spark SQL on ``session``'s thread) with ``properties`` added to the summary of every Iceberg
    snapshot it commits; ``command``'s own error is raised as it was."""
    if is_connect(session):
        _with_session_settings(session, properties, command)
    else:
        _with_commit_metadata(session, properties, command)


def _with_session_settings(session: SparkSession, properties: Mapping[str, str], command: Callable[[], None]) -> None:
    keys = [SESSION_PREFIX + key for key in properties]
    for key, value in zip(keys, properties.values(), strict=True):
        session.conf.set(key, value)
    try:
        command()
    finally:
        for key in keys:
            session.conf.unset(key)


class _Command:
    """``command`` as a Java ``Callable``; keeps its Python error, which Py4J would turn into a Java one."""

    def __init__(self, command: Callable[[], None]) -> None:
        self.command = command
        self.error: BaseException | None = None

    def call(self) -> None:
        try:
            self.command()
        except BaseException as exc:
            self.error = exc
            raise

    class Java:
        implements = ["java.util.concurrent.Callable"]


def _with_commit_metadata(session: SparkSession, properties: Mapping[str, str], command: Callable[[], None]) -> None:
    from py4j.protocol import Py4JError
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = session.sparkContext._gateway
    assert gateway is not None, "a classic session has a Py4J gateway"
    ensure_callback_server_started(gateway)
    jvm = gateway.jvm
    summary = jvm.java.util.HashMap()
    for key, value in properties.items():
        summary.put(key, value)
    call = _Command(command)
    try:
        jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
            summary, call, jvm.java.lang.Class.forName("java.lang.RuntimeException")
        )
    except Py4JError:
        if call.error is not None:
            raise call.error from None
        raise
    if call.error is not None:
        raise call.error

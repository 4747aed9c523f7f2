"""Spark jobs of refreshes: isolated child sessions, job groups for cancellation, progress from the tracker.

Each refresh runs in a child session (``spark.newSession()``): same SparkContext and cached data, but its own
SQL settings (``RESUME WITH`` options apply to that run only) and its own temp views, so concurrent refreshes on
the manager's worker threads cannot see each other's state. Job groups are thread-local in PySpark's pinned
thread mode, so each worker thread tags its own jobs.

One child session per thread, reused: every new session instantiates the Iceberg REST catalog again in the JVM
(a configuration request, an HTTP connection pool and its threads), which nothing closes — a session per
refresh leaked one file descriptor and about six JVM threads per refresh. Each use resets the session's
settings to the base ones and applies that run's options and the table's answer-changing settings
(:mod:`.semantics`: the defining session's time zone, ANSI mode, …).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mt_magic.errors import RefreshCancelledError
from mt_magic.runtime.status import JobProgress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REFRESH_SESSION_CONF = {
    # Primary-key columns are required in Iceberg; a query's inferred nullability must not block the write.
    "spark.sql.iceberg.check-nullability": "false",
}

# How often a cancelled group's jobs are interrupted again while its run has not ended (see SparkJobs.cancel).
INTERRUPT_AGAIN_SECONDS = 1.0


def job_group_prefix(table: str) -> str:
    """Every Spark job group of ``table``'s refreshes starts with this; a run appends its number."""
    return f"mt-refresh:{table}:"


class SparkJobs:
    """Child sessions, cancellation and progress for refresh jobs on one SparkSession."""

    def __init__(self, spark: SparkSession, session_conf: Mapping[str, str]) -> None:
        self.spark = spark
        self.session_conf = dict(session_conf)
        self._cancelled: set[str] = set()
        self._active: set[str] = set()
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)
        self._threads = threading.local()

    def child_session(
        self, options: Mapping[str, str] | None = None, *, settings: Mapping[str, str] | None = None
    ) -> SparkSession:
        """This thread's child session (sharing the context), with the catalog settings, the run's ``options`` and
        the table's answer-changing ``settings`` (its definition's ``sql_settings``; they win over ``options``,
        see :mod:`.semantics`). ``None``: the product's settings (a table created before settings were recorded).

        Everything the previous run on this thread set and this run does not is undone first, and only what
        differs is set (a table's ~40 settings would cost ~30 ms per refresh), so one table's settings never reach
        another table's refresh; a thread runs one refresh at a time.
        """
        session = self._thread_session()
        if session is None:
            session = self._new_session()
            for key, value in {**self.session_conf, **REFRESH_SESSION_CONF}.items():
                session.conf.set(key, value)
            self._threads.session, self._threads.base, self._threads.applied = session, {}, {}
        base: dict[str, str | None] = self._threads.base  # a key's value before any run set it
        applied: dict[str, str] = self._threads.applied  # what the last run set on top of the base
        wanted = {**dict(options or {}), **dict(settings or {})}
        for key in [k for k in applied if k not in wanted]:  # back to the base settings
            previous = base[key]
            if previous is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, previous)
            del applied[key]
        for key, value in wanted.items():  # only what differs: each setting is a Py4J round trip (~1 ms)
            if applied.get(key) == value:
                continue
            if key not in base:
                base[key] = session.conf.get(key, None)
            session.conf.set(key, value)
            applied[key] = value
        return session

    @contextmanager
    def job_group(self, group: str, description: str) -> Iterator[None]:
        """Tag this thread's Spark jobs with ``group``; a cancelled group raises RefreshCancelledError."""
        if group:
            self._tag(group, description)
        with self._lock:
            self._active.add(group)
        try:
            self.check_cancelled(group)
            yield
        except RefreshCancelledError:
            raise
        except Exception as exc:
            if self.is_cancelled(group):
                raise RefreshCancelledError(f"{description} was cancelled; nothing was committed.") from exc
            raise
        finally:
            if group:
                self._untag(group)
            with self._lock:
                self._cancelled.discard(group)
                self._active.discard(group)
                self._finished.notify_all()

    def wait_finished(self, prefix: str, timeout: float) -> bool:
        """Wait until no refresh whose job group starts with ``prefix`` is running; False on timeout.

        A drop waits here after cancelling, so a write that is being aborted cannot leave files behind in a
        table that is already purged.
        """
        with self._finished:
            return self._finished.wait_for(lambda: not any(g.startswith(prefix) for g in self._active), timeout=timeout)

    def is_cancelled(self, group: str) -> bool:
        with self._lock:
            return group in self._cancelled

    def check_cancelled(self, group: str) -> None:
        """Raise at a safe point (before the commit) when the group was cancelled."""
        if group and self.is_cancelled(group):
            raise RefreshCancelledError(f"refresh {group} was cancelled before it committed; nothing was written.")

    def cancel(self, group: str) -> None:
        """Mark the group cancelled and stop its running Spark jobs, asking again until the run has ended.

        Spark stops only what runs when it is asked: a job the run submits a moment later (its next statement,
        the main job after a broadcast, an operation the Connect server had not yet registered) would run to its
        end, so a watcher repeats the request every ``INTERRUPT_AGAIN_SECONDS`` while the group is active.
        """
        with self._lock:
            self._cancelled.add(group)
        self._interrupt(group)
        threading.Thread(target=self._interrupt_until_ended, args=(group,), name=f"cancel {group}", daemon=True).start()

    def _interrupt_until_ended(self, group: str) -> None:
        while True:
            with self._finished:
                if self._finished.wait_for(lambda: group not in self._active, timeout=INTERRUPT_AGAIN_SECONDS):
                    return
            self._interrupt(group)  # outside the lock: the Connect line takes it to find the group's sessions

    def close(self) -> None:
        """Release what the child sessions hold outside this process (classic: nothing, they share the context)."""

    # The classic line: how this class talks to Spark. ConnectJobs (.connect) implements the same four over
    # Spark Connect; nothing else in the runtime knows which line runs.

    def _thread_session(self) -> SparkSession | None:
        """This thread's child session, if it has one it may keep using."""
        return getattr(self._threads, "session", None)

    def _new_session(self) -> SparkSession:
        """A session sharing the context but with its own SQL settings and temp views."""
        return self.spark.newSession()

    def _tag(self, group: str, description: str) -> None:
        """Tag the jobs this thread starts from now on (job groups are thread-local in pinned thread mode)."""
        self.spark.sparkContext.setJobGroup(group, description, interruptOnCancel=True)

    def _untag(self, group: str) -> None:
        sc = self.spark.sparkContext
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]

    def _interrupt(self, group: str) -> None:
        """Stop the running Spark jobs of ``group`` (called from any thread)."""
        self.spark.sparkContext.cancelJobGroup(group)

    def progress(self, group: str) -> JobProgress | None:
        """Completed vs. total tasks over the group's jobs, and its running jobs, stages and tasks (``None`` when
        it has no jobs): the stall watchdog shows whether Spark does any work for a long refresh at all."""
        tracker = self.spark.sparkContext.statusTracker()
        job_ids = tracker.getJobIdsForGroup(group)
        if not job_ids:
            return None
        active = set(tracker.getActiveStageIds())
        done = total = jobs = stages = running = 0
        for job_id in job_ids:
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            jobs += job.status == "RUNNING"
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
                    if stage_id in active:
                        stages += 1
                        running += stage.numActiveTasks
        return JobProgress(done, total, jobs, stages, running)

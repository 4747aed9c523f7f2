"""The refresh jobs' contract on whichever line runs (``spark_jobs`` picks): child sessions isolated per thread
and undone between runs, cancellation of exactly one group, progress of a group's tasks.

On the default lines these run on the classic session; on the Connect line (``MT_TEST_SPARK_CONNECT=1``) on a
real Spark Connect server, where there is no ``newSession()``, job group or status tracker.
"""

from __future__ import annotations

import threading
import time

import pytest

from mt_magic.errors import RefreshCancelledError
from mt_magic.runtime.spark.session import spark_jobs

pytestmark = pytest.mark.spark

ZONE = "spark.sql.session.timeZone"
ANSI = "spark.sql.ansi.enabled"
SHUFFLE = "spark.sql.shuffle.partitions"
# Long enough to be cancelled or watched mid-way on two cores: tens of seconds when left alone.
SLOW_QUERY = "SELECT sum(a.id * b.id) FROM range(0, 200000, 1, 4) a CROSS JOIN range(0, 200000, 1, 4) b"


@pytest.fixture
def jobs(spark):  # type: ignore[no-untyped-def]
    made = spark_jobs(spark, {})
    yield made
    made.close()


def test_one_tables_settings_never_reach_the_next_tables_refresh_on_the_same_thread(spark, jobs) -> None:
    base_zone = jobs.child_session().conf.get(ZONE)
    ansi_default = jobs.child_session().conf.get(ANSI)
    first = jobs.child_session({SHUFFLE: "3"}, settings={ZONE: "America/Los_Angeles", ANSI: "true"})
    assert (first.conf.get(ZONE), first.conf.get(ANSI), first.conf.get(SHUFFLE)) == (
        "America/Los_Angeles",
        "true",
        "3",
    )
    hour = first.sql("SELECT hour(TIMESTAMP '2024-01-01 00:00:00 UTC') AS h").collect()[0]["h"]
    assert hour == 16  # the setting is in force on the server, not only recorded by the client
    second = jobs.child_session(settings={ZONE: "Asia/Tokyo"})
    assert second is first  # one session per thread, reused
    assert (second.conf.get(ZONE), second.conf.get(ANSI)) == ("Asia/Tokyo", ansi_default)
    assert jobs.child_session().conf.get(ZONE) == base_zone
    assert spark.conf.get(ZONE) != "Asia/Tokyo"  # the kernel's session never changes


def test_threads_get_sessions_of_their_own_and_the_kernels_session_stays_active(spark, jobs) -> None:
    from pyspark.sql import SparkSession

    seen: dict[str, str] = {}

    def run(name: str, zone: str) -> None:
        session = jobs.child_session(settings={ZONE: zone})
        seen[name] = session.sql("SELECT current_timezone() AS z").collect()[0]["z"]

    threads = [threading.Thread(target=run, args=args) for args in (("a", "Asia/Tokyo"), ("b", "Europe/Paris"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"a": "Asia/Tokyo", "b": "Europe/Paris"}
    assert SparkSession.getActiveSession() is spark


def _run_in_group(jobs, group: str, outcome: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
    try:
        session = jobs.child_session()
        with jobs.job_group(group, f"test {group}"):
            session.sql(SLOW_QUERY).collect()
        outcome[group] = "finished"
    except RefreshCancelledError as exc:
        outcome[group] = exc
    except Exception as exc:  # a wrong outcome, shown by the assertion
        outcome[group] = repr(exc)


def _wait_for(condition, timeout: float = 120.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        threading.Event().wait(0.2)
    return False


def test_cancel_stops_the_groups_running_query_reports_progress_and_spares_the_other_group(spark, jobs) -> None:
    outcome: dict[str, object] = {}
    group = "mt-refresh:db.t, with comma:1"  # a ',' is not allowed in a Connect operation tag
    victim = threading.Thread(target=_run_in_group, args=(jobs, group, outcome))
    victim.start()
    assert _wait_for(lambda: getattr(jobs.progress(group), "tasks_total", 0) > 0), "no progress reported"
    progress = jobs.progress(group)
    assert progress is not None and 0 <= progress.tasks_done <= progress.tasks_total
    assert jobs.progress("mt-refresh:another:1") is None
    jobs.cancel(group)
    victim.join(timeout=300)  # a bound for a hung run, not a timing claim: the query would run for hours
    assert not victim.is_alive(), "the cancelled query kept running"
    assert isinstance(outcome[group], RefreshCancelledError), outcome
    assert jobs.wait_finished("mt-refresh:db.t", timeout=5)
    # the thread's session is still usable, and another group's run is not cancelled by the first one's
    session = jobs.child_session()
    with jobs.job_group("mt-refresh:db.u:1", "test u"):
        assert session.sql("SELECT count(*) AS n FROM range(10)").collect()[0]["n"] == 10


def test_a_job_the_group_submits_after_the_cancel_is_stopped_too(spark, jobs) -> None:
    """Spark stops only the jobs running when it is asked; a cancelled run's next job (its next statement, the main
    job after a quick broadcast) must not run to its end. Here the cancel comes while the group runs nothing."""
    group = "mt-refresh:db.later:1"
    inside, go = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            session = jobs.child_session()
            with jobs.job_group(group, "test later"):
                inside.set()
                go.wait(timeout=300)
                session.sql(SLOW_QUERY).collect()
            outcome[group] = "finished"
        except RefreshCancelledError as exc:
            outcome[group] = exc
        except Exception as exc:  # a wrong outcome, shown by the assertion
            outcome[group] = repr(exc)

    victim = threading.Thread(target=run)
    victim.start()
    assert inside.wait(timeout=300)
    jobs.cancel(group)  # nothing of the group runs at this moment
    go.set()
    victim.join(timeout=300)  # a bound for a hung run, not a timing claim
    assert not victim.is_alive(), "the cancelled group's later query kept running"
    assert isinstance(outcome[group], RefreshCancelledError), outcome

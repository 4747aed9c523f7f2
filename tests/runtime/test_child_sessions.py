"""Refresh child sessions: one per thread, reused, with each run's options applied and the last run's undone.

A new Spark session per refresh instantiated the Iceberg REST catalog again in the JVM and leaked a file
descriptor per refresh (``benchmarks/resource_run.py`` found it: +500 descriptors in 20 minutes).
"""

from __future__ import annotations

import threading

import pytest

from mt_magic.runtime.spark.jobs import SparkJobs

pytestmark = pytest.mark.spark

SHUFFLE = "spark.sql.shuffle.partitions"


def test_a_thread_reuses_its_session_and_each_run_starts_from_the_base_settings(spark) -> None:
    jobs = SparkJobs(spark, {"spark.sql.session.timeZone": "UTC"})
    default_shuffle = spark.conf.get(SHUFFLE)
    first = jobs.child_session({SHUFFLE: "1", "spark.sql.session.timeZone": "Asia/Tokyo"})
    assert first.conf.get(SHUFFLE) == "1"
    assert first.conf.get("spark.sql.session.timeZone") == "Asia/Tokyo"
    second = jobs.child_session()
    assert second is first
    assert second.conf.get(SHUFFLE) == default_shuffle  # the last run's option is gone
    assert second.conf.get("spark.sql.session.timeZone") == "UTC"  # a base setting comes back, not the default
    assert spark.conf.get(SHUFFLE) == default_shuffle  # the parent session never changes


def test_threads_get_sessions_of_their_own(spark) -> None:
    jobs = SparkJobs(spark, {})
    sessions = {}

    def run(name: str, partitions: str) -> None:
        sessions[name] = jobs.child_session({SHUFFLE: partitions})

    threads = [threading.Thread(target=run, args=(n, p)) for n, p in (("a", "3"), ("b", "5"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sessions["a"] is not sessions["b"]
    assert (sessions["a"].conf.get(SHUFFLE), sessions["b"].conf.get(SHUFFLE)) == ("3", "5")
    assert jobs.child_session() not in sessions.values()


def test_a_tables_settings_win_over_the_runs_options_and_never_reach_the_next_run(spark) -> None:
    jobs = SparkJobs(spark, {})
    base_zone = jobs.child_session().conf.get("spark.sql.session.timeZone")
    first = jobs.child_session(
        {SHUFFLE: "2", "spark.sql.session.timeZone": "UTC"},
        settings={"spark.sql.session.timeZone": "America/Los_Angeles", "spark.sql.ansi.enabled": "true"},
    )
    assert first.conf.get("spark.sql.session.timeZone") == "America/Los_Angeles"
    assert (first.conf.get(SHUFFLE), first.conf.get("spark.sql.ansi.enabled")) == ("2", "true")
    ansi_default = spark.newSession().conf.get("spark.sql.ansi.enabled")
    second = jobs.child_session(settings={"spark.sql.session.timeZone": "Asia/Tokyo"})
    assert second is first and second.conf.get("spark.sql.session.timeZone") == "Asia/Tokyo"
    assert second.conf.get("spark.sql.ansi.enabled") == ansi_default  # the first table's ANSI mode is gone
    third = jobs.child_session()  # a table without recorded settings: the product's
    assert third.conf.get("spark.sql.session.timeZone") == base_zone

"""What a refresh's Spark jobs cost, from Spark's status store: summed task time and bytes read, by job group.

The status tracker that :meth:`SparkJobs.progress` asks gives task counts only; the store behind Spark's UI (kept
with the UI off, ``spark.ui.retainedJobs`` jobs deep) has each stage's executor run time and input bytes. Asked
after the refresh ended, once Spark's listener bus has delivered the last task ends (a bounded wait). The classic
line only: a Spark Connect client cannot reach the store, and a run without a job group cannot be told from
others — both answer ``None`` (not measured).
"""

from __future__ import annotations

from dataclasses import dataclass

from mt_magic.runtime.spark.jobs import SparkJobs

LISTENER_WAIT_MS = 200
"""How long to wait for Spark's listener bus to deliver the refresh's last events before counting."""


@dataclass(frozen=True)
class SparkCost:
    """The summed cost of one job group's Spark stages."""

    task_seconds: float
    bytes_read: int
    jobs: int


def spark_cost(jobs: SparkJobs, group: str) -> SparkCost | None:
    """The cost of ``group``'s jobs so far (``None``: not measurable here, see the module's note)."""
    if not group:
        return None
    try:
        context = jobs.spark.sparkContext
        jvm_context = context._jsc.sc()
        job_ids = context.statusTracker().getJobIdsForGroup(group)
        if job_ids:
            jvm_context.listenerBus().waitUntilEmpty(LISTENER_WAIT_MS)
        store = jvm_context.statusStore()
        run_ms = read = 0
        for job_id in job_ids:
            job = context.statusTracker().getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                try:
                    stage = store.lastStageAttempt(stage_id)
                except Exception:  # a skipped stage has no attempt
                    continue
                run_ms += stage.executorRunTime()
                read += stage.inputBytes()
        return SparkCost(run_ms / 1000, read, len(job_ids))
    except Exception:  # Spark Connect (no SparkContext here), or a store that changed its shape
        return None

"""OpenLineage run events for every refresh: ``settings`` (is a client configured, the way OpenLineage users
configure one), ``naming`` (job and dataset names as Spark's and Airflow's integrations spell them), ``facets``
(what a refresh adds to a run event), ``events`` (the START, COMPLETE and FAIL events), ``emitter`` (a
background thread with a bounded queue: a consumer that is down never slows or fails a refresh) and ``observer``
(:class:`RefreshLineage`, what the refresh engine calls)."""

from mt_magic.lineage.observer import RefreshLineage, RefreshSummary, lineage_from_environment

__all__ = ["RefreshLineage", "RefreshSummary", "lineage_from_environment"]

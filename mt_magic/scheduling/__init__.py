"""Who runs a materialized table's refreshes: the seam of Flink's FLIP-448 (a pluggable workflow scheduler).

A table's definition names its scheduler (``WITH ('scheduler' = 'airflow')``; absent: the kernel's
RefreshManager). The statements reach it through one protocol, so CREATE, ALTER and DROP do the same thing
whichever scheduler runs the table.

```
workflow.py      WorkflowScheduler (the protocol: create / modify / delete a table's workflow, suspend, resume,
                 refresh or backfill now) and scheduler_of(definition)
dags.py          a definition → the DAG it asks for (id, Asset, cron / interval / upstream Assets); pure
airflow_api.py   a small typed client of Airflow 3's REST API (JWT from a user and password, or a token)
airflow.py       AirflowWorkflows: the protocol over that client (parse the DAG file now, pause, unpause, trigger)
airflow_runs.py  Airflow's view of a table (last run, its log link, next run, paused), polled and cached
airflow_dags.py  imported *inside Airflow* by a DAG file: one DAG per table on Airflow, read from the catalog
                 with pyiceberg (no Spark at parse time); each task runs ``python -m mt_magic refresh``
```

The kernel's implementation of the protocol is ``mt_magic.runtime.workflows`` (it drives the RefreshManager);
this package sits below the runtime and imports only the catalog, the vocabulary and the errors, so Airflow's
virtualenv can import the DAG module with pyiceberg alone.
"""

"""Names, as OpenLineage's naming conventions and its Spark and Airflow integrations spell them, so the graph a
refresh makes joins the graphs they make.

* **Job**: Spark's integration names a job ``{appName}.{command}.{table}`` (dots in the table replaced by ``_``),
  Airflow's ``{dag_id}.{task_id}``; a refresh is ``mt_magic.refresh_materialized_table.{catalog_ns_table}`` in the
  namespace ``OPENLINEAGE_NAMESPACE`` (``default``, theirs too). Run under Airflow, the task's run is the parent
  (``OPENLINEAGE_PARENT_ID`` = ``{namespace}/{job}/{run id}``, the form Airflow's ``lineage_parent_id`` macro
  gives, as for dbt-ol).
* **Dataset**: Spark's integration names an Iceberg table of a REST catalog by its location (``file`` + the path,
  ``s3://{bucket}`` + the key, …) with a ``symlinks`` entry ``{namespace.table}`` in the catalog URI's namespace;
  so do we, so a Spark job writing a source and the refresh reading it meet on the same dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

APP = "mt_magic"
COMMAND = "refresh_materialized_table"


def job_name(table: str) -> str:
    """The refresh job of ``table`` (``catalog.namespace.table``)."""
    return f"{APP}.{COMMAND}.{table.replace('.', '_')}"


@dataclass(frozen=True)
class DatasetName:
    """A dataset's identity in OpenLineage: the table's storage location, and its name in the catalog."""

    namespace: str
    name: str
    table_namespace: str
    """The catalog's URI: the ``symlinks`` entry's namespace."""
    table_name: str
    """``namespace.table`` in the catalog."""


def location_name(location: str) -> tuple[str, str]:
    """(namespace, name) of a storage location, per the naming spec: ``file`` and the path for a local path,
    ``{scheme}://{authority}`` and the path without its leading ``/`` for an object store or HDFS."""
    parts = urlsplit(location)
    if parts.scheme in ("", "file") and not parts.netloc:
        return "file", parts.path or location
    return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")


def dataset_name(qualified: str, location: str, catalog_uri: str) -> DatasetName:
    """The dataset of table ``qualified`` (``catalog.namespace.table``) stored at ``location``."""
    namespace, name = location_name(location.rstrip("/"))
    in_catalog = ".".join(qualified.split(".")[1:]) or qualified
    return DatasetName(namespace, name, catalog_uri.rstrip("/"), in_catalog)


def parent_of(value: str) -> tuple[str, str, str] | None:
    """(namespace, job, run id) of an ``OPENLINEAGE_PARENT_ID`` value, or ``None`` when it is not of that form."""
    parts = value.split("/")
    if len(parts) < 3 or not all(parts):
        return None
    return "/".join(parts[:-2]), parts[-2], parts[-1]

"""The one commit of an incremental refresh: data and refresh state together, or nothing.

Every strategy ends in a single DataFrameWriterV2 call — ``append()`` or ``overwrite(condition)`` — whose
``snapshot-property.*`` options carry the new refresh state, so the data and the record of what it consumed
land in the same Iceberg snapshot (exactly once: a crash before it repeats the work, a crash after it finds
the sources already consumed). Overwrites also ask Iceberg to validate that no file matching the condition
was added since the snapshot the refresh read (serializable isolation); appends are guarded by checking the
table's current snapshot right before the write.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import RefreshState
from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.errors import RefreshError
from mt_magic.runtime.refresh import REFRESH_ID_KEY

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class WriteMode(enum.Enum):
    """How the refresh's rows reach the table."""

    APPEND = "append"
    """Add the rows; nothing is removed."""
    OVERWRITE = "overwrite"
    """Replace the rows matching the condition (whole data files: partition conditions or everything)."""


@dataclass(frozen=True)
class Write:
    """The rows an incremental strategy produced and how they are committed."""

    df: DataFrame
    mode: WriteMode
    condition: Column | None = None
    """For OVERWRITE: the replaced region (``None``: the whole table)."""
    scope: str = ""
    """Human note on the region, e.g. "partitions ds=20241216"."""


def commit(catalog: MaterializedCatalog, table: str, write: Write, state: RefreshState, refresh_id: str,
           read_snapshot: int) -> None:
    """Commit ``write`` with ``state`` in its snapshot summary.

    Raises:
        RefreshError: the table changed since ``read_snapshot`` (another writer); nothing was committed.
    """
    from pyspark.sql import functions as F

    current = catalog.load(table).current_snapshot_id
    if current != read_snapshot:
        raise RefreshError(
            f"{table} changed during the refresh (snapshot {read_snapshot} → {current}, another writer?); "
            "nothing was committed, the next refresh starts from the new state."
        )
    writer = write.df.writeTo(table)
    for key, value in {**state.to_summary(), REFRESH_ID_KEY: refresh_id}.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    if write.mode is WriteMode.APPEND:
        writer.append()
        return
    writer = writer.option("isolation-level", "serializable").option("validate-from-snapshot-id", str(read_snapshot))
    writer.overwrite(write.condition if write.condition is not None else F.lit(True))

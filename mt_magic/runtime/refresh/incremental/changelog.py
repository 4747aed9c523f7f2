"""The change of a copy-on-write range, read from Iceberg's changelog scan and netted by value inside Spark.

Iceberg's changelog scan (the ``changes`` metadata table; ``start-snapshot-id`` exclusive, ``end-snapshot-id``
inclusive) lists, for each snapshot of the range, every row of the data files it removed as ``DELETE`` and of
the files it added as ``INSERT``. A copy-on-write commit rewrites whole files, so each row it kept comes out
deleted and inserted again (a *carry-over*), and a row changed in several snapshots once per change. The net
change is the signed multiset of inserts (+1) and deletes (-1) (:func:`.multisets.signed_difference`): a row whose count
rises is inserted, one whose count falls deleted. Each snapshot deletes only rows its table held, so the net
deleted rows are rows of the consumed snapshot, and consumed − deleted + inserted = pinned.

Not ``create_changelog_view``: its carry-over removal (Iceberg's ``ChangelogIterator``) runs over Spark's external
``Row`` objects, and that round trip changes values — a STRING holding bytes that are not UTF-8 comes back with
U+FFFD (a Java ``String``), a DATE or TIMESTAMP in the Julian–Gregorian gap (1582-10-05 to 1582-10-14) moves to
another day (``java.sql.Date``'s hybrid calendar: DATE 1582-10-10 becomes 1582-10-15) — with Iceberg's runtimes
for Spark 3.5 and 4.1 alike, while the scan itself answers the stored values, which the netting keeps.

A column Spark 3.5 cannot group by (a MAP anywhere in its type, a VARIANT) has no value to net by: such a range
is read by the positions reader (:mod:`.merge_on_read`), whose carry-overs cancel in every strategy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.runtime.refresh.incremental.changes import SourceChange
from mt_magic.runtime.refresh.incremental.merge_on_read import merge_on_read_delta
from mt_magic.runtime.refresh.incremental.multisets import NET, groupable, signed_difference
from mt_magic.runtime.spark.quoting import identifier, qualified

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHANGE_TYPE = "_change_type"
CHANGELOG_META = (CHANGE_TYPE, "_change_ordinal", "_commit_snapshot_id")
"""The columns the changelog scan adds to the table's."""


def changelog_delta(session: SparkSession, change: SourceChange) -> DataFrame:
    """The source's net inserted (``SIDE`` = '+') and deleted ('-') rows between the change's two snapshots.

    Lazy: no Spark job runs here. The columns are the source's, plus ``SIDE``, as :func:`.merge_on_read_delta`.
    """
    from pyspark.sql import functions as F

    assert change.consumed is not None and change.pinned is not None, "a row-level change has both snapshots"
    log = (
        session.read.option("start-snapshot-id", str(change.consumed))
        .option("end-snapshot-id", str(change.pinned))
        .table(f"{qualified(change.name)}.changes")
    )
    data = [identifier(c) for c in log.columns if c not in CHANGELOG_META]
    if not groupable(log.select(*data)):
        return merge_on_read_delta(session, change)
    # a sign, not a filter: Iceberg binds a filter on _change_type to the table's schema and fails the scan
    sign = F.when(F.col(CHANGE_TYPE) == "INSERT", 1).otherwise(-1)  # the scan answers INSERT or DELETE
    return signed_difference(log.select(*data, sign.alias(NET)))

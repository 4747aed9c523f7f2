"""Fixtures shared by the incremental tests (the shared Spark session and service come from tests/conftest.py)."""

from __future__ import annotations

import pytest
from notebook_settings import session_settings


@pytest.fixture
def ansi_off(spark):
    """The test's session with ANSI mode off (PySpark 4 turns it on by default); tables created in it record it."""
    with session_settings(spark, {"spark.sql.ansi.enabled": "false"}):
        yield

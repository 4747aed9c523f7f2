"""Property tests: what runtime.spark.quoting writes, Spark's own parser reads back exactly (no jobs run)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mt_magic.runtime.spark.quoting import identifier, procedure, qualified, string_literal
from mt_magic.sql.names import name_part_refusal

pytestmark = pytest.mark.spark

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
PARTS = st.text(
    st.characters(
        exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), exclude_characters="./%?#+\u00a0\u2000\u3000"
    ),
    min_size=1,
    max_size=12,
).filter(lambda p: name_part_refusal(p) is None)
QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _parts(spark, text: str) -> list[str]:
    parser = spark._jsparkSession.sessionState().sqlParser()
    return list(spark._jvm.scala.collection.JavaConverters.seqAsJavaList(parser.parseMultipartIdentifier(text)))


@QUICK
@given(catalog=PARTS, namespace=PARTS, name=PARTS)
@example(catalog="mt", namespace="ns", name="m1; DROP TABLE x")
@example(catalog="select", namespace="`", name='it\'s "x" ` é')
def test_a_qualified_name_parses_back_part_by_part(spark, catalog: str, namespace: str, name: str) -> None:
    assert _parts(spark, qualified(f"{catalog}.{namespace}.{name}")) == [catalog, namespace, name]
    call, table = procedure(f"{catalog}.{namespace}.{name}", "expire_snapshots")
    assert _parts(spark, call) == [catalog, "system", "expire_snapshots"]
    literal = spark.sql(f"SELECT {table}").collect()[0][0]
    assert _parts(spark, literal) == [namespace, name]


@QUICK
@given(value=TEXT)
@example(value="it's a \\ 'quote' \\'")
def test_a_string_literal_holds_the_value_exactly(spark, value: str) -> None:
    assert spark.sql(f"SELECT {string_literal(value)} AS {identifier(value or 'v')}").collect()[0][0] == value

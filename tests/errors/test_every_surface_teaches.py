"""Every error a user can meet on `%mt`, the Python API and the command lines teaches: it says what is wrong,
where (the command, statement or argument), and a ``Fix:`` (as ``test_refused_statements`` does for statements).

`%mt` runs on a real IPython shell with the extension loaded; the Python API on the same kernel connection; the
command lines as a user runs them, in a process of their own (only refusals that need no server or Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from mt_magic.errors import MtMagicError
from mt_magic.sql.ddl.parser import parse_interval, parse_table_name
from mt_magic.sql.errors import SqlError

pytestmark = pytest.mark.timeout(600)

MISSING = "no_such_table_e51"


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


def teaches(message: str, *what: str) -> None:
    """``message`` names each of ``what`` (the problem and where it is) and ends with a Fix."""
    assert all(part in message for part in what), (what, message)
    assert "Fix:" in message and message.rstrip().split("Fix:")[-1].strip(), message


MT_CASES = [
    ("nosuch", ["Unknown %mt command 'nosuch'"]),
    ("histroy t", ["Unknown %mt command 'histroy'", "%mt history"]),
    ("refresh", ["%mt refresh needs one table name"]),
    ("suspend", ["%mt suspend needs one table name"]),
    ("resume", ["%mt resume needs one table name"]),
    ("verify", ["%mt verify needs one table name"]),
    ("history", ["%mt history needs one table name"]),
    ("status", ["%mt status needs one table name"]),
    ("refresh t --cascde", ["%mt does not know the option --cascde", "--cascade"]),
    (f"refresh {MISSING}", [MISSING]),
    (f"suspend {MISSING}", [MISSING]),
    (f"history {MISSING}", [MISSING]),
    (f"status {MISSING}", [MISSING]),
    (f"verify {MISSING}", [MISSING]),
    (f"explain {MISSING}", [MISSING]),
    ("explain ALTER MATERIALIZED TABLE", ["line 1, column 25", "missing table name"]),
    ("explain DROP MATERIALIZED TABLE t", ["%mt explain", "DROP"]),
    ('refresh t --partition "ds ="', ["ds"]),
]


@pytest.mark.parametrize(("line", "what"), MT_CASES, ids=[line for line, _ in MT_CASES])
def test_each_mt_refusal_teaches(shell, line: str, what: list[str]) -> None:
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("mt", line)
    teaches(str(refused.value), *what)


CELL_CASES = [
    ("materialized", "--wiat", "SHOW MATERIALIZED TABLES", ["%%materialized does not know the option --wiat"]),
    ("mtsql", "--lve", "SELECT 1", ["%%mtsql does not know the option --lve"]),
    ("mtsql", "", f"SELECT * FROM {MISSING}", [MISSING]),
    ("materialized", "", f"ALTER MATERIALIZED TABLE {MISSING} SUSPEND", [MISSING]),
]


@pytest.mark.parametrize(("magic", "line", "cell", "what"), CELL_CASES, ids=[c[0] + c[1] for c in CELL_CASES])
def test_each_cell_magic_refusal_teaches(shell, magic: str, line: str, cell: str, what: list[str]) -> None:
    with pytest.raises(UsageError) as refused:
        shell.run_cell_magic(magic, line, cell)
    teaches(str(refused.value), *what)


def _api() -> list[tuple[str, Callable[[], object], list[str]]]:
    import mt_magic

    query = "SELECT 1 AS one"
    return [
        ("table missing", lambda: mt_magic.table(MISSING), [MISSING]),
        ("table not a name", lambda: mt_magic.table("a b"), ["column 3: unexpected 'b' after the table name"]),
        ("freshness", lambda: mt_magic.materialize("e51", query, freshness="often"), ["freshness='often'"]),
        ("freshness unit", lambda: mt_magic.materialize("e51", query, freshness="INTERVAL '1' MONTH"), ["column 14"]),
        ("refresh mode", lambda: mt_magic.materialize("e51", query, refresh_mode="sometimes"), ["sometimes"]),
        ("option value", lambda: mt_magic.materialize("e51", query, options={"incremental": "often"}), ["often"]),
        ("option key", lambda: mt_magic.materialize("e51", query, options={"incremental.engin": "spark"}), ["engin"]),
        ("source", lambda: mt_magic.materialize("e51", f"SELECT * FROM {MISSING}"), [MISSING]),
        ("explain missing", lambda: mt_magic.explain(MISSING), [MISSING]),
        ("explain DROP", lambda: mt_magic.explain("DROP MATERIALIZED TABLE t"), ["DROP"]),
    ]


API_IDS = [case[0] for case in _api()]


@pytest.mark.parametrize("case", API_IDS)
def test_each_python_api_refusal_teaches(shell, case: str) -> None:
    import mt_magic

    _, call, what = next(c for c in _api() if c[0] == case)
    with pytest.raises(MtMagicError) as refused:
        call()
    teaches(str(refused.value), *what)
    with pytest.raises(MtMagicError):  # and nothing was created
        mt_magic.table("e51")


@pytest.mark.parametrize(
    ("parse", "text", "where"),
    [(parse_table_name, "ns.`x` y", "TABLE, line 1, column 8"), (parse_interval, "INTERVAL '1' MONTH", "column 14")],
)
def test_an_argument_s_error_is_placed_in_the_argument_as_written(parse, text: str, where: str) -> None:
    """A name or interval given alone (``%mt`` lines, the API's arguments) is read behind a keyword the caller never
    typed; the column counted that keyword (``column 14`` for ``y`` in ``ns.`x` y``)."""
    with pytest.raises(SqlError) as refused:
        parse(text)
    teaches(str(refused.value), where)


CLI_CASES = [
    (["mt_magic", "nosuch"], ["python -m mt_magic: argument command: invalid choice: 'nosuch'"]),
    (["mt_magic", "refresh"], ["python -m mt_magic refresh: the following arguments are required: table"]),
    (["mt_magic.catalog", "principals", "list"], ["no catalog server runs in"]),
    (["mt_magic.catalog", "audit"], ["no catalog server runs in"]),
    (["mt_magic.catalog", "nosuch"], ["python -m mt_magic.catalog: argument command: invalid choice: 'nosuch'"]),
    (["mt_magic.catalog", "serve", "--port", "x"], ["python -m mt_magic.catalog serve: argument --port: invalid int"]),
]


@pytest.mark.parametrize(("argv", "what"), CLI_CASES, ids=[" ".join(argv) for argv, _ in CLI_CASES])
def test_each_command_line_refusal_teaches(tmp_path, argv: list[str], what: list[str]) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = {**os.environ, "MT_MAGIC_HOME": str(home)}
    env.pop("MT_MAGIC_CATALOG_TOKEN", None)
    done = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0, done
    teaches(done.stdout + done.stderr, *what)

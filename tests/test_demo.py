"""What ``make demo`` prints for each cell of the quickstart (the notebook run itself is covered by nbval)."""

from __future__ import annotations

import nbformat
import pytest

from mt_magic.demo import QUICKSTART, _cell_text, _report


def cell(source: str, *outputs: dict) -> nbformat.NotebookNode:
    node = nbformat.v4.new_code_cell(source)
    node.outputs = [nbformat.from_dict(o) for o in outputs]
    return node


def test_the_demo_runs_the_quickstart_of_this_checkout() -> None:
    assert QUICKSTART.name == "01_quickstart.ipynb" and QUICKSTART.exists()
    assert "%load_ext mt_magic" in QUICKSTART.read_text()


def test_cell_text_keeps_what_the_cell_showed_and_drops_spark_log_lines() -> None:
    shown = cell(
        "x",
        {
            "output_type": "stream",
            "name": "stderr",
            "text": "10:59:33 WARN BlockManager: Block rdd_1 exists\n"
            "\tat org.apache.spark.Foo\n"
            'Setting default log level to "WARN".\n'
            "UsageError: bad option\n",
        },
        {"output_type": "stream", "name": "stdout", "text": "{'ZhongTong': 1}\n"},
        {
            "output_type": "execute_result",
            "execution_count": 1,
            "metadata": {},
            "data": {"text/plain": "Created t\n  [fresh]", "application/vnd.jupyter.widget-view+json": {}},
        },
        {"output_type": "error", "ename": "AssertionError", "evalue": "counts differ\nmore", "traceback": []},
    )
    assert _cell_text(shown) == [
        "UsageError: bad option",
        "{'ZhongTong': 1}",
        "Created t",
        "  [fresh]",
        "AssertionError: counts differ",
    ]


@pytest.mark.parametrize(
    ("source", "head"),
    [
        (
            "%%materialized --wait\nALTER MATERIALIZED TABLE t REFRESH",
            "%%materialized --wait ALTER MATERIALIZED TABLE t REFRESH",
        ),
        ("# NBVAL_CHECK_OUTPUT\nassert counts() == {}\nprint(counts())", "assert counts() == {} …"),
    ],
)
def test_report_names_the_cell_by_its_first_statement(
    capsys: pytest.CaptureFixture[str], source: str, head: str
) -> None:
    _report(cell(source), 7, 1.25)
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"[ 7]   1.2s  {head}"


@pytest.mark.kernel
def test_the_kernel_log_is_its_owners_only_from_creation(tmp_path) -> None:
    """The demo's kernel log (Spark's: paths, users, queries) is created 0600 whatever the umask, and an older one
    left open to others is closed."""
    import os
    import stat

    from mt_magic.demo import run_notebook

    notebook = tmp_path / "one.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), notebook)
    previous = os.umask(0o022)
    try:
        fresh, older = tmp_path / "fresh.log", tmp_path / "older.log"
        older.write_text("an older run\n")
        os.chmod(older, 0o644)
        for log in (fresh, older):
            run_notebook(notebook, log)
            assert stat.S_IMODE(log.stat().st_mode) == 0o600, log
    finally:
        os.umask(previous)

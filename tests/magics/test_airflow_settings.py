"""The ``%config`` lines ``python -m mt_magic.scheduling.local_airflow`` prints, pasted one by one into a real
IPython shell whose kernel is connected (its workflows check Airflow's settings as each line is set): none is
refused, the kernel ends up with Airflow's URL, user and password, and the password itself is nowhere in the lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from IPython.core.interactiveshell import InteractiveShell

from mt_magic.errors import WorkflowSchedulerError
from mt_magic.magics import MaterializedMagics
from mt_magic.runtime.workflows import Workflows
from mt_magic.scheduling.airflow_api import AirflowSettings, password_from_file
from mt_magic.scheduling.local_airflow import LocalAirflow, password_file, settings_lines


@pytest.fixture
def magics():  # type: ignore[no-untyped-def]
    shell = InteractiveShell.instance()
    magics = MaterializedMagics(shell=shell)
    shell.register_magics(magics)
    magics._connection = SimpleNamespace(service=SimpleNamespace(workflows=Workflows()))  # connected, no Spark
    yield magics
    magics._connection = None


def test_the_printed_config_lines_paste_cleanly_and_keep_the_password_out(magics, tmp_path: Path, caplog) -> None:
    passwords = password_file(tmp_path)
    password = json.loads(passwords.read_text())["mt_admin"]
    server = LocalAirflow(tmp_path, "http://127.0.0.1:8080", password, {})
    lines = [line.strip() for line in settings_lines(server).splitlines() if line.strip().startswith("%config")]
    assert len(lines) == 3 and not any(password in line for line in settings_lines(server).splitlines())
    for line in lines:
        magics.shell.run_line_magic("config", line.removeprefix("%config "))
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []  # how %config shows a refusal
    assert magics._connection.service.workflows.airflow_settings == AirflowSettings(
        "http://127.0.0.1:8080", "mt_admin", password
    )


def test_a_password_file_without_the_user_says_which_users_it_has(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text('{"admin": "x"}')
    with pytest.raises(WorkflowSchedulerError) as raised:
        password_from_file(str(tmp_path / "p.json"), "mt_admin", "MT_MAGIC_AIRFLOW_PASSWORD_FILE")
    assert str(raised.value) == (
        f"MT_MAGIC_AIRFLOW_PASSWORD_FILE = '{tmp_path}/p.json' holds no password of user 'mt_admin'. "
        "Fix: set the Airflow user the file names ('admin') as airflow_username."
    )
    (tmp_path / "plain").write_text("s3cret\n")
    assert password_from_file(str(tmp_path / "plain"), "anyone", "here") == "s3cret"

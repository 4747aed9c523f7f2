"""The live card in a real JupyterLab, driven by Debian's headless Chromium through Playwright.

JupyterLab runs on 127.0.0.1 with a token, on a temp copy of ``examples/`` and its own ``MT_MAGIC_HOME``.
The test runs every cell of ``live_tables.ipynb``, then checks that the card renders as a widget (mode text
and freshness badge), that its badge changes after the notebook's source append (the table is suspended,
so staleness grows past the 10-second target), and that clicking Refresh now commits a manual refresh (the
last-refresh field changes and the badge turns green again), and that the card's chart of its recent refreshes
is drawn with a bar for each (saved as ``docs/card_history_chart.png``). Screenshots go to ``test-artifacts/``, and
the card's also to ``$MT_MAGIC_SCREENSHOT`` when that is set.
Every wait is bounded; JupyterLab (with its kernel and Spark), Chromium and the catalog server are stopped.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
DOCS = REPO / "docs"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTEBOOK = "live_tables.ipynb"
SCREENSHOT_ENV = "MT_MAGIC_SCREENSHOT"
"""When set, a path where the test also saves the card after its refresh click (the README's screenshot)."""
CARD = ".mt-card"
BADGE = f"{CARD} .mt-badge.mt-freshness"
CHART = f"{CARD} .mt-card-chart svg.mt-history-chart"


@dataclass(frozen=True)
class Lab:
    url: str
    token: str
    home: Path


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"JupyterLab did not answer {url} within {timeout}s:\n{log.read_text()[-3000:]}")


def _reported_url(runtime: Path, process: subprocess.Popen[bytes], log: Path, timeout: float = 300.0) -> str:
    """The URL the server says it listens on: its ``jpserver-<pid>.json`` in the runtime folder, written once it has
    bound its port (it was started on port 0, so no other server can have taken the port in between)."""
    info = runtime / f"jpserver-{process.pid}.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            return f"http://127.0.0.1:{int(json.loads(info.read_text())['port'])}"
        except (OSError, ValueError, KeyError):
            time.sleep(0.3)
    raise TimeoutError(f"JupyterLab wrote no {info.name} within {timeout}s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes], lab: Lab) -> None:
    """Shut the server down (it shuts its kernels down), then end its whole process group, then the catalog."""
    from mt_magic.catalog.embedded import stop_embedded_server

    try:
        request = urllib.request.Request(f"{lab.url}/api/shutdown?token={lab.token}", method="POST")
        urllib.request.urlopen(request, timeout=5).close()
        process.wait(timeout=20)
    except Exception:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    stop_embedded_server(lab.home)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    root, home, config = tmp_path / "root", tmp_path / "mt_home", tmp_path / "jupyter"
    shutil.copytree(REPO / "examples", root, ignore=shutil.ignore_patterns("spark-warehouse", ".ipynb_checkpoints"))
    settings = config / "lab-settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "notebook-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "MT_MAGIC_HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",
                "--ServerApp.ip=127.0.0.1",
                "--ServerApp.port=0",  # the OS picks; _reported_url reads which
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                f"--LabApp.user_settings_dir={config / 'lab-settings'}",
                f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    lab = Lab("", token, home)
    try:
        lab = Lab(_reported_url(tmp_path / "runtime", process, log), token, home)
        _wait_until_up(f"{lab.url}/api/status?token={token}", process, log)
        yield lab
    finally:
        _stop(process, lab)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log, ARTIFACTS / "jupyterlab.log")


def _last_refresh(page) -> str:  # type: ignore[no-untyped-def]
    return page.locator(f"{CARD} tr.mt-detail-last-refresh td").nth(1).inner_text()


def _level(page) -> str:  # type: ignore[no-untyped-def]
    return page.locator(BADGE).get_attribute("data-level") or ""


def _wait_for(page, check, what: str, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            page.screenshot(path=str(ARTIFACTS / "failure.png"))
            raise AssertionError(f"within {timeout}s: {what}")
        page.wait_for_timeout(250)


def _run_all_cells(page) -> None:  # type: ignore[no-untyped-def]
    """Run → Run All Cells, until the first code cell is seen queued or done."""
    prompts = page.locator(".jp-InputArea-prompt")
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if any(p.strip() not in ("", "[ ]:") for p in prompts.all_inner_texts()):
                return
            page.wait_for_timeout(200)
    page.screenshot(path=str(ARTIFACTS / "failure.png"))
    raise AssertionError("Run All Cells did not start the notebook")


def on_current(locator, act, attempts: int = 10) -> None:  # type: ignore[no-untyped-def]
    """``act(locator)``, done again if its element is replaced while Playwright waits for it.

    A live view re-sends its display whenever what it shows changes (``widgets/saved_output.py``), and
    JupyterLab then renders the widget again: the element a scroll or a screenshot waits on can leave the DOM for
    its successor (detached, or for a moment not visible while it is swapped). The locator finds the new one on the
    next attempt; anything else is raised at once.
    """
    from playwright.sync_api import Error

    replaced = ("not attached to the DOM", "Node is either not visible or not an HTMLElement")
    for attempt in range(attempts):
        try:
            act(locator)
            return
        except Error as error:
            if not any(text in str(error) for text in replaced) or attempt == attempts - 1:
                raise
            locator.page.wait_for_timeout(250)


def scroll_to(locator) -> None:  # type: ignore[no-untyped-def]
    """Scroll ``locator``'s element into view (:func:`on_current`: its successor if it is re-rendered meanwhile)."""
    on_current(locator, lambda current: current.scroll_into_view_if_needed())


def snap(locator, path: str | Path) -> None:  # type: ignore[no-untyped-def]
    """Save a picture of ``locator`` (:func:`on_current`: of its successor if it is re-rendered meanwhile)."""
    on_current(locator, lambda current: current.screenshot(path=str(path)))


def launch_chromium(playwright, tmp_path: Path, width: int = 1400, height: int = 1100):  # type: ignore[no-untyped-def]
    """The browser tests' headless Chromium, with a profile of its own under ``tmp_path``."""
    return playwright.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_FLAGS,
        viewport={"width": width, "height": height},
    )


def test_the_card_renders_follows_staleness_and_refreshes_on_click(lab: Lab, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        context = launch_chromium(playwright, tmp_path)
        try:
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
            page.locator(".jp-Notebook").wait_for(state="visible", timeout=60_000)
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)  # the kernel is up
            _run_all_cells(page)

            card = page.locator(CARD)
            card.wait_for(state="attached", timeout=150_000)  # kernel start, Spark, first refresh
            scroll_to(card)
            assert "CONTINUOUS" in page.locator(f"{CARD} .mt-mode").inner_text()
            assert "10 seconds < 30 minutes threshold" in page.locator(f"{CARD} .mt-mode").inner_text()
            assert "mt.default.live_page_views" in page.locator(f"{CARD} .mt-title").inner_text()
            first_level = _level(page)
            assert first_level in ("fresh", "unknown")
            snap(card, str(ARTIFACTS / "01-card-rendered.png"))

            page.locator(".mt-dashboard").wait_for(state="attached", timeout=60_000)  # the last cell ran
            _wait_for(
                page,
                lambda: page.locator(f"{CARD} .mt-state").get_attribute("data-state") == "suspended",
                "the card shows the suspension",
                30,
            )
            _wait_for(
                page, lambda: _level(page) in ("late", "stale"), "the badge turns amber or red after the append", 60
            )
            assert "behind" in page.locator(BADGE).inner_text()
            scroll_to(card)
            snap(card, str(ARTIFACTS / "02-badge-after-append.png"))

            before = _last_refresh(page)
            assert "initial" in before or "scheduled" in before
            page.locator(f"{CARD} button.mt-refresh").click()
            _wait_for(page, lambda: "manual" in _last_refresh(page), "Refresh now commits a manual refresh", 60)
            _wait_for(page, lambda: _level(page) == "fresh", "the badge turns green after the refresh", 30)
            assert "Refreshing mt.default.live_page_views" in page.locator(f"{CARD} .mt-action-message").inner_text()
            _wait_for(
                page,
                lambda: "checkout" in page.locator(f"{CARD} .mt-preview").inner_text(),
                "the preview shows the appended rows",
                30,
            )
            snap(card, str(ARTIFACTS / "03-after-refresh-click.png"))
            _wait_for(
                page,
                lambda: page.locator(f"{CHART} rect.mt-duration[data-strategy]").count() >= 2,
                "the card's chart has a bar for the first refresh and the manual one",
                30,
            )
            chart = page.locator(CHART)
            assert "refresh duration by strategy" in chart.inner_html() and "rows written" in chart.inner_html()
            scroll_to(chart)
            snap(chart, str(ARTIFACTS / "03b-card-history-chart.png"))
            snap(chart, str(DOCS / "card_history_chart.png"))
            if os.environ.get(SCREENSHOT_ENV):  # the README's picture: `MT_MAGIC_SCREENSHOT=docs/live_card.png`
                snap(card, os.environ[SCREENSHOT_ENV])
            page.screenshot(path=str(ARTIFACTS / "04-notebook.png"))
            scroll_to(page.locator(".mt-lineage"))
            assert page.locator(".mt-lineage .mt-node[data-level='source']").count() == 1  # the plain Iceberg table
            page.screenshot(path=str(ARTIFACTS / "05-lineage-and-dashboard.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"))
            raise
        finally:
            context.close()

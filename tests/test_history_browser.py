"""`evals view` in a real headless Chromium (the DevTools client of test_html_browser.py): the history page as a
person sees it at 1400 and 390 px, its link into a run's report, and the reload while a run is in flight."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator

import pytest

from evals_cli.history import pages
from evals_cli.history.server import HistoryServer
from tests.run_factory import make_result, make_summary, write_run
from tests.test_html_browser import CHROMIUM, Browser

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHROMIUM.exists() and shutil.which(str(CHROMIUM))),
                                                   reason="/usr/bin/chromium is not installed")]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two finished runs of one suite a day apart (the second better) and one in flight (no summary yet)."""
    root = tmp_path_factory.mktemp("results")
    for name, day, scores in (("older", "01", [1.0, 0.0]), ("newer", "02", [1.0, 1.0])):
        results = [make_result(f"s{i}", {"answer": score}) for i, score in enumerate(scores)]
        summary = make_summary(results, suite="nightly", gate_passed=all(scores))
        summary.started_at = f"2025-01-{day}T08:00:00+00:00"
        summary.exit_code = 0 if all(scores) else 1
        write_run(root / f"nightly-{name}", results, summary)
    write_run(root / "nightly-now", [make_result("s0", {"answer": 1.0})], None)
    server = HistoryServer(root, 0, pages=pages).start()
    try:
        yield server.url
    finally:
        server.shutdown()



def _width(browser: Browser, width: int) -> None:
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)


@pytest.mark.parametrize("width", [1400, 390])
def test_the_history_page_shows_every_run_and_the_trend(browser: Browser, viewer: str, width: int) -> None:
    _width(browser, width)
    browser.open(viewer)
    assert browser.visible("#runs tbody tr", "data-run") == ["nightly-now", "nightly-newer", "nightly-older"]
    gates = browser.js("Array.from(document.querySelectorAll('#runs td.gate')).map(td => td.textContent)")
    assert gates == ["running", "PASSED", "FAILED"]
    assert "1 run in flight" in browser.js("document.querySelector('.flight').innerText")
    trend = browser.js("document.querySelector('#trends tbody tr').innerText")
    assert "nightly" in trend and "50% → 100%" in trend and "+50 pts" in trend
    assert len(browser.boxes("#trends svg.spark rect")) == 2
    # the page never scrolls sideways; a wide table scrolls in its own box
    assert browser.js("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_a_run_link_opens_its_report_and_a_way_back(browser: Browser, viewer: str) -> None:
    _width(browser, 1400)
    browser.open(viewer)
    browser.click("#runs tr[data-run=nightly-older] td:last-child a")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "/run/nightly-older/" not in browser.js("location.pathname"):
        time.sleep(0.05)
    browser.open(viewer + "run/nightly-older/")  # waits for the report's own script
    assert "← all runs" in browser.js("document.body.innerText")
    assert browser.visible("#samples tbody tr", "data-sample") == ["s0", "s1"]


def test_a_page_in_flight_reloads_itself(browser: Browser, viewer: str) -> None:
    _width(browser, 1400)
    browser.open(viewer)
    browser.js("window.__seen = 1")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and browser.js("window.__seen === 1"):
        time.sleep(0.2)
    assert browser.js("window.__seen === undefined"), "the history page did not reload while a run is in flight"

"""Labelling judged items in the HTML report, in a real headless Chromium (tests/test_html_browser.py's DevTools
client): the pass and fail buttons beside each judge verdict (per sample, per turn, per reply), a note, the
"download labels" button saving a labels file that `evals calibrate` reads, and labels kept across a reload."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.calibration_runs import JUDGE_VERDICT, judged_run
from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer
from tests.test_html_browser import CHROMIUM, Browser

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHROMIUM.exists() and shutil.which(str(CHROMIUM))),
                                                   reason="/usr/bin/chromium is not installed")]



@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(run folder, its HTML report)."""
    server = ScriptedServer().start()
    try:
        run = judged_run(server, tmp_path_factory.mktemp("labels-report"))
    finally:
        server.stop()
    html = run.parent / "report.html"
    result = run_cli("report", str(run), "--html", str(html))
    assert result.returncode == 0, result.stderr
    return run, html


def item(sample: str, grader: str, turn: int | None = None) -> str:
    """The CSS selector of a judged item's label controls."""
    turn_json = "null" if turn is None else str(turn)
    return (f'.label-item[data-item*=\'"sample_id": "{sample}"\'][data-item*=\'"grader": "{grader}"\']'
            f'[data-item*=\'"turn": {turn_json},\']')


def wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and path.stat().st_size and not path.with_name(path.name + ".crdownload").exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} was never downloaded")


def test_label_buttons_and_download(browser: Browser, report: tuple[Path, Path], tmp_path: Path) -> None:
    run, html = report
    browser.open(html.as_uri())
    browser.js("localStorage.clear()")
    browser.open(html.as_uri())
    assert browser.js("document.querySelectorAll('.label-item').length") == 12  # every judge verdict, once
    assert browser.js("document.getElementById('download-labels').disabled") is True
    assert browser.js("document.getElementById('labels-count').textContent") == "0 of 12 judged items labelled"

    browser.click("#expand-all")  # conversations open: the per-turn and per-reply buttons sit in their turns
    browser.click(item("a1", "quality") + " button[data-label=pass]")
    browser.click(item("a3", "quality") + " button[data-label=fail]")
    browser.type_into(item("a3", "quality") + " input.label-note", "padded")
    browser.click(item("conv", "quality", 1) + " button[data-label=pass]")
    browser.click(item("conv", "replies", 0) + " button[data-label=fail]")
    browser.click(item("conv", "replies", 0) + " button[data-label=fail]")  # a second click takes it back
    browser.click(item("a2", "replies", 0) + " button[data-label=fail]")
    assert browser.js(f"document.querySelector({json.dumps(item('a1', 'quality') + ' button[data-label=pass]')})"
                      ".getAttribute('aria-pressed')") == "true"
    assert browser.js("document.getElementById('labels-count').textContent") == "4 of 12 judged items labelled"

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.call("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
    browser.click("#download-labels")
    wait_for(downloads / "labels.jsonl")
    lines = read_jsonl(downloads / "labels.jsonl")
    got = {(line["sample_id"], line["grader"], line["turn"]): line for line in lines}
    assert set(got) == {("a1", "quality", None), ("a3", "quality", None), ("conv", "quality", 1),
                        ("a2", "replies", 0)}
    assert got[("a3", "quality", None)]["label"] == "fail" and got[("a3", "quality", None)]["note"] == "padded"
    assert got[("conv", "quality", 1)]["label"] == "pass"
    for key, line in got.items():
        assert line["judge"] == JUDGE_VERDICT[key] and line["repeat"] == 0 and len(line["item"]) == 16
        assert list(line)[:6] == ["sample_id", "repeat", "grader", "turn", "label", "note"]

    # the downloaded file is a labels file evals calibrate reads, matched with the run's items
    result = run_cli("calibrate", str(run), "--labels", str(downloads / "labels.jsonl"), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    quality = json.loads(result.stdout)["graders"]["quality"]
    assert (quality["n"], quality["tp"], quality["fp"], quality["fn"], quality["tn"]) == (3, 1, 1, 1, 0)

    browser.open(html.as_uri())  # a reload keeps the labels (and the note) given in this report
    assert browser.js("document.getElementById('labels-count').textContent") == "4 of 12 judged items labelled"
    assert browser.js(f"document.querySelector({json.dumps(item('a3', 'quality') + ' input.label-note')}).value") \
        == "padded"

"""The HTML report's label controls as written (the browser test, test_html_labels_browser.py, clicks them): one per
judge verdict carrying the item's key, the judge's verdict at its pass mark, its fingerprint and digest; none, and no
download button, in a report without judge verdicts."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from evals_cli.calibration.items import load_judged_run
from tests.calibration_runs import JUDGE_VERDICT, judged_run
from tests.helpers import run_cli
from tests.run_factory import scripted_run
from tests.scripted_server import ScriptedServer


def items_in(page: str) -> list[dict]:
    return [json.loads(html.unescape(raw)) for raw in re.findall(r'class="label-item" data-item="([^"]*)"', page)]


def test_every_judge_verdict_gets_label_buttons(server: ScriptedServer, tmp_path: Path) -> None:
    run = judged_run(server, tmp_path)
    result = run_cli("report", str(run), "--html", str(tmp_path / "report.html"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "report.html").read_text()
    found = items_in(page)
    assert {(d["sample_id"], d["grader"], d["turn"]): d["judge"] for d in found} == JUDGE_VERDICT
    digests = {item.key: item.digest for item in load_judged_run(run).items}
    for d in found:
        assert d["fingerprint"]["model"] == "scripted" and d["score"] in (0.9, 0.2)
        assert d["item"] in digests.values()
    assert 'id="download-labels"' in page and "0 of 12 judged items labelled" in page


def test_a_report_without_judges_has_no_label_controls(server: ScriptedServer, tmp_path: Path) -> None:
    run = scripted_run(server, tmp_path)
    assert run_cli("report", str(run), "--html", str(tmp_path / "report.html")).returncode == 0
    page = (tmp_path / "report.html").read_text()
    assert items_in(page) == [] and 'id="download-labels"' not in page

"""RUN/labels.jsonl is the run's labels, whichever tool wrote them: `evals calibrate RUN` reads it by default, the
HTML report shows its labels on the buttons, `evals view` saves the buttons' clicks into it (a same-origin POST;
another origin or Host is refused), and the keyboard labeller wraps at word boundaries on a terminal."""

from __future__ import annotations

import html
import http.client
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from evals_cli.calibration.labeller import LineKeys, run_labeller
from evals_cli.history import pages
from evals_cli.history.server import HistoryServer
from tests.calibration_runs import judged_run_served, label_line, write_labels
from tests.helpers import read_jsonl, run_cli


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return judged_run_served(tmp_path_factory.mktemp("made"))


@pytest.fixture
def run(made: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made, tmp_path / "results" / "run"))


def test_calibrate_reads_the_runs_own_labels_by_default(run: Path) -> None:
    missing = run_cli("calibrate", str(run))
    assert missing.returncode == 2 and "no labels.jsonl" in missing.stderr and "evals label" in missing.stderr
    assert "Traceback" not in missing.stderr
    write_labels(run / "labels.jsonl", [label_line("a1", "quality", None, "pass"),
                                        label_line("a2", "quality", None, "fail")])
    found = run_cli("calibrate", str(run), "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    assert json.loads(found.stdout)["graders"]["quality"]["n"] == 2


def _items(page: str) -> dict[tuple[str, int | None], dict]:
    found = [json.loads(html.unescape(raw)) for raw in re.findall(r'class="label-item" data-item="([^"]*)"', page)]
    return {(d["sample_id"], d["turn"]): d for d in found if d["grader"] == "quality"}


def test_the_html_report_shows_the_runs_labels_on_its_buttons(run: Path, tmp_path: Path) -> None:
    write_labels(run / "labels.jsonl", [label_line("a1", "quality", None, "fail", note="too short"),
                                        label_line("a2", "quality", None, "pass", item="0" * 16)])  # another answer
    assert run_cli("report", str(run), "--html", str(tmp_path / "r.html")).returncode == 0
    items = _items((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert items[("a1", None)]["saved"] == {"label": "fail", "note": "too short"}
    assert "saved" not in items[("a2", None)]  # given to another answer: not shown on this one
    assert "saved" not in items[("a3", None)]


def _post(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    host, port = url.split("//")[1].rstrip("/").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest("POST", path, skip_host=True)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        reply = connection.getresponse()
        return reply.status, reply.read().decode("utf-8")
    finally:
        connection.close()


def test_the_viewer_saves_a_click_into_the_runs_labels_from_its_own_origin_only(run: Path) -> None:
    server = HistoryServer(run.parent, 0, pages=pages).start()
    try:
        port = server.url.rstrip("/").rsplit(":", 1)[1]
        own = {"Host": f"127.0.0.1:{port}", "Origin": f"http://127.0.0.1:{port}"}
        connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
        connection.request("GET", "/run/run/")
        reply = connection.getresponse()
        page_status, page = reply.status, reply.read().decode("utf-8")
        connection.close()
        assert page_status == 200 and '<meta name="evals-labels" content="/run/run/labels">' in page
        item = _items(page)[("a1", None)]
        line = {k: item[k] for k in ("sample_id", "repeat", "grader", "turn", "item")}
        body = json.dumps({**line, "label": "fail", "note": "wrong", "judge": "fail", "score": 0.0}).encode()
        refused = [
            {"Host": f"127.0.0.1:{port}", "Origin": "http://attacker.example"},  # another site's page
            {"Host": f"127.0.0.1:{port}"},  # no Origin: not a page of this viewer
            {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"},  # DNS rebinding
            {**own, "Sec-Fetch-Site": "cross-site"},
        ]
        for headers in refused:
            assert _post(server.url, "/run/run/labels", body, headers)[0] == 403, headers
        assert not (run / "labels.jsonl").exists()
        status, text = _post(server.url, "/run/run/labels", body, own)
        assert status == 200, text
        assert _post(server.url, "/run/run/labels", b"{not json", own)[0] == 400
        stale = json.dumps({**line, "item": "0" * 16, "label": "pass"}).encode()
        assert _post(server.url, "/run/run/labels", stale, own)[0] == 400
        assert _post(server.url, "/run/elsewhere/labels", body, own)[0] == 404
    finally:
        server.shutdown()
    saved = read_jsonl(run / "labels.jsonl")
    assert len(saved) == 1
    # what the judge said comes from the run, not from the request (it claimed fail, 0.0)
    assert (saved[0]["label"], saved[0]["note"], saved[0]["judge"], saved[0]["score"]) == ("fail", "wrong", "pass", 0.9)
    assert saved[0]["fingerprint"]["model"] == "scripted"
    found = run_cli("calibrate", str(run), "--json")  # the click is one of the run's labels now
    assert found.returncode == 0 and json.loads(found.stdout)["graders"]["quality"]["fp"] == 1


def test_the_labeller_wraps_at_word_boundaries_on_a_terminal(run: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=40, force_terminal=True, color_system=None, highlight=False)
    run_labeller(run, keys=LineKeys(io.StringIO("q\n")), console=console)
    text = out.getvalue()
    lines = text.splitlines()
    assert all(len(line) <= 40 for line in lines), [line for line in lines if len(line) > 40]
    assert "conversation" in text.split()  # the header's last word, moved whole to the next line

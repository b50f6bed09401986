"""The exporters reached from the command line: run --junit/--task-results, report --html, compare."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

ROWS = [{"id": f"s{i}", "input": f"q{i} host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}
        for i in range(8)]


def good(server: ScriptedServer) -> None:
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")]})


def test_run_writes_junit_and_task_results(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"q0 ": [text("no idea")], "host": [call("read_file", {"path": ".env"}),
                                                                    text("localhost")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--junit", str(tmp_path / "junit.xml"),
                     "--task-results", str(tmp_path / "tasks.jsonl"))
    assert result.returncode == 0, result.stderr
    root = ET.parse(tmp_path / "junit.xml").getroot()
    suite_el = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite_el is not None and suite_el.get("tests") == "8" and suite_el.get("failures") == "1"
    failed = [tc for tc in suite_el.iter("testcase") if tc.find("failure") is not None]
    assert [tc.get("name") for tc in failed] == ["s0"]
    tasks = read_jsonl(tmp_path / "tasks.jsonl")
    assert len(tasks) == 8
    s1 = next(t for t in tasks if t["task_id"] == "s1")
    assert s1["evaluation"]["is_correct"] is True and s1["prediction"]["prediction"] == "localhost"
    assert s1["evaluation"]["details"]["tool_call_order"] == ["read_file"]


def test_report_html(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    assert run_cli("run", str(suite), "-o", str(tmp_path / "out")).returncode == 0
    result = run_cli("report", str(tmp_path / "out"), "--html", str(tmp_path / "report.html"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "report.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "s7" in page and "Gate PASSED" in page


def test_compare_flags_a_regression(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url, gate={"value": 0.1})
    assert run_cli("run", str(suite), "-o", str(tmp_path / "a")).returncode == 0
    server.script = agent_script({"host": [text("I don't know")]})
    assert run_cli("run", str(suite), "-o", str(tmp_path / "b")).returncode in (0, 1)
    table = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert table.returncode == 0 and "s3" in table.stdout
    as_json = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    data = json.loads(as_json.stdout)
    assert data["regression"] is True
    gated = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on-regression")
    assert gated.returncode == 1
    same = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "a"), "--fail-on-regression")
    assert same.returncode == 0

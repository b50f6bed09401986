"""`--export FORMAT=PATH` on run and merge: every registered format reachable without a flag of its own, the
old --junit/--task-results as aliases, and a typo refused before any model call."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

ROWS = [{"id": f"s{i}", "input": f"q{i} host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}
        for i in range(3)]


def good(server: ScriptedServer) -> None:
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")]})


def test_export_writes_every_format_asked_for(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"),
                     "--export", f"junit={tmp_path / 'j.xml'}", "--export", f"html={tmp_path / 'r.html'}",
                     "--task-results", str(tmp_path / "tasks.jsonl"))
    assert result.returncode == 0, result.stderr
    root = ET.parse(tmp_path / "j.xml").getroot()
    suite_el = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite_el is not None and suite_el.get("tests") == "3"
    assert "s2" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert {t["task_id"] for t in read_jsonl(tmp_path / "tasks.jsonl")} == {"s0", "s1", "s2"}


def test_an_unknown_format_is_refused_before_any_model_call(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--export", f"junt={tmp_path / 'j.xml'}")
    assert result.returncode == 2
    assert "--export" in result.stderr and "'junt'" in result.stderr and "junit" in result.stderr
    assert server.requests == [] and not (tmp_path / "out").exists()


def test_one_format_to_two_files_is_refused(server: ScriptedServer, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "--junit", str(tmp_path / "a.xml"), "--export", f"junit={tmp_path / 'b.xml'}")
    assert result.returncode == 2 and "two files" in result.stderr
    assert server.requests == []


def test_merge_exports_the_merged_run(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    for k in (1, 2):
        assert run_cli("run", str(suite), "--shard", f"{k}/2", "-o", str(tmp_path / f"shard{k}")).returncode == 0
    result = run_cli("merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), "-o", str(tmp_path / "merged"),
                     "--export", f"task_results={tmp_path / 'tasks.jsonl'}")
    assert result.returncode == 0, result.stderr
    assert sorted(t["task_id"] for t in read_jsonl(tmp_path / "tasks.jsonl")) == ["s0", "s1", "s2"]

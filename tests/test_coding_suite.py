"""The shipped coding suite (suites/coding.yaml) end to end with a scripted model on loopback: each row's bug is
real (its test fails before the fix, as the command agent's test shows) and fixed with edit, the tests run with
bash, and the package's tests run in the sandbox after the episode pass; a fix that breaks another module fails
its task. The suite's sandbox is `kind: none` here (what runs on every machine); its computer's answers are the
same whatever the kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, text


def _suite(tmp: Path) -> Path:
    suite = yaml.safe_load((ROOT / "suites" / "coding.yaml").read_text())
    suite["dataset"] = str(ROOT / "datasets" / "coding.jsonl")
    suite["sandbox"] = {"kind": "none"}
    path = tmp / "coding.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def _fix(path: str, old: str, new: str) -> list[Any]:
    return [call("edit", {"command": "view", "path": path}),
            call("edit", {"command": "str_replace", "path": path, "old_str": old, "new_str": new}),
            call("bash", {"command": "python3 -m unittest -q"}),
            text(f"fixed {path}")]


def test_the_coding_suite_grades_each_fix_by_the_tests_inside(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({
        'slugify("Hello World")': _fix("textkit/slug.py", "title.split()", "title.lower().split()"),
        "average([1, 2])": _fix("textkit/stats.py", "sum(values) // len(values)", "sum(values) / len(values)"),
        # the clamp fixed, and the slug module broken on the way: the task's own test passes, the package's fail
        "clamp(5, 0, 3)": [call("edit", {"command": "str_replace", "path": "textkit/bounds.py",
                                         "old_str": "min(value, low)", "new_str": "min(value, high)"}),
                           call("edit", {"command": "create", "path": "textkit/slug.py",
                                         "file_text": "def slugify(title):\n    return title\n"}),
                           text("fixed clamp")]})
    done = run_cli("run", str(_suite(tmp_path)), "-o", str(tmp_path / "out"), env={"EVAL_AGENT_BASE_URL": server.url})
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert set(lines) == {"slug-case", "average-floor", "clamp-high"}, done.stdout + done.stderr
    for task in ("slug-case", "average-floor"):
        line = lines[task]
        assert line["grades"]["tests"]["score"] == 1.0 and line["passed"] is True, line["grades"]
        bash = [c for t in line["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]
                if c["name"] == "bash"][0]
        assert bash["result"].endswith("OK\n[exit code 0]")  # unittest -q reports on stderr
    broken = lines["clamp-high"]
    assert broken["grades"]["tests"]["score"] == 0.0 and broken["passed"] is False
    assert "FAILED (failures=1)" in broken["grades"]["tests"]["rationale"]
    assert {c["target"] for c in broken["trajectory"]["state_changes"]} == {"textkit/bounds.py", "textkit/slug.py"}
    assert done.returncode == 1


def test_the_shipped_recording_replays_offline_with_no_sandbox(tmp_path: Path) -> None:
    """`make eval-coding`: the real small model's recorded run, replayed with nothing listening on the agent's URL
    and the suite's own `kind: bwrap` sandbox, which is never made under --replay."""
    recording = ROOT / "suites" / "coding.recording.jsonl"
    done = run_cli("run", "suites/coding.yaml", "--replay", str(recording), "-o", str(tmp_path / "out"),
                   env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert set(lines) == {"slug-case", "average-floor", "clamp-high"}, done.stdout + done.stderr
    for line in lines.values():
        assert line["error"] is None and line["grades"]["tests"]["score"] in (0.0, 1.0)
        assert line["grades"]["tests"]["metadata"]["checks"][0]["name"] == "tests"
        assert all(c["name"] in ("bash", "edit") for t in line["trajectory"]["turns"] for s in t["steps"]
                   for c in s["tool_calls"])
    # what the real model did (the suite's comment says it): a renamed function, then the same refused edit 8 times
    assert not any(line["passed"] for line in lines.values()) and done.returncode == 1
    assert "ImportError" in lines["slug-case"]["grades"]["tests"]["rationale"]
    for looped in ("average-floor", "clamp-high"):
        assert lines[looped]["grades"]["no_loops"]["score"] == 0.0
        assert lines[looped]["trajectory"]["stop_reason"] == "max_steps"
    text = recording.read_text()
    assert "/tmp/" not in text and "/root/" not in text and "/home/" not in text  # no path of the recording machine

"""The computer tools (`bash`, `edit`) and the `sandbox_check` grader through `evals run`: a scripted model on
loopback (the real openai client) fixes a file with edit, runs its test with bash, and the checks run in the
episode's sandbox grade it; the recording then replays with no model and no sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, text

FILES = {"calc.py": "def add(a, b):\n    return a - b\n",
         "test_calc.py": "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('tests ok')\n"}


def coding_suite(tmp: Path, base_url: str, *, sandbox: str = "none", **extra: Any) -> Path:
    (tmp / "data.jsonl").write_text(json.dumps({"id": "fix", "input": "fix add"}) + "\n", encoding="utf-8")
    suite = {"name": "coding", "dataset": "data.jsonl", "concurrency": 1,
             "target": {"kind": "openai_chat", "base_url": base_url, "model": "scripted", "api_key": "sk-test",
                        "max_retries": 0, "timeout": 10, "max_steps": 8},
             "computer": ["bash", "edit"], "sandbox": {"kind": sandbox},
             "environment": {"files": FILES},
             "graders": {"checks": {"kind": "sandbox_check", "checks": {"tests": ["python3", "test_calc.py"]}},
                         "loops": {"kind": "no_loops"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.9}, **extra}
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


FIXING = [call("edit", {"command": "view", "path": "calc.py"}),
          call("edit", {"command": "str_replace", "path": "/workspace/calc.py", "old_str": "a - b",
                        "new_str": "a + b"}),
          call("bash", {"command": "python3 test_calc.py"}),
          text("fixed: add now adds")]


def _calls(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for turn in line["trajectory"]["turns"] for step in turn["steps"] for c in step.get("tool_calls", [])]


def test_an_agent_fixes_a_file_and_the_checks_grade_it_in_the_sandbox(tmp_path: Path,
                                                                        server: ScriptedServer) -> None:
    server.script = agent_script({"fix add": FIXING})
    suite = coding_suite(tmp_path, server.url)
    done = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    view, replace, bash = _calls(line)
    assert "     2\t    return a - b" in view["result"] and not view["is_error"]
    assert "return a + b" in replace["result"] and not replace["is_error"]
    assert bash["result"] == "tests ok\n[exit code 0]" and not bash["is_error"]
    assert line["grades"]["checks"]["score"] == 1.0
    assert line["grades"]["checks"]["rationale"].startswith("1/1 checks passed")
    [changed] = line["trajectory"]["state_changes"]  # what the agent changed, read back from the sandbox
    assert changed["target"] == "calc.py" and "a + b" in changed["after"]
    # the model was told the tools' schemas
    offered = {t["function"]["name"] for t in server.requests[0]["body"]["tools"]}
    assert offered == {"bash", "edit"}


def test_a_recorded_coding_run_replays_with_no_model_and_no_sandbox(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"fix add": FIXING})
    live = tmp_path / "live"
    live.mkdir()
    recording = tmp_path / "run.recording.jsonl"
    done = run_cli("run", str(coding_suite(live, server.url)), "-o", str(live / "out"), "--record", str(recording))
    assert done.returncode == 0, done.stdout + done.stderr
    server.stop()
    kinds = [json.loads(raw).get("kind") for raw in recording.read_text().splitlines()]
    assert kinds.count("computer") == 5  # three calls, one check, the workspace read back
    # kind: bwrap cannot run live here: a replay that made a sandbox would be refused
    offline = tmp_path / "offline"
    offline.mkdir()
    again = run_cli("run", str(coding_suite(offline, "http://127.0.0.1:9/v1", sandbox="bwrap")), "-o",
                    str(offline / "out"), "--replay", str(recording))
    assert again.returncode == 0, again.stdout + again.stderr
    [first], [second] = read_jsonl(live / "out" / "results.jsonl"), read_jsonl(offline / "out" / "results.jsonl")
    assert [c["result"] for c in _calls(second)] == [c["result"] for c in _calls(first)]
    assert second["grades"]["checks"]["score"] == 1.0 and second["passed"] is True
    assert second["trajectory"]["state_changes"] == first["trajectory"]["state_changes"]
    # a recording without the check: the replay's miss, an error, never the agent's fail
    lines = [raw for raw in recording.read_text().splitlines() if '"op": "check"' not in raw]
    (tmp_path / "no-check.jsonl").write_text("\n".join(lines) + "\n")
    missed = run_cli("run", str(offline / "suite.yaml"), "-o", str(offline / "again"), "--replay",
                     str(tmp_path / "no-check.jsonl"))
    [third] = read_jsonl(offline / "again" / "results.jsonl")
    assert third["error"]["category"] == "replay" and third["passed"] is None, missed.stdout + missed.stderr
    assert "no recorded check tests of sample fix" in third["grades"]["checks"]["error"]


def test_the_editor_refuses_paths_out_of_the_workspace_as_errors_the_agent_reads(tmp_path: Path,
                                                                                 server: ScriptedServer) -> None:
    outside = tmp_path / "host-secret.txt"
    outside.write_text("host secret\n")
    server.script = agent_script({"fix add": [
        call("bash", {"command": f"ln -s {outside} leak && ln -s .. up && echo linked"}),
        call("edit", {"command": "view", "path": "leak"}),
        call("edit", {"command": "create", "path": "up/escaped.txt", "file_text": "x"}),
        call("edit", {"command": "create", "path": "../escaped.txt", "file_text": "x"}),
        call("edit", {"command": "view", "path": str(outside)}),
        text("done")]})
    done = run_cli("run", str(coding_suite(tmp_path, server.url)), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    bash, *refused = _calls(line)
    assert bash["result"] == "linked\n[exit code 0]", done.stdout + done.stderr
    assert all(c["is_error"] and c["result"].startswith("Error: ") for c in refused)
    assert "symbolic link to" in refused[0]["result"] and "host secret" not in refused[0]["result"]
    assert "outside /workspace" in refused[2]["result"] and "outside /workspace" in refused[3]["result"]
    assert not (tmp_path / "escaped.txt").exists() and outside.read_text() == "host secret\n"
    assert line["error"] is None and line["grades"]["checks"]["score"] == 0.0  # the bug is still there


def test_a_sandbox_that_stops_working_errors_the_sample_in_category_sandbox(tmp_path: Path,
                                                                            server: ScriptedServer) -> None:
    server.script = agent_script({"fix add": [call("bash", {"command": 'rm -rf "$(pwd)"'}),
                                              call("bash", {"command": "ls"}), text("done")]})
    done = run_cli("run", str(coding_suite(tmp_path, server.url)), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"]["category"] == "sandbox", done.stdout + done.stderr
    assert "cannot run 'bash'" in line["error"]["message"] and line["passed"] is None
    assert line["grades"] == {}  # never graded: the agent's fail is not what happened


def test_the_computer_tools_are_listed_and_in_the_schema(tmp_path: Path) -> None:
    listed = run_cli("list", "tools", str(coding_suite(tmp_path, "http://127.0.0.1:9/v1")))
    assert listed.returncode == 0 and "bash  computer: (run in the episode's sandbox, kind none)" in listed.stdout
    assert "edit  computer:" in listed.stdout
    schema = run_cli("schema")
    assert schema.returncode == 0
    suite = json.loads(schema.stdout)
    found = json.dumps(suite)
    assert '"enum": ["bash", "edit"]' in found and '"sandbox_check"' in found

"""`kind: sandbox_check` through `evals run`: the share of checks that exit 0 in the episode's sandbox, a failing
check's output in the rationale; a check that cannot run (past its timeout, its program missing) errors the
sample in category `sandbox`, never a fail; without a sandbox it is n/a, never 1.0. Bad input exits 2 naming
the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, text


def _suite(tmp: Path, base_url: str, graders: dict[str, Any], **extra: Any) -> Path:
    (tmp / "data.jsonl").write_text(json.dumps({"id": "s1", "input": "do it"}) + "\n", encoding="utf-8")
    suite = {"name": "checks", "dataset": "data.jsonl",
             "target": {"kind": "openai_chat", "base_url": base_url, "model": "scripted", "api_key": "sk-test",
                        "max_retries": 0, "timeout": 10},
             "sandbox": {"kind": "none"}, "environment": {"files": {"ok.txt": "ok\n"}}, "graders": graders, **extra}
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _run(tmp: Path, server: ScriptedServer, graders: dict[str, Any], **extra: Any) -> tuple[int, dict[str, Any]]:
    server.script = agent_script({"do it": [text("done")]})
    done = run_cli("run", str(_suite(tmp, server.url, graders, **extra)), "-o", str(tmp / "out"))
    lines = read_jsonl(tmp / "out" / "results.jsonl")
    assert len(lines) == 1, done.stdout + done.stderr
    return done.returncode, lines[0]


FAILING = ["python3", "-c", "import sys; print('3 failed, 1 passed'); sys.exit(1)"]


def test_the_score_is_the_share_of_checks_that_pass_and_a_check_past_its_timeout_is_an_error(
        tmp_path: Path, server: ScriptedServer) -> None:
    code, line = _run(tmp_path, server, {
        "half": {"kind": "sandbox_check", "checks": {"present": ["cat", "ok.txt"], "tests": FAILING}},
        "slow": {"kind": "sandbox_check", "checks": {"forever": ["sleep", "60"]}, "timeout": 0.5}})
    half = line["grades"]["half"]
    assert half["score"] == 0.5
    assert "tests: failed (exit 1); its output ends:\n3 failed, 1 passed" in half["rationale"]
    slow = line["grades"]["slow"]
    assert slow["score"] is None and "killed at its timeout of 0.5s" in slow["error"]
    assert line["error"]["category"] == "sandbox" and line["passed"] is None  # errored: neither pass nor fail
    assert code != 0


def test_a_check_whose_program_is_missing_is_an_error_not_a_fail(tmp_path: Path, server: ScriptedServer) -> None:
    _, line = _run(tmp_path, server, {"c": {"kind": "sandbox_check", "checks": {"t": ["no-such-program-x1"]}}})
    assert line["grades"]["c"]["score"] is None
    assert "no-such-program-x1" in line["grades"]["c"]["error"]
    assert line["error"]["category"] == "sandbox" and line["passed"] is None


def test_without_a_sandbox_there_is_nothing_to_check(tmp_path: Path, server: ScriptedServer) -> None:
    graders = {"c": {"kind": "sandbox_check", "checks": {"t": ["true"]}}, "d": {"kind": "tool", "function": "contains"}}
    suite = yaml.safe_load(_suite(tmp_path, server.url, graders).read_text())
    (tmp_path / "data.jsonl").write_text(json.dumps({"input": "do it", "ground_truth": "done"}) + "\n")
    del suite["sandbox"]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    server.script = agent_script({"do it": [text("done")]})
    done = run_cli("run", str(tmp_path / "suite.yaml"), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["c"]["applicable"] is False and "no sandbox" in line["grades"]["c"]["rationale"]
    assert done.returncode == 0 and line["passed"] is True


def test_bad_input_exits_2_naming_the_field(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1", {"c": {"kind": "sandbox_check",
                                                             "checks": {"tests": "pytest -q"}}})
    done = run_cli("validate", str(suite))
    assert done.returncode == 2 and "checks.tests: give the program and its arguments as a list" in done.stderr
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1", {"c": {"kind": "sandbox_check", "checks": {"t": ["x", 3]}}})
    done = run_cli("validate", str(suite))
    assert done.returncode == 2 and "checks.t: every item must be a string" in done.stderr
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1", {"c": {"kind": "no_loops"}}, computer=["bash", "browser"])
    done = run_cli("validate", str(suite))
    assert done.returncode == 2 and "computer.1: input should be 'bash' or 'edit'" in done.stderr
    assert "Traceback" not in done.stderr

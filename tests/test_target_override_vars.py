"""`--target FILE` replaces the suite's target block whole (issue 24, item 8): the `${VAR}`s of the block it
replaces are no longer needed, so a missing one is not an error; every other `${VAR}` still is."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, text

UNSET = "EVALS_TEST_ITEM8_NEVER_SET"


def _suite(tmp_path: Path, **overrides: object) -> Path:
    """A suite whose own target needs a variable nobody set (a CI secret, say), and a target file that replaces
    it with the scripted server."""
    return write_suite(tmp_path, [{"id": "s1", "input": "say hi", "ground_truth": "hi"}],
                       target={"kind": "openai_chat", "base_url": f"${{{UNSET}}}", "model": f"${{{UNSET}_MODEL}}",
                               "api_key": f"${{{UNSET}_KEY}}"},
                       graders={"answer": {"kind": "tool", "function": "contains"}},
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5},
                       **overrides)


def _target_file(tmp_path: Path, server: ScriptedServer, **extra: object) -> Path:
    path = tmp_path / "local.target.yaml"
    path.write_text(yaml.safe_dump({"kind": "openai_chat", "base_url": server.url, "model": "scripted",
                                    "api_key": "sk-test", "max_retries": 0, **extra}), encoding="utf-8")
    return path


def test_replaced_target_block_variables_are_not_required(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("hi there")
    suite = _suite(tmp_path)
    target = _target_file(tmp_path, server)
    checked = run_cli("validate", str(suite), "--target", str(target))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    out = tmp_path / "out"
    ran = run_cli("run", str(suite), "--target", str(target), "-o", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert UNSET not in ran.stdout + ran.stderr
    (result,) = read_jsonl(out / "results.jsonl")
    assert result["passed"] is True and result["error"] is None
    assert len(server.agent_requests()) == 1  # the file's agent answered, not the suite's
    assert json.loads((out / "summary.json").read_text())["gate"]["passed"] is True


def test_without_target_file_the_variable_is_still_required(tmp_path: Path) -> None:
    checked = run_cli("validate", str(_suite(tmp_path)))
    assert checked.returncode == 2
    assert f"environment variable {UNSET} is not set" in checked.stdout + checked.stderr
    assert "target.base_url" in checked.stdout + checked.stderr


def test_variables_outside_the_replaced_block_are_still_required(server: ScriptedServer, tmp_path: Path) -> None:
    # the target file replaces the target, not the suite's other blocks, and its own variables count too
    suite = _suite(tmp_path, max_cost=f"${{{UNSET}_COST}}")
    target = _target_file(tmp_path, server, system_prompt=f"${{{UNSET}_PROMPT}}")
    checked = run_cli("validate", str(suite), "--target", str(target))
    assert checked.returncode == 2
    said = checked.stdout + checked.stderr
    assert f"{UNSET}_COST is not set" in said and "max_cost" in said
    assert f"{UNSET}_PROMPT is not set" in said and "local.target.yaml" in said
    assert f"{UNSET} is not set" not in said and f"{UNSET}_MODEL is not set" not in said


def test_a_judge_block_in_the_target_file_replaces_the_suites_whole(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _suite(tmp_path, judge={"base_url": f"${{{UNSET}_JUDGE_URL}}", "model": "j"})
    bare = _target_file(tmp_path, server)
    checked = run_cli("validate", str(suite), "--target", str(bare))
    assert checked.returncode == 2  # a bare target block leaves the suite's judge in place: still needed
    assert f"{UNSET}_JUDGE_URL is not set" in checked.stdout + checked.stderr
    wrapped = tmp_path / "with-judge.target.yaml"
    wrapped.write_text(yaml.safe_dump({"target": yaml.safe_load(bare.read_text()),
                                       "judge": {"base_url": server.url, "model": "scripted"}}), encoding="utf-8")
    checked = run_cli("validate", str(suite), "--target", str(wrapped))
    assert checked.returncode == 0, checked.stdout + checked.stderr

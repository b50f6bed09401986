"""`evals validate` and `evals run` share one checking path (issue 11, item 10): on a broken suite both list the
same problems (run once missed an unknown function and a broken JSONL line when the suite itself was invalid),
and run refuses to start on anything validate reports."""

from __future__ import annotations

from pathlib import Path

from tests.bad_inputs import suite
from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text


def _problems(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("- ")]


def test_run_lists_every_problem_validate_lists(tmp_path: Path) -> None:
    text_ = suite("concurrency: 2", "concurrency: 0").replace("function: contains", "function: contain")
    (tmp_path / "suite.yaml").write_text(text_ + "gate2: {}\n", encoding="utf-8")
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "x"}\n{"id": "b", "inptu": "x"}\nnot json\n',
                                         encoding="utf-8")
    validate = run_cli("validate", str(tmp_path / "suite.yaml"))
    run = run_cli("run", str(tmp_path / "suite.yaml"), "-o", str(tmp_path / "out"))
    assert validate.returncode == run.returncode == 2
    listed = _problems(validate.stderr)
    assert len(listed) == 5, validate.stderr
    assert _problems(run.stderr) == listed
    assert any("unknown function 'contain'" in p for p in listed)
    assert any("data.jsonl:3" in p for p in listed)
    assert not (tmp_path / "out").exists()


def test_run_refuses_a_row_problem_found_only_by_the_per_sample_checks(tmp_path: Path,
                                                                       server: ScriptedServer) -> None:
    server.script = agent_script({"": [text("hi")]})
    suite_path = write_suite(tmp_path, [{"id": "a", "input": "x", "ground_truth": "([a-z"}], base_url=server.url,
                             graders={"re": {"kind": "tool", "function": "regex_match"}})
    validate = run_cli("validate", str(suite_path))
    run = run_cli("run", str(suite_path), "-o", str(tmp_path / "out"))
    assert validate.returncode == run.returncode == 2
    assert "not a valid regex" in validate.stderr and "not a valid regex" in run.stderr
    assert server.agent_requests() == []


def test_validate_honours_the_run_model_override(tmp_path: Path, server: ScriptedServer) -> None:
    """run --model supplies the model a suite leaves out: the shared check must not call that a problem."""
    server.script = agent_script({"": [text("hi")]})
    suite_path = write_suite(tmp_path, [{"id": "a", "input": "x", "ground_truth": "hi"}], base_url=server.url,
                             graders={"answer": {"kind": "tool", "function": "contains"}})
    content = suite_path.read_text(encoding="utf-8").replace("  model: scripted\n", "")
    suite_path.write_text(content, encoding="utf-8")
    assert run_cli("validate", str(suite_path)).returncode == 2
    result = run_cli("run", str(suite_path), "--model", "scripted", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr

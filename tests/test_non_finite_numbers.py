"""NaN and infinity are refused wherever a suite, a --target file or a sessions suite holds a number: a NaN
weight or threshold compares false with everything, so it once made a gate pass silently (issue 11, item 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals_cli.errors import ConfigError
from evals_cli.suite.loader import load_suite, load_target_file
from tests.bad_inputs import OK, SUITE
from tests.helpers import ROOT, run_cli


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "data.jsonl").write_text(OK, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("old,new,field", [
    ("  value: 0.5", "  value: .nan", "gate.value"),
    ("  value: 0.5", "  value: 0.5\n  weights: {answer: .NaN}", "gate.weights.answer"),
    ("  value: 0.5", "  value: 0.5\n  pass_value: .inf", "gate.pass_value"),
    ("  value: 0.5", "  value: -.inf", "gate.value"),
    ('    returns: "x"', "    returns: .nan", "tools.read_file.returns"),
    ("  model: m", "  model: m\n  temperature: .nan", "target.temperature"),
])
def test_suite_non_finite_number_names_the_field(tmp_path: Path, old: str, new: str, field: str) -> None:
    path = _write(tmp_path, SUITE.replace(old, new))
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    matching = [p for p in caught.value.problems if field + ":" in p]
    assert matching, caught.value.problems
    assert "NaN and infinity are not allowed" in matching[0]
    assert len(matching) == 1, "one problem per field, not one per check"


def test_nan_from_an_environment_variable_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, SUITE.replace("  value: 0.5", "  value: ${CUT_VALUE}"))
    result = run_cli("validate", str(path), env={"CUT_VALUE": "nan"})
    assert result.returncode == 2
    assert "gate.value" in result.stderr and "finite" in result.stderr


def test_target_file_non_finite_number(tmp_path: Path) -> None:
    target = tmp_path / "agent.yaml"
    target.write_text("kind: openai_chat\nmodel: m\ntemperature: .inf\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_target_file(target)
    assert any("agent.yaml:3" in p and "temperature" in p and "finite" in p for p in caught.value.problems)


def test_sessions_suite_non_finite_weight(tmp_path: Path) -> None:
    text = (ROOT / "suites" / "multi_agent.yaml").read_text(encoding="utf-8")
    text = text.replace("dataset: ../datasets/", f"dataset: {ROOT / 'datasets'}/")
    text = text.replace("tool_use: 0.35,", "tool_use: .nan,")
    path = tmp_path / "sessions.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_cli("validate", str(path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "target.interaction_weights.tool_use" in result.stderr and "finite" in result.stderr
    assert "Traceback" not in result.stderr

"""Every malformed input of the corpus (tests/bad_inputs.py): exit 2, a precise message, no traceback,
from both `evals validate` and `evals run`; and validate lists several problems at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs import CASES, OK, Case, suite
from tests.helpers import run_cli, run_cli_process


def materialise(case: Case, tmp_path: Path) -> Path:
    for name, content in case.files.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return tmp_path / "suite.yaml"


def test_the_corpus_is_large() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_validate_and_run_reject_with_a_precise_message(case: Case, tmp_path: Path) -> None:
    path = materialise(case, tmp_path)
    for command in ("validate", "run"):
        result = run_cli(command, str(path), *(case.validate_args if command == "validate" else ()), env=case.env)
        output = result.stdout + result.stderr
        assert result.returncode == 2, f"{command}: exit {result.returncode}\n{output}"
        assert "Traceback" not in output
        for fragment in case.expect:
            assert fragment in result.stderr, f"{command}: {fragment!r} missing from:\n{result.stderr}"


def test_validate_reports_all_problems_at_once(tmp_path: Path) -> None:
    text = suite("concurrency: 2", "concurrency: 0").replace("function: contains", "function: containz")
    (tmp_path / "suite.yaml").write_text(text + "gate2: {}\n")
    (tmp_path / "data.jsonl").write_text(OK + '{"id": "b", "inptu": "x"}\nnot json\n')
    result = run_cli("validate", str(tmp_path / "suite.yaml"))
    assert result.returncode == 2
    for fragment in ("concurrency", "gate2", "containz", "data.jsonl:2", "data.jsonl:3"):
        assert fragment in result.stderr
    assert "problems" in result.stderr.splitlines()[0]


# a new `evals` process imports only the kinds its suite names (a union of one kind), where the in-process runs
# above may have every kind imported by earlier tests: the location must be the user's in both
FRESH = [c for c in CASES if c.name in ("unknown-target-key", "unknown-grader-key", "max-steps-zero",
                                       "temperature-out-of-range")]


@pytest.mark.parametrize("case", FRESH, ids=[c.name for c in FRESH])
def test_a_new_process_names_the_same_line_and_key(case: Case, tmp_path: Path) -> None:
    path = materialise(case, tmp_path)
    result = run_cli_process("validate", str(path), *case.validate_args, env=case.env)
    assert result.returncode == 2, result.stdout + result.stderr
    for fragment in case.expect:
        assert fragment in result.stderr, f"{fragment!r} missing from:\n{result.stderr}"


def test_a_key_named_like_its_kind_is_the_users_own(tmp_path: Path) -> None:
    """Only the union's label is left out of a location: a key the user wrote that happens to be named like the
    kind (`openai_chat:` inside an openai_chat target) is reported where it is, with the keys valid there."""
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        "name: t\ndataset: data.jsonl\ngraders:\n  g:\n    kind: final_state\n    final_state: 1\n"
        "target:\n  kind: openai_chat\n  model: m\n  base_url: http://127.0.0.1:9/v1\n  openai_chat: 1\n"
        "gate:\n  kind: simple\n  metric_key: g\n  simple: 0.5\n", encoding="utf-8")
    for result in (run_cli_process("validate", str(tmp_path / "suite.yaml")),
                   run_cli("validate", str(tmp_path / "suite.yaml"))):
        assert result.returncode == 2
        assert "suite.yaml:11: target.openai_chat: unknown key 'openai_chat'; valid keys: base_url" in result.stderr
        assert "suite.yaml:6: graders.g.final_state: unknown key 'final_state'" in result.stderr
        assert "suite.yaml:15: gate.simple: unknown key 'simple'; valid keys: sample_pass" in result.stderr

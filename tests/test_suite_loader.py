"""load_suite: valid suites, and every kind of mistake reported as a ConfigError with file:line and a hint."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evals_cli.errors import EXIT_INVALID, ConfigError
from evals_cli.graders.kinds.model_judge import ModelJudgeSpec
from evals_cli.graders.kinds.tool import ToolGraderSpec
from evals_cli.graders.kinds.trajectory import ToolOrderSpec, ToolsAvoidedSpec
from evals_cli.models.tools import ToolSpec
from evals_cli.suite.loader import load_suite
from tests.helpers import TOOLS, write_suite

MINIMAL = """\
name: demo
dataset: data.jsonl
target:
  kind: openai_chat
  model: m
graders:
  answer:
    kind: tool
    function: contains
"""


def write(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(path: Path, **kwargs: object) -> list[str]:
    """Load a suite that must fail; check the error's shape and return its problems."""
    with pytest.raises(ConfigError) as info:
        load_suite(path, **kwargs)  # type: ignore[arg-type]
    error = info.value
    assert isinstance(error.problems, list) and error.problems
    assert all(isinstance(p, str) for p in error.problems)
    assert str(error) == "\n".join(error.problems)
    assert error.exit_code == EXIT_INVALID
    return error.problems


# --- valid suites -------------------------------------------------------------------------------------------


def test_valid_suite_from_helper_loads_every_section(tmp_path: Path) -> None:
    path = write_suite(tmp_path, [{"input": "hi"}])

    suite = load_suite(path)

    assert suite.name == "test-suite"
    assert suite.concurrency == 2
    assert suite.target.kind == "openai_chat"
    assert suite.target.model == "scripted"
    assert suite.target.max_steps == 5
    assert suite.target.timeout == 10
    assert set(suite.tools) == set(TOOLS)
    assert isinstance(suite.tools["read_file"], ToolSpec)
    assert suite.tools["read_file"].cases[0].when == {"path": ".env"}
    assert isinstance(suite.graders["answer"], ToolGraderSpec)
    assert isinstance(suite.graders["order"], ToolOrderSpec)
    assert isinstance(suite.graders["avoided"], ToolsAvoidedSpec)
    assert suite.gate.op == "gte" and suite.gate.value == 0.8
    assert suite.base_dir == tmp_path.resolve()


def test_minimal_suite_gets_documented_defaults(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, MINIMAL))

    assert suite.concurrency == 4
    assert suite.tools == {}
    assert suite.judge is None
    assert suite.max_samples is None and suite.sample_tags is None
    assert suite.target.max_steps == 20
    assert suite.target.tool_choice == "auto"
    assert suite.gate.aggregation == "avg_score"
    assert suite.gate.op == "gte" and suite.gate.value == 0.7
    assert suite.gate.weights is None
    assert suite.graders["answer"].extractor == "last_assistant"


def test_target_kind_defaults_to_openai_chat(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("  kind: openai_chat\n", ""))
    assert load_suite(path).target.kind == "openai_chat"


def test_model_judge_grader_with_inline_prompt(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "  judge:\n    kind: model_judge\n    prompt: 'Grade {{ submission }}'\n"
                                     "    scale: 0-1\n")
    grader = load_suite(path).graders["judge"]
    assert isinstance(grader, ModelJudgeSpec)
    assert grader.scale == "0-1"
    assert grader.prompt == "Grade {{ submission }}"


def test_resolve_is_relative_to_the_suite_file_not_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = tmp_path / "suites" / "nested"
    sub.mkdir(parents=True)
    write(sub, MINIMAL)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    suite = load_suite(Path("..") / "suites" / "nested" / "suite.yaml")

    assert suite.base_dir == sub.resolve()
    assert suite.resolve("data.jsonl") == sub.resolve() / "data.jsonl"
    assert suite.resolve("rubrics/judge.md") == sub.resolve() / "rubrics" / "judge.md"
    absolute = tmp_path / "abs.jsonl"
    assert suite.resolve(str(absolute)) == absolute


# --- unknown keys: file:line, dotted path, did-you-mean ----------------------------------------------------


def test_unknown_key_in_grader_names_line_path_and_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        name: demo
        dataset: data.jsonl
        target:
          model: m
        graders:
          j:
            kind: tool
            functoin: contains
        """)

    problems = problems_of(path)

    assert f"{path}:8: graders.j.functoin: unknown key 'functoin'; did you mean 'function'?" in problems
    # the misspelt key also leaves the real one missing, reported at the grader's line
    assert f"{path}:6: graders.j.function: required field is missing" in problems


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "concurency: 3\n")
    problems = problems_of(path)
    assert problems == [f"{path}:10: concurency: unknown key 'concurency'; did you mean 'concurrency'?"]


def test_unknown_key_inside_target(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("  model: m\n", "  modle: m\n"))
    problems = problems_of(path)
    assert problems == [f"{path}:5: target.modle: unknown key 'modle'; did you mean 'model'?"]


def test_unknown_key_inside_a_tool(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "tools:\n  read_file:\n    description: Read\n    retuns: hi\n")
    problems = problems_of(path)
    assert problems == [f"{path}:13: tools.read_file.retuns: unknown key 'retuns'; did you mean 'returns'?"]


def test_unknown_key_without_close_match_lists_valid_keys(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("  model: m\n", "  model: m\n  zzzzzz: 1\n"))
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:6: target.zzzzzz: unknown key 'zzzzzz'; valid keys: ")
    assert "did you mean" not in problem
    for key in ("base_url", "model", "system_prompt", "max_steps"):
        assert key in problem


def test_several_problems_are_all_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        name: demo
        dataset: data.jsonl
        concurency: 3
        target:
          modle: m
        graders:
          j:
            kind: tool
            function: contains
            extractor: last_asistant
          k:
            kind: toll
          m:
            extractor: last_assistant
        """)

    problems = problems_of(path)

    assert len(problems) == 5
    joined = "\n".join(problems)
    assert f"{path}:3: concurency: unknown key 'concurency'; did you mean 'concurrency'?" in problems
    assert f"{path}:5: target.modle: unknown key 'modle'; did you mean 'model'?" in problems
    assert f"{path}:7: graders.j: unknown extractor 'last_asistant'; did you mean 'last_assistant'?" in joined
    assert f"{path}:12: graders.k.kind: unknown kind 'toll'" in joined  # the line of the kind itself
    assert f"{path}:13: graders.m.kind: missing 'kind'" in joined  # no kind line: the grader's own


# --- YAML and file-level problems ---------------------------------------------------------------------------


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name: demo\ndataset: data.jsonl\ngraders: [a\n  b: c\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:4: YAML syntax error: ")


def test_yaml_tab_indentation_is_a_syntax_error_with_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name: demo\ntarget:\n\tmodel: m\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:3: YAML syntax error")


@pytest.mark.parametrize(
    ("text", "type_name"),
    [("- name: demo\n- dataset: x\n", "list"), ("just a string\n", "str"), ("42\n", "int"), ("", "NoneType"),
     ("# only a comment\n", "NoneType")],
)
def test_non_mapping_yaml_is_rejected(tmp_path: Path, text: str, type_name: str) -> None:
    path = write(tmp_path, text)
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}: expected a mapping of suite keys")
    assert problem.endswith(f"got {type_name}")


def test_non_utf8_suite_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes(b"name: demo\ndescription: caf\xe9\ndataset: data.jsonl\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:2: not valid UTF-8")
    assert "UTF-8" in problem


def test_missing_suite_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    (problem,) = problems_of(path)
    assert problem == f"{path}: suite file not found; check the path"


def test_suite_path_is_a_directory(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path)
    assert problem.startswith(f"{tmp_path}: is a directory")


# --- environment variables ----------------------------------------------------------------------------------


ENV_SUITE = """\
name: demo
dataset: data.jsonl
description: "prefix-${EVALS_T_WORD}-suffix, literal $${EVALS_T_WORD}"
concurrency: "${EVALS_T_CONC:-3}"
target:
  model: "${EVALS_T_MODEL}"
  base_url: "${EVALS_T_URL:-http://127.0.0.1:9/v1}"
  api_key: "${EVALS_T_KEY:-sk-default}"
graders:
  answer: {kind: tool, function: contains}
"""


def test_env_variables_and_defaults_are_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_T_WORD", "word")
    monkeypatch.setenv("EVALS_T_MODEL", "gpt-test")
    monkeypatch.setenv("EVALS_T_KEY", "sk-from-env")
    monkeypatch.delenv("EVALS_T_URL", raising=False)
    monkeypatch.delenv("EVALS_T_CONC", raising=False)

    suite = load_suite(write(tmp_path, ENV_SUITE))

    assert suite.description == "prefix-word-suffix, literal ${EVALS_T_WORD}"
    assert suite.concurrency == 3  # the default string "3" is validated as an int
    assert suite.target.model == "gpt-test"
    assert suite.target.base_url == "http://127.0.0.1:9/v1"  # unset: default used
    assert suite.target.api_key == "sk-from-env"  # set: default ignored


def test_empty_env_variable_falls_back_to_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_T_WORD", "w")
    monkeypatch.setenv("EVALS_T_MODEL", "m")
    monkeypatch.setenv("EVALS_T_URL", "")
    monkeypatch.setenv("EVALS_T_CONC", "7")
    suite = load_suite(write(tmp_path, ENV_SUITE))
    assert suite.target.base_url == "http://127.0.0.1:9/v1"
    assert suite.concurrency == 7


def test_missing_env_variable_names_variable_field_and_line(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_T_WORD", "w")
    monkeypatch.delenv("EVALS_T_MODEL", raising=False)

    problems = problems_of(write(tmp_path, ENV_SUITE))

    path = tmp_path / "suite.yaml"
    assert problems == [f"{path}:6: target.model: environment variable EVALS_T_MODEL is not set; "
                        "export it or write ${EVALS_T_MODEL:-default}"]


def test_missing_env_variable_reported_with_validation_errors(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALS_T_NOPE", raising=False)
    path = write(tmp_path, MINIMAL.replace("  model: m\n", "  model: ${EVALS_T_NOPE}\n") + "concurrency: 0\n")

    problems = problems_of(path)

    assert len(problems) == 2
    assert any(p.startswith(f"{path}:5: target.model: environment variable EVALS_T_NOPE is not set")
               for p in problems)
    assert f"{path}:10: concurrency: input should be greater than or equal to 1" in problems


def test_missing_env_variable_inside_a_list_names_the_index(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALS_T_TAG", raising=False)
    path = write(tmp_path, MINIMAL + "sample_tags:\n  - smoke\n  - ${EVALS_T_TAG}\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:12: sample_tags.1: environment variable EVALS_T_TAG is not set")


# --- grader kinds, gate weights, concurrency -----------------------------------------------------------------


def test_unknown_grader_kind_has_hint_and_lists_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("kind: tool\n", "kind: toll\n"))
    (problem,) = problems_of(path)
    assert problem == (f"{path}:8: graders.answer.kind: unknown kind 'toll'; kinds: choice, cost, exact_match, f1, "
                       "final_state, forbidden_tools, grounding, latency, match, model_judge, no_leak, no_loops, "
                       "output_type, sandbox_check, session_detector, session_score, spans, stop_behavior, tool_args, "
                       "tool_order, tool_schema")


def test_unknown_grader_kind_without_close_match(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("kind: tool\n", "kind: banana\n"))
    (problem,) = problems_of(path)
    assert ("unknown kind 'banana'; kinds: choice, cost, exact_match, f1, final_state, forbidden_tools, grounding, "
            "latency, match, model_judge, no_leak, no_loops, output_type,") in problem
    assert "did you mean" not in problem


def test_missing_grader_kind(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("    kind: tool\n", ""))
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:7: graders.answer.kind: missing 'kind'")


def test_no_graders_at_all(tmp_path: Path) -> None:
    path = write(tmp_path, "name: demo\ndataset: data.jsonl\ntarget: {model: m}\ngraders: {}\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:4: graders: ")


def test_gate_weights_naming_an_unknown_grader(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "gate:\n  weights: {answer: 1, jugde: 2}\n")
    (problem,) = problems_of(path)
    # located at the gate.weights line (an earlier version pointed at line 1)
    assert problem == f"{path}:11: gate.weights: names unknown grader(s) 'jugde'; graders are: answer"


def test_gate_weights_unknown_grader_with_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "gate:\n  weights: {anser: 1}\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:11: gate.weights: names unknown grader(s) 'anser' (did you mean 'answer'?)")


def test_gate_weights_problem_reported_together_with_other_problems(tmp_path: Path) -> None:
    """An earlier version checked weights in an after-validator, skipped whenever another field was invalid."""
    path = write(tmp_path, MINIMAL + "concurency: 3\ngate:\n  weights: {jugde: 2}\n")
    problems = problems_of(path)
    assert len(problems) == 2
    assert f"{path}:10: concurency: unknown key 'concurency'; did you mean 'concurrency'?" in problems
    assert f"{path}:12: gate.weights: names unknown grader(s) 'jugde'; graders are: answer" in problems


def test_list_extractor_group_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "    extractor: pattern\n    extractor_config: {pattern: '(a)', group: [1]}\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:7: graders.answer: extractor_config.group")


def test_negative_gate_weight(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "gate:\n  weights: {answer: -1}\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:11: gate.weights: weights must be >= 0 (negative: answer)")


@pytest.mark.parametrize("value", [0, -2])
def test_concurrency_must_be_positive(tmp_path: Path, value: int) -> None:
    path = write(tmp_path, MINIMAL + f"concurrency: {value}\n")
    (problem,) = problems_of(path)
    assert problem == f"{path}:10: concurrency: input should be greater than or equal to 1"


def test_invalid_enum_value_in_a_grader(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "  order:\n    kind: tool_order\n    score: partial\n")
    (problem,) = problems_of(path)
    assert problem == f"{path}:12: graders.order.score: input should be 'binary' or 'fraction'"


def test_model_validator_errors_name_their_block(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        name: demo
        dataset: data.jsonl
        target:
          system_prompt: a
          system_prompt_file: b.txt
        tools:
          both: {returns: a, error: b}
        graders:
          j: {kind: model_judge}
        """)

    problems = problems_of(path)

    assert f"{path}:3: target: give system_prompt or system_prompt_file, not both" in problems
    assert f"{path}:7: tools.both: give only one of returns, sequence, error (got returns, error)" in problems
    assert f"{path}:9: graders.j: give exactly one of 'rubric' (a file or builtin:NAME) or 'prompt' (inline text)" \
        in problems



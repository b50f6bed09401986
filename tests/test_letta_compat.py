"""letta-evals suite files load as they are: translated onto our schema (errors still at the lines the user
wrote, under the names the user wrote), Letta targets swapped for an OpenAI-compatible agent given with
--target or --base-url/--model, and the shipped suites under suites/letta/ give the verdicts their gates
demand against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.errors import ConfigError
from evals_cli.graders.kinds.model_judge import ModelJudgeSpec
from evals_cli.graders.kinds.tool import ToolGraderSpec
from evals_cli.models.sample import Sample
from evals_cli.models.specs import CustomRewardGate, LogicalGate, SimpleGate, WeightedAverageGate
from evals_cli.suite.letta import letta_reason
from evals_cli.suite.loader import TargetOverride, load_suite
from evals_cli.suite.yaml_file import parse_yaml
from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, last_user, text

LETTA = ROOT / "suites" / "letta"
SHIPPED = [("weather_per_turn", "weather"), ("support_rubric", "support"), ("orders_reward", "orders")]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def write(tmp: Path, suite: str, rows: list[dict[str, Any]] | None = None, name: str = "suite.yaml") -> Path:
    (tmp / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows or [{"input": "hi"}]))
    (tmp / "judge.j2").write_text("Grade {{ submission }} against {{ ground_truth }}.")
    path = tmp / name
    path.write_text(suite)
    return path


TARGET = "target:\n  kind: openai_chat\n  base_url: http://127.0.0.1:9/v1\n  model: m\n"


def target_file(tmp: Path, body: str = TARGET) -> TargetOverride:
    path = tmp / "target.yaml"
    path.write_text(body)
    return TargetOverride(file=path)


def problems(path: Path, override: TargetOverride | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_suite(path, override)
    return info.value.problems


# --- the gate era ---------------------------------------------------------------------------------------------


GATE_ERA = """\
name: letta-suite
dataset: data.jsonl
num_runs: 3
max_concurrent: 5
target:
  kind: agent
  base_url: http://localhost:8283
  agent_file: agent.af
graders:
  quality:
    kind: rubric
    display_name: Answer quality
    prompt_path: judge.j2
    model: gpt-4o-mini
    temperature: 0.0
    provider: openai
    max_retries: 5
    timeout: 60
    rubric_vars: [topic]
    extractor: last_assistant
  regex:
    kind: tool
    function: regex_match
    extractor: pattern
    extractor_config:
      pattern: "ANSWER: .*"
  called:
    kind: tool
    function: contains
    extractor: tool_arguments
    extractor_config:
      tool_name: search
    display_name: Search query
gate:
  metric_key: regex
  metric: accuracy
  op: gte
  value: 0.8
"""


def test_gate_era_suite_is_translated(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GATE_ERA), target_file(tmp_path))

    assert suite.repeats == 3 and suite.concurrency == 5
    assert suite.target.kind == "openai_chat" and suite.target.model == "m"
    judge = suite.graders["quality"]
    assert isinstance(judge, ModelJudgeSpec)
    assert judge.rubric == "judge.j2" and judge.prompt is None
    assert judge.scale == "0-1"  # letta-evals judges score in [0, 1]
    assert judge.model == "gpt-4o-mini" and judge.temperature == 0.0
    assert judge.description == "Answer quality"
    regex = suite.graders["regex"]
    assert isinstance(regex, ToolGraderSpec)
    assert regex.case_sensitive is True  # letta-evals' regex_match is case-sensitive
    # the whole match, in the most recent message that has one, as in letta-evals
    assert regex.extractor_config == {"pattern": "ANSWER: .*", "group": 0, "scope": "any_assistant"}
    assert suite.graders["called"].extractor_config == {"tool": "search"}
    assert suite.graders["called"].description == "Search query"
    gate = suite.gate
    assert isinstance(gate, SimpleGate)
    assert (gate.metric_key, gate.aggregation, gate.op, gate.value) == ("regex", "accuracy", "gte", 0.8)
    assert (gate.pass_op, gate.pass_value) == ("gte", 1.0)  # accuracy counts perfect samples, as in letta-evals


def test_gate_era_gate_without_metric_key_uses_the_only_grader(tmp_path: Path) -> None:
    suite_text = GATE_ERA.split("graders:")[0] + ("graders:\n  answer:\n    kind: tool\n    function: contains\n"
                                                  "gate:\n  op: gte\n  value: 0.5\n")
    gate = load_suite(write(tmp_path, suite_text), target_file(tmp_path)).gate
    assert isinstance(gate, SimpleGate) and gate.metric_key == "answer" and gate.aggregation == "avg_score"


def test_gate_without_metric_key_and_several_graders_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, GATE_ERA.replace("  metric_key: regex\n", ""))
    [problem] = problems(path, target_file(tmp_path))
    assert problem.startswith(f"{path}:{line_of(path, 'gate:')}: gate: name the grader to gate on with metric_key")
    assert "quality, regex, called" in problem


LOGICAL = """\
name: letta-logical
dataset: data.jsonl
target:
  kind: letta_agent
  agent_id: agent-123
graders:
  answer: {kind: tool, function: contains}
  judge: {kind: model_judge, prompt: "Grade {submission}", model: gpt-4o-mini}
gate:
  kind: logical
  operator: or
  conditions:
    - metric_key: answer
      aggregation: p95
      op: gte
      value: 0.9
    - kind: logical
      operator: and
      conditions:
        - metric_key: judge
          aggregation: accuracy
          op: gte
          value: 0.5
          pass_threshold: 0.7
        - kind: weighted_average
          aggregation: median
          weights: {answer: 1, judge: 2}
          op: gte
          value: 0.6
"""


def test_logical_gate_conditions_become_sub_gates(tmp_path: Path) -> None:
    gate = load_suite(write(tmp_path, LOGICAL), target_file(tmp_path)).gate

    assert isinstance(gate, LogicalGate) and gate.operator == "or"
    first, nested = gate.gates
    assert isinstance(first, SimpleGate) and (first.metric_key, first.aggregation) == ("answer", "p95")
    assert isinstance(nested, LogicalGate) and nested.operator == "and"
    judge, weighted = nested.gates
    assert isinstance(judge, SimpleGate) and (judge.pass_op, judge.pass_value) == ("gte", 0.7)
    assert isinstance(weighted, WeightedAverageGate) and weighted.weights == {"answer": 1, "judge": 2}


def test_errors_point_at_the_original_line_under_the_original_name(tmp_path: Path) -> None:
    """`conditions` became `gates`: the message still says conditions, at the line the user wrote."""
    path = write(tmp_path, LOGICAL.replace("        - metric_key: judge", "        - metric_key: jugde")
                 .replace("value: 0.5", "value: high"))
    found = problems(path, target_file(tmp_path))
    assert f"{path}:{line_of(path, 'metric_key: jugde')}: gate.conditions.1.conditions.0.metric_key: names unknown " \
           "grader 'jugde' (did you mean 'judge'?); graders are: answer, judge" in found
    assert any(p.startswith(f"{path}:{line_of(path, 'value: high')}: gate.conditions.1.conditions.0.value: input "
                            "should be a valid number") for p in found), found


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("num_runs: 3", "num_runs: 0", "num_runs: input should be greater than or equal to 1"),
    ("    prompt_path: judge.j2", "    prompt_path: 7", "graders.quality.prompt_path: input should be a valid string"),
    ("      tool_name: search", "      tool_name: search\n      tool: search2",
     "graders.called.extractor_config.tool_name: give tool_name (letta-evals) or tool, not both"),
])
def test_renamed_keys_keep_their_line_and_name(tmp_path: Path, old: str, new: str, expected: str) -> None:
    path = write(tmp_path, GATE_ERA.replace(old, new))
    found = problems(path, target_file(tmp_path))
    key = expected.split(":")[0].split(".")[-1]
    line = line_of(path, f"{key}:")
    assert any(p == f"{path}:{line}: {expected}" or p.startswith(f"{path}:{line}: {expected}") for p in found), found


@pytest.mark.parametrize(("old", "new", "needle", "expected"), [
    ("num_runs: 3", "num_runs: 3\nsetup_script: setup.py:prepare", "setup_script:", "setup_script is not supported"),
    ("    kind: rubric", "    kind: letta_judge", "kind: letta_judge", "letta_judge grades with a Letta agent"),
    ("    extractor: last_assistant", "    extractor: memory_block\n    extractor_config: {block_label: human}",
     "extractor: memory_block", "memory_block reads a Letta agent's memory"),
])
def test_letta_only_features_are_clear_errors(tmp_path: Path, old: str, new: str, needle: str, expected: str) -> None:
    path = write(tmp_path, GATE_ERA.replace(old, new))
    found = problems(path, target_file(tmp_path))
    assert any(p.startswith(f"{path}:{line_of(path, needle)}: ") and expected in p for p in found), found


# --- the reward era ---------------------------------------------------------------------------------------------


REWARD = """\
name: letta-reward
dataset: data.jsonl
target:
  model_handles: [openai/gpt-4.1-mini]
  agent_script: factory.py:make
graders:
  status: {kind: tool, function: exact_match, extractor_config: null}
reward:
  kind: metric
  metric_key: status
"""


def test_reward_becomes_a_simple_gate_with_default_threshold(tmp_path: Path) -> None:
    path = write(tmp_path, REWARD)
    assert letta_reason(parse_yaml(path.read_text(), "x")[0]) == "target.agent_script"
    suite = load_suite(path, target_file(tmp_path))
    assert isinstance(suite.gate, SimpleGate)
    assert (suite.gate.metric_key, suite.gate.aggregation, suite.gate.op, suite.gate.value) == \
        ("status", "avg_score", "gte", 0.7)
    assert suite.graders["status"].extractor_config == {}


def test_a_gate_block_next_to_the_reward_decides(tmp_path: Path) -> None:
    path = write(tmp_path, REWARD + "gate: {kind: simple, metric_key: status, value: 1.0}\n")
    gate = load_suite(path, target_file(tmp_path)).gate
    assert isinstance(gate, SimpleGate) and gate.value == 1.0


def test_a_custom_reward_becomes_a_custom_gate(tmp_path: Path) -> None:
    path = write(tmp_path, REWARD.replace("  kind: metric\n  metric_key: status\n",
                                          "  kind: custom\n  function: rewards.py:compose\n"))
    gate = load_suite(path, target_file(tmp_path)).gate
    assert isinstance(gate, CustomRewardGate)
    assert (gate.function, gate.aggregation, gate.op, gate.value, gate.sample_value) == \
        ("rewards.py:compose", "pass_rate", "gte", 0.7, 0.7)


EXTRACTING = """\
name: letta-extractors
dataset: data.jsonl
target: {model_handles: [m]}
graders:
  all_numbers:
    kind: tool
    function: contains
    extractor: pattern
    extractor_config: {pattern: "\\\\d+", search_all: true}
  one_group:
    kind: tool
    function: contains
    extractor: pattern
    extractor_config: {pattern: "id=(\\\\w+)", search_all: true}
  second_group:
    kind: tool
    function: contains
    extractor: pattern
    extractor_config: {pattern: "(\\\\w+)=(\\\\w+)", search_all: true, group: 1}
  after:
    kind: tool
    function: contains
    extractor: after_marker
    extractor_config: {marker: "ANSWER:", include_marker: true}
  custom:
    kind: tool
    function: contains
    extractor: pick.py:second_word
    extractor_config: {index: 2}
reward: {kind: metric, metric_key: after}
"""


def test_letta_extractor_options_keep_letta_evals_meaning(tmp_path: Path) -> None:
    """letta-evals searches the assistant messages from the last back, takes the first marker of a message, and
    with search_all indexes each match's groups from 0 (a one-group pattern gives that group)."""
    graders = load_suite(write(tmp_path, EXTRACTING), target_file(tmp_path)).graders
    assert graders["all_numbers"].extractor_config == {"pattern": "\\d+", "search_all": True,
                                                       "scope": "any_assistant"}
    assert graders["one_group"].extractor_config["group"] == 1
    assert graders["second_group"].extractor_config["group"] == 2
    assert graders["after"].extractor_config == {"marker": "ANSWER:", "include_marker": True,
                                                 "scope": "any_assistant", "occurrence": "first"}
    assert graders["custom"].extractor == "pick.py:second_word"
    assert graders["custom"].extractor_config == {"index": 2}  # a custom extractor's options are its own


@pytest.mark.parametrize(("reward", "expected"), [
    ("reward:\n  kind: custom\n", "reward: a custom reward needs function: path/to/file.py:function"),
    ("reward:\n  kind: custom\n  function: rewards.compose\n", "reward.function: 'rewards.compose' is not "
                                                                   "'path/to/file.py:function'"),
    ("reward:\n  kind: custom\n  function: r.py:f\n  weights: {}\n", "reward.weights: unknown key 'weights'"),
    ("reward:\n  kind: metric\n  metric_key: statuss\n", "reward.metric_key: names unknown grader 'statuss' "
                                                         "(did you mean 'status'?)"),
    ("reward:\n  kind: metric\n", "reward: a metric reward needs metric_key"),
])
def test_reward_problems(tmp_path: Path, reward: str, expected: str) -> None:
    path = write(tmp_path, REWARD.split("reward:")[0] + reward)
    found = problems(path, target_file(tmp_path))
    assert any(expected in p and p.startswith(f"{path}:") for p in found), found


# --- targets ------------------------------------------------------------------------------------------------------


def test_a_letta_target_without_an_agent_is_exit_2_with_what_to_do(tmp_path: Path) -> None:
    path = write(tmp_path, GATE_ERA)
    for command in ("run", "validate"):
        result = run_cli(command, str(path))
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"{path}:{line_of(path, 'kind: agent')}: target.kind: agent is a letta-evals target" in result.stderr
        assert "--target FILE" in result.stderr and "--base-url URL (with --model NAME" in result.stderr
        assert "Traceback" not in result.stderr


def test_base_url_and_model_stand_in_for_a_letta_target(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GATE_ERA), TargetOverride(base_url="http://127.0.0.1:1/v1", model="qwen"))
    assert suite.target.kind == "openai_chat"
    assert (suite.target.base_url, suite.target.model) == ("http://127.0.0.1:1/v1", "qwen")


def test_target_file_problems_name_the_target_file_and_line(tmp_path: Path) -> None:
    override = target_file(tmp_path, TARGET + "  modle: x\ntool:\n  a: {returns: 1}\n")
    found = problems(write(tmp_path, GATE_ERA), override)
    target = tmp_path / "target.yaml"
    assert f"{target}:5: target.modle: unknown key 'modle'; did you mean 'model'?" in found
    assert f"{target}:6: tool: unknown key 'tool'; did you mean 'tools'?" in found


def test_bare_target_file_with_tools_judge_and_a_relative_prompt(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "prompt.txt").write_text("be brief")
    body = ("target:\n  model: m\n  system_prompt_file: prompt.txt\ntools:\n  search: {returns: found}\n"
            "judge:\n  model: judge-model\n")
    (tmp_path / "agents" / "t.yaml").write_text(body)
    suite = load_suite(write(tmp_path, GATE_ERA), TargetOverride(file=tmp_path / "agents" / "t.yaml"))
    assert suite.resolve(suite.target.system_prompt_file or "").read_text() == "be brief"
    assert set(suite.tools) == {"search"} and suite.judge is not None and suite.judge.model == "judge-model"
    (tmp_path / "bare.yaml").write_text("kind: openai_chat\nmodel: bare\n")
    assert load_suite(tmp_path / "suite.yaml", TargetOverride(file=tmp_path / "bare.yaml")).target.model == "bare"


def test_target_file_replaces_our_own_suites_target_and_adds_tools(tmp_path: Path) -> None:
    own = ("name: own\ndataset: data.jsonl\ntarget: {model: original}\ntools:\n  a: {returns: x}\n"
           "graders:\n  answer: {kind: tool, function: contains}\n")
    path = write(tmp_path, own)
    assert letta_reason(parse_yaml(own, "x")[0]) is None
    override = target_file(tmp_path, TARGET + "tools:\n  b: {returns: y}\n")
    suite = load_suite(path, override)
    assert suite.target.model == "m" and set(suite.tools) == {"a", "b"}
    assert load_suite(path).target.model == "original"


@pytest.mark.parametrize("suite", sorted(p.name for p in (ROOT / "suites").glob("*.yaml")))
def test_our_own_suites_are_not_mistaken_for_letta(suite: str) -> None:
    data, _ = parse_yaml((ROOT / "suites" / suite).read_text(), suite)
    assert letta_reason(data) is None


def test_letta_dataset_rows_load_with_agent_args() -> None:
    sample = Sample.model_validate({"input": ["a", "b"], "ground_truth": ["x", "y"], "agent_args": {"k": 1},
                                    "rubric_vars": {"tier": "gold"}, "tags": ["t"]})
    assert sample.agent_args == {"k": 1} and sample.per_turn
    assert Sample.model_validate({"input": "a", "agent_args": None}).agent_args is None


# --- the shipped suites ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("suite", "target"), SHIPPED)
def test_shipped_letta_suites_validate_with_their_target(suite: str, target: str) -> None:
    result = run_cli("validate", str(LETTA / f"{suite}.yaml"), "--target", str(LETTA / f"{target}.target.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": ok: 4 samples" in result.stdout
    plain = run_cli("validate", str(LETTA / f"{suite}.yaml"))
    assert plain.returncode == 2 and "is a letta-evals target" in plain.stderr


def run_shipped(server: ScriptedServer, tmp: Path, suite: str, target: str, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("run", str(LETTA / f"{suite}.yaml"), "--target", str(LETTA / f"{target}.target.yaml"),
                   "--base-url", server.url, "--model", "scripted", "-o", str(tmp / "out"), *extra,
                   env={"EVAL_JUDGE_BASE_URL": server.url, "EVAL_JUDGE_API_KEY": "sk-judge"})


def forecast(city: str, day: str, answer: str) -> list[dict[str, Any]]:
    return [call("get_forecast", {"city": city, "day": day}), text(answer)]


WEATHER_GOOD = {
    "Paris today": forecast("Paris", "today", "It is sunny in Paris today."),
    "Paris tomorrow": forecast("Paris", "tomorrow", "Rain is expected in Paris tomorrow."),
    "umbrella": [text("Yes, pack one.")],
    "freezing in Oslo": forecast("Oslo", "today", "Yes, it is freezing: snow."),
    "temperature in Oslo": [text("It is -3°C.")],
    "Cairo today": forecast("Cairo", "today", "Sunny and hot."),
    "sunscreen": [text("Yes.")],
    "Wellington": forecast("Wellington", "today", "A gale: 85 km/h winds."),
    "drone": [text("Yes, far too windy.")],
}


def test_per_turn_letta_suite_passes_with_a_good_agent(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(WEATHER_GOOD)
    result = run_shipped(server, tmp_path, "weather_per_turn", "weather")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Gate PASSED: answer accuracy = 1.000 ≥ 0.75" in result.stdout
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(lines) == 4
    paris = next(r for r in lines if "Paris" in r["input"])
    grade = paris["grades"]["answer"]
    assert (grade["metadata"]["turns_passed"], grade["metadata"]["turns_total"]) == (3, 3)
    assert [t["ground_truth"] for t in grade["per_turn_grades"]] == ["sunny", "rain", "yes"]
    # the mocked tools came from the --target file
    first = server.agent_requests()[0]["body"]
    assert [t["function"]["name"] for t in first["tools"]] == ["get_forecast"]


def test_per_turn_letta_suite_fails_when_one_turn_in_two_samples_is_wrong(server: ScriptedServer,
                                                                          tmp_path: Path) -> None:
    server.script = agent_script({**WEATHER_GOOD, "umbrella": [text("No need.")],
                                  "sunscreen": [text("Not really.")]})
    result = run_shipped(server, tmp_path, "weather_per_turn", "weather")
    assert result.returncode == 1, result.stdout + result.stderr
    # 2 of 4 samples perfect: letta-evals' accuracy needs every turn right
    assert "Gate FAILED: answer accuracy = 0.500 not ≥ 0.75" in result.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["passed"] == 2 and summary["failed"] == 2


SUPPORT_CATEGORY = {"blender": "refund", "headphones": "repair", "gold member": "refund", "shipping address":
                    "address_change"}


def support_agent(category_for: dict[str, str]):  # type: ignore[no-untyped-def]
    def script(path: str, body: dict[str, Any]) -> Any:
        user = last_user(body)
        key = next(k for k in category_for if k in user)
        return agent_script({key: [call("create_ticket", {"category": category_for[key], "summary": user}),
                                   text("Ticket filed; we will email you within a day.")]})(path, body)
    return script


def judging(score: float):  # type: ignore[no-untyped-def]
    def script(path: str, body: dict[str, Any]) -> Any:
        if "impartial evaluation judge" in str(body["messages"][0].get("content", "")):
            return judge_score(score, "follows the policy" if score >= 0.7 else "promises a refund it cannot")
        return support_agent(SUPPORT_CATEGORY)(path, body)
    return script


def test_rubric_vars_letta_suite_passes_and_each_judge_call_sees_its_samples_policy(server: ScriptedServer,
                                                                                    tmp_path: Path) -> None:
    server.script = judging(0.9)
    result = run_shipped(server, tmp_path, "support_rubric", "support")
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("Gate PASSED: all of (resolution avg_score = 0.900 ≥ 0.7; ticket accuracy = 1.000 ≥ 0.75)"
            in result.stdout)
    judged = [json.dumps(r["body"]) for r in server.judge_requests()]
    assert len(judged) == 4 and all(r["body"]["model"] == "gpt-4o-mini" for r in server.judge_requests())
    rows = [json.loads(line) for line in (ROOT / "datasets" / "letta" / "support.jsonl").read_text().splitlines()]
    for row in rows:  # the per-sample rubric: this sample's policy went to the judge with this sample's input
        [body] = [b for b in judged if json.dumps(row["input"])[1:-1][:40] in b]
        assert json.dumps(row["rubric_vars"]["policy"])[1:-1] in body
        assert row["rubric_vars"]["tier"] in body


def test_rubric_vars_letta_suite_fails_on_a_low_judge_score(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = judging(0.3)
    result = run_shipped(server, tmp_path, "support_rubric", "support")
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("Gate FAILED: all of (resolution avg_score = 0.300 not ≥ 0.7; ticket accuracy = 1.000 ≥ 0.75)"
            in result.stdout)


def test_a_sample_missing_a_rubric_var_is_reported_before_any_call(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (ROOT / "datasets" / "letta" / "support.jsonl").read_text().splitlines()]
    del rows[1]["rubric_vars"]["policy"]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = yaml.safe_load((LETTA / "support_rubric.yaml").read_text())
    suite["dataset"] = str(tmp_path / "rows.jsonl")
    suite["graders"]["resolution"]["prompt_path"] = str(ROOT / "rubrics" / "letta" / "support_resolution.j2")
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    result = run_cli("validate", str(tmp_path / "suite.yaml"), "--target", str(LETTA / "support.target.yaml"))
    assert result.returncode == 2
    assert "graders.resolution" in result.stderr and "policy" in result.stderr and "line-2" in result.stderr


def orders_agent(status_line: bool):  # type: ignore[no-untyped-def]
    statuses = {"A-100": "shipped", "B-200": "delivered", "C-300": "processing", "D-400": "cancelled"}

    def script(path: str, body: dict[str, Any]) -> Any:
        user = last_user(body)
        order = next(o for o in statuses if o in user)
        answer = f"Order {order} is {statuses[order]}."
        return agent_script({order: [call("lookup_order", {"order_id": order}),
                                     text(answer + (f"\nStatus: {statuses[order]}" if status_line else ""))]})(path, body)
    return script


def test_reward_letta_suite_repeats_num_runs_and_passes(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = orders_agent(status_line=True)
    result = run_shipped(server, tmp_path, "orders_reward", "orders")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Gate PASSED: status avg_score = 1.000 ≥ 0.7" in result.stdout
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(lines) == 8 and {r["repeat"] for r in lines} == {0, 1}  # num_runs: 2
    assert all(r["grades"]["looked_up"]["score"] == 1.0 for r in lines)


def test_reward_letta_suite_fails_without_the_status_line(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = orders_agent(status_line=False)
    result = run_shipped(server, tmp_path, "orders_reward", "orders", "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.strip() == "Gate FAILED: status avg_score = 0.000 not ≥ 0.7"

"""Where a judge's model, URL and key come from, in one order: --judge-* > a --target file's judge block > the
grader's own > the suite's judge block > EVAL_JUDGE_* > the grader's letta-evals `provider` > the agent. A
letta-evals suite names a hosted judge on each grader; swapping its target for a local agent must be able to
swap that judge too, and a `provider:` must never send the judge anywhere silently."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from evals_cli.endpoints.resolve import NO_KEY, Endpoint, JudgeOverrides, provider_note, resolve_judge
from evals_cli.graders.kinds.model_judge import ModelJudgeSpec
from evals_cli.models.specs import JudgeSpec
from evals_cli.suite.loader import TargetOverride, load_suite
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, judge_score, text

UNREACHABLE = "http://127.0.0.1:9/v1"
AGENT = Endpoint(role="agent", base_url="http://agent.test/v1", api_key="sk-agent", model="agent-model",
                 base_url_from="target.base_url")
PROVIDER_VARIABLES = ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def only_knows(model: str, score: float = 0.9) -> Any:
    """A judge server serving one model: any other name gets the 404 a local server gives an unknown model."""

    def script(path: str, body: dict[str, Any]) -> Any:
        if body.get("model") != model:
            return Reply({"error": {"message": f"model '{body.get('model')}' not found"}}, status=404)
        return judge_score(score, f"judged by {model}")

    return script


@pytest.fixture
def judge_server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer(only_knows("local-judge")).start()
    yield srv
    srv.stop()


LETTA_SUITE = """\
name: letta-judged
dataset: data.jsonl
target:
  kind: letta_agent
  base_url: http://localhost:8283
  agent_file: agent.af
graders:
  quality:
    kind: rubric
    prompt: "Question: {input}\\nAnswer: {submission}\\nScore 1.0 when right."
    model: gpt-4.1-mini
    provider: openai
    temperature: 0.0
    extractor: last_assistant
reward:
  kind: metric
  metric_key: quality
"""


def letta_suite(tmp_path: Path, agent_url: str, judge: dict[str, Any] | None) -> tuple[Path, Path]:
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "input": "hi", "ground_truth": "hello"}) + "\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(LETTA_SUITE)
    target: dict[str, Any] = {"target": {"kind": "openai_chat", "base_url": agent_url, "model": "scripted",
                                         "max_retries": 0, "timeout": 10}}
    if judge is not None:
        target["judge"] = judge
    target_file = tmp_path / "agent.target.yaml"
    target_file.write_text(yaml.safe_dump(target))
    return suite, target_file


def test_a_target_files_judge_block_wins_over_the_letta_graders_model(server: ScriptedServer,
                                                                      judge_server: ScriptedServer,
                                                                      tmp_path: Path) -> None:
    # the grader names gpt-4.1-mini, which the local judge does not serve; EVAL_JUDGE_* name yet another one
    server.script = agent_script({"hi": [text("hello")]})
    suite, target = letta_suite(tmp_path, server.url, {"model": "local-judge", "base_url": judge_server.url,
                                                       "api_key": "sk-target-judge"})
    result = run_cli("run", str(suite), "--target", str(target), "-o", str(tmp_path / "out"),
                     env={"EVAL_JUDGE_MODEL": "env-judge", "EVAL_JUDGE_BASE_URL": UNREACHABLE})
    assert result.returncode == 0, result.stdout + result.stderr
    [request] = judge_server.judge_requests()
    assert request["body"]["model"] == "local-judge"
    assert request["headers"]["authorization"] == "Bearer sk-target-judge"
    assert not server.judge_requests()
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["quality"]["score"] == pytest.approx(0.9)
    assert line["grades"]["quality"]["metadata"]["judge"] == "local-judge"


def test_without_the_redirect_the_graders_model_reaches_the_judge_and_is_refused(server: ScriptedServer,
                                                                                judge_server: ScriptedServer,
                                                                                tmp_path: Path) -> None:
    # the same suite whose --target judge block names only the URL: the grader's gpt-4.1-mini goes there, the
    # local judge refuses it, and the grade is missing (an error, never a zero)
    server.script = agent_script({"hi": [text("hello")]})
    suite, target = letta_suite(tmp_path, server.url, {"base_url": judge_server.url})
    result = run_cli("run", str(suite), "--target", str(target), "-o", str(tmp_path / "out"))
    assert {r["body"]["model"] for r in judge_server.judge_requests()} == {"gpt-4.1-mini"}
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["quality"]["score"] is None and "404" in line["grades"]["quality"]["error"]
    assert result.returncode != 0


def test_the_command_line_wins_over_the_target_files_judge_block(server: ScriptedServer,
                                                                 judge_server: ScriptedServer,
                                                                 tmp_path: Path) -> None:
    server.script = agent_script({"hi": [text("hello")]})
    suite, target = letta_suite(tmp_path, server.url, {"model": "target-judge", "base_url": UNREACHABLE})
    result = run_cli("run", str(suite), "--target", str(target), "-o", str(tmp_path / "out"),
                     "--judge-model", "local-judge", "--judge-base-url", judge_server.url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["body"]["model"] for r in judge_server.judge_requests()] == ["local-judge"]


def test_a_target_judge_block_redirects_panel_members_and_keeps_what_it_does_not_set(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi"}], graders={
        "panel": {"kind": "model_judge", "prompt": "{{ submission }}", "temperature": 0.4,
                  "panel": [{"model": "hosted-a", "base_url": UNREACHABLE}, {"model": "hosted-b"}]},
        "own": {"kind": "model_judge", "prompt": "{{ submission }}", "model": "own", "base_url": UNREACHABLE,
                "api_key": "sk-own"}})
    target = tmp_path / "t.yaml"
    target.write_text(yaml.safe_dump({"target": {"model": "m", "base_url": UNREACHABLE},
                                      "judge": {"model": "local-judge"}}))
    spec = load_suite(suite, TargetOverride(file=target))
    panel, own = spec.graders["panel"], spec.graders["own"]
    assert isinstance(panel, ModelJudgeSpec) and isinstance(own, ModelJudgeSpec) and panel.panel
    assert [(m.model, m.base_url) for m in panel.panel] == [("local-judge", UNREACHABLE), ("local-judge", None)]
    assert panel.temperature == 0.4  # only the endpoint settings are redirected
    assert (own.model, own.base_url, own.api_key) == ("local-judge", UNREACHABLE, "sk-own")


# --- the order, level by level ---------------------------------------------------------------------------------

LEVELS = ["cli", "target_file", "grader", "judge_block", "env", "agent"]


def resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels: list[str]) -> Endpoint:
    """The judge endpoint with each of `levels` naming its own model, URL and key."""
    grader: dict[str, Any] = {"kind": "model_judge", "prompt": "{{ submission }}"}
    if "grader" in levels:
        grader.update(model="grader-model", base_url="http://grader.test/v1", api_key="sk-grader")
    extra: dict[str, Any] = {}
    if "judge_block" in levels:
        extra["judge"] = {"model": "block-model", "base_url": "http://block.test/v1", "api_key": "sk-block"}
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi"}], graders={"j": grader}, **extra)
    override = None
    if "target_file" in levels:
        target = tmp_path / "t.yaml"
        target.write_text(yaml.safe_dump({"target": {"model": "m"}, "judge": {
            "model": "target-model", "base_url": "http://target.test/v1", "api_key": "sk-target"}}))
        override = TargetOverride(file=target)
    if "env" in levels:
        monkeypatch.setenv("EVAL_JUDGE_MODEL", "env-model")
        monkeypatch.setenv("EVAL_JUDGE_BASE_URL", "http://env.test/v1")
        monkeypatch.setenv("EVAL_JUDGE_API_KEY", "sk-env")
    spec = load_suite(suite, override)
    cli = JudgeOverrides("cli-model", "http://cli.test/v1", "sk-cli") if "cli" in levels else None
    return resolve_judge(spec.graders["j"], spec.judge, AGENT, cli)


@pytest.mark.parametrize("top", range(len(LEVELS)))
def test_each_level_wins_over_every_level_below_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   top: int) -> None:
    endpoint = resolved(tmp_path, monkeypatch, LEVELS[top:])
    name = LEVELS[top]
    expected = {"cli": ("cli-model", "http://cli.test/v1", "sk-cli"),
                "target_file": ("target-model", "http://target.test/v1", "sk-target"),
                "grader": ("grader-model", "http://grader.test/v1", "sk-grader"),
                "judge_block": ("block-model", "http://block.test/v1", "sk-block"),
                "env": ("env-model", "http://env.test/v1", "sk-env"),
                "agent": ("agent-model", "http://agent.test/v1", "sk-agent")}[name]
    assert (endpoint.model, endpoint.base_url, endpoint.api_key) == expected


# --- letta-evals' provider ---------------------------------------------------------------------------------------

def judge_spec(**fields: Any) -> ModelJudgeSpec:
    return ModelJudgeSpec.model_validate({"kind": "model_judge", "prompt": "{{ submission }}", **fields})


def test_provider_names_its_endpoint_and_key_variable_when_nothing_else_names_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    endpoint = resolve_judge(judge_spec(model="claude-haiku-4-5", provider="anthropic"), None, AGENT)
    assert (endpoint.base_url, endpoint.api_key, endpoint.model) == (
        "https://api.anthropic.com/v1", "sk-ant", "claude-haiku-4-5")
    assert endpoint.base_url_from == "the grader's provider (anthropic)"
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    google = resolve_judge(judge_spec(model="gemini-3-flash", provider="google"), None, AGENT)
    assert google.base_url == "https://generativelanguage.googleapis.com/v1beta/openai" and google.api_key == "g-key"


def test_provider_never_takes_the_agents_key() -> None:
    endpoint = resolve_judge(judge_spec(model="claude-haiku-4-5", provider="anthropic"), None, AGENT)
    assert endpoint.api_key == NO_KEY


def test_any_judge_url_set_elsewhere_wins_over_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    spec = judge_spec(model="claude-haiku-4-5", provider="anthropic")
    block = JudgeSpec(base_url="http://block.test/v1")
    assert resolve_judge(spec, block, AGENT).base_url == "http://block.test/v1"
    monkeypatch.setenv("EVAL_JUDGE_BASE_URL", "http://env.test/v1")
    assert resolve_judge(spec, None, AGENT).base_url == "http://env.test/v1"


def test_provider_is_not_used_for_a_model_named_elsewhere() -> None:
    # --judge-model names a model of the agent's (or another) endpoint: the provider named where the grader's
    # own model lives, so the judge does not go there
    spec = judge_spec(model="claude-haiku-4-5", provider="anthropic")
    endpoint = resolve_judge(spec, None, AGENT, JudgeOverrides(model="local"))
    assert (endpoint.model, endpoint.base_url) == ("local", "http://agent.test/v1")


def test_openai_provider_follows_openai_base_url_as_letta_evals_does(server: ScriptedServer, tmp_path: Path) -> None:
    judge = ScriptedServer(only_knows("gpt-4.1-mini", 0.8)).start()
    try:
        server.script = agent_script({"hi": [text("hello")]})
        suite, target = letta_suite(tmp_path, server.url, None)
        result = run_cli("run", str(suite), "--target", str(target), "-o", str(tmp_path / "out"),
                         env={"OPENAI_BASE_URL": judge.url, "OPENAI_API_KEY": "sk-openai"})
        assert result.returncode == 0, result.stdout + result.stderr
        [request] = judge.judge_requests()
        assert request["body"]["model"] == "gpt-4.1-mini"
        assert request["headers"]["authorization"] == "Bearer sk-openai"
        assert not server.judge_requests()
    finally:
        judge.stop()


def test_letta_provider_and_system_prompt_are_kept_by_the_translation(tmp_path: Path) -> None:
    suite, target = letta_suite(tmp_path, UNREACHABLE, None)
    suite.write_text(LETTA_SUITE.replace("    provider: openai\n", "    provider: anthropic\n"
                                         "    system_prompt: You are a strict grader.\n"))
    spec = load_suite(suite, TargetOverride(file=target)).graders["quality"]
    assert isinstance(spec, ModelJudgeSpec)
    assert (spec.provider, spec.system_prompt) == ("anthropic", "You are a strict grader.")


def test_an_unknown_provider_is_refused_at_its_line(tmp_path: Path) -> None:
    suite, target = letta_suite(tmp_path, UNREACHABLE, None)
    suite.write_text(LETTA_SUITE.replace("provider: openai", "provider: mistral"))
    result = run_cli("validate", str(suite), "--target", str(target))
    assert result.returncode == 2
    assert f"{suite}:12: graders.quality.provider" in result.stderr and "'anthropic'" in result.stderr


def test_the_provider_note_says_where_the_judge_goes() -> None:
    note = provider_note("anthropic")
    assert note is not None and "https://api.anthropic.com/v1" in note and "ANTHROPIC_API_KEY" in note
    assert "EVAL_JUDGE_BASE_URL" in note and "--target" in note
    assert provider_note(None) is None


def test_validate_notes_the_provider(tmp_path: Path) -> None:
    suite, target = letta_suite(tmp_path, UNREACHABLE, None)
    result = run_cli("validate", str(suite), "--target", str(target))
    assert result.returncode == 0, result.stderr
    assert f"note: {suite}: graders.quality.provider: provider openai: with no judge base URL set" in result.stderr
    assert "OPENAI_BASE_URL or https://api.openai.com/v1" in result.stderr and "OPENAI_API_KEY" in result.stderr


def test_a_spec_without_a_provider_falls_back_to_the_agent() -> None:
    # sessions and panel members have no provider field: resolution reads it only when the spec has one
    member = SimpleNamespace(model="m", base_url=None, api_key=None)
    assert resolve_judge(member, None, AGENT).base_url == "http://agent.test/v1"


# --- model_handles --------------------------------------------------------------------------------------------

HANDLES_SUITE = LETTA_SUITE.replace("  agent_file: agent.af\n",
                                    "  model_handles:\n    - openai/gpt-5-mini\n    - anthropic/claude-haiku-4-5\n")


def test_model_handles_become_the_target_files_models(tmp_path: Path) -> None:
    suite, _ = letta_suite(tmp_path, UNREACHABLE, None)
    suite.write_text(HANDLES_SUITE)
    target = tmp_path / "bare.target.yaml"
    target.write_text(yaml.safe_dump({"kind": "openai_chat", "base_url": UNREACHABLE}))
    spec = load_suite(suite, TargetOverride(file=target))
    assert spec.target.kind == "openai_chat"
    assert spec.target.models == ["openai/gpt-5-mini", "anthropic/claude-haiku-4-5"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("own", [{"model": "mine"}, {"models": ["a", "b"]}])
def test_a_target_file_naming_its_own_models_keeps_them(tmp_path: Path, own: dict[str, Any]) -> None:
    suite, _ = letta_suite(tmp_path, UNREACHABLE, None)
    suite.write_text(HANDLES_SUITE)
    target = tmp_path / "own.target.yaml"
    target.write_text(yaml.safe_dump({"kind": "openai_chat", "base_url": UNREACHABLE, **own}))
    spec = load_suite(suite, TargetOverride(file=target)).target
    assert (spec.model, spec.models) == (own.get("model"), own.get("models"))  # type: ignore[attr-defined]


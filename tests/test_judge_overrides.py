"""`--judge-model`, `--judge-base-url` and `--judge-api-key` on `evals run` (and `RunOptions` in Python) win over
every judge setting: a grader's own `model:` / `base_url:` (a letta-evals suite's `model: gpt-4o-mini`), the
suite's judge block, and EVAL_JUDGE_*, so a suite written for a hosted judge runs against a local one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evals_cli
from evals_cli.run_options import RunOptions
from tests.helpers import ROOT, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, is_judge, judge_score, last_user, text

LETTA = ROOT / "suites" / "letta"
UNREACHABLE = "http://127.0.0.1:9/v1"
CATEGORY = {"blender": "refund", "headphones": "repair", "gold member": "refund", "shipping address": "address_change"}


@pytest.fixture
def judge_server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer(lambda path, body: judge_score(0.9, "local judge")).start()
    yield srv
    srv.stop()


def support_agent(path: str, body: dict[str, Any]) -> Any:
    user = last_user(body)
    key = next(k for k in CATEGORY if k in user)
    return agent_script({key: [call("create_ticket", {"category": CATEGORY[key], "summary": user}),
                               text("Ticket filed; we will email you within a day.")]})(path, body)


def test_letta_suite_grader_model_is_redirected_to_a_local_judge(server: ScriptedServer, judge_server: ScriptedServer,
                                                                 tmp_path: Path) -> None:
    # the suite's grader says model: gpt-4o-mini, the --target file's judge block and EVAL_JUDGE_* name other
    # endpoints: the command line wins over all of them
    server.script = support_agent
    result = run_cli("run", str(LETTA / "support_rubric.yaml"), "--target", str(LETTA / "support.target.yaml"),
                     "--base-url", server.url, "--model", "scripted", "-o", str(tmp_path / "out"),
                     "--judge-model", "local-judge", "--judge-base-url", judge_server.url,
                     "--judge-api-key", "sk-local-judge",
                     env={"EVAL_JUDGE_BASE_URL": UNREACHABLE, "EVAL_JUDGE_MODEL": "env-judge",
                          "EVAL_JUDGE_API_KEY": "sk-env"})
    assert result.returncode == 0, result.stdout + result.stderr
    judged = judge_server.judge_requests()
    assert len(judged) == 4 and {r["body"]["model"] for r in judged} == {"local-judge"}
    assert {r["headers"]["authorization"] for r in judged} == {"Bearer sk-local-judge"}
    assert not server.judge_requests()  # nothing went to the agent's server or anywhere else
    results = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert {r["grades"]["resolution"]["metadata"]["judge"] for r in results} == {"local-judge"}
    assert "sk-local-judge" not in (tmp_path / "out" / "results.jsonl").read_text()  # a key, masked like the others


def test_overrides_win_over_the_judge_block_and_a_panel(server: ScriptedServer, judge_server: ScriptedServer,
                                                        tmp_path: Path) -> None:
    server.script = agent_script({"hi": [text("fine")]})
    graders = {"j": {"kind": "model_judge", "prompt": "Grade {{ submission }}", "scale": "0-1",
                     "panel": [{"model": "hosted-a", "base_url": UNREACHABLE}, {"model": "hosted-b"}]}}
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi"}], base_url=server.url, graders=graders,
                        judge={"model": "block-judge", "base_url": UNREACHABLE},
                        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--judge-model", "local",
                     "--judge-base-url", judge_server.url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["body"]["model"] for r in judge_server.judge_requests()] == ["local", "local"]


def test_python_api_takes_the_same_overrides(server: ScriptedServer, judge_server: ScriptedServer,
                                             tmp_path: Path) -> None:
    server.script = agent_script({"hi": [text("fine")]})
    graders = {"j": {"kind": "model_judge", "prompt": "Grade {{ submission }}", "scale": "0-1",
                     "model": "gpt-4.1-mini", "base_url": UNREACHABLE}}
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi"}], base_url=server.url, graders=graders,
                        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5})
    outcome = evals_cli.run(suite, RunOptions(output=tmp_path / "out", judge_model="local",
                                              judge_base_url=judge_server.url))
    assert outcome.exit_code == 0, outcome.messages
    assert [r["body"]["model"] for r in judge_server.judge_requests()] == ["local"]
    assert all(not is_judge(r["body"]) for r in server.requests)


def test_without_overrides_the_graders_own_model_still_wins(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: judge_score(0.9) if is_judge(body) else text("fine")
    graders = {"j": {"kind": "model_judge", "prompt": "Grade {{ submission }}", "scale": "0-1", "model": "own"}}
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi"}], base_url=server.url, graders=graders,
                        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), env={"EVAL_JUDGE_MODEL": "env-judge"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["body"]["model"] for r in server.judge_requests()] == ["own"]


def test_unreachable_judge_from_the_command_line_names_the_option(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"hi": [text("fine")]})
    graders = {"j": {"kind": "model_judge", "prompt": "Grade {{ submission }}", "scale": "0-1"}}
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi"}], base_url=server.url, graders=graders)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--judge-base-url", UNREACHABLE)
    out = json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[0])
    assert "--judge-base-url" in out["grades"]["j"]["error"], out["grades"]["j"]
    assert result.returncode != 0


def test_analyze_takes_the_judge_api_key_too(judge_server: ScriptedServer, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text((ROOT / "datasets" / "multi_agent_sessions.jsonl").read_text().splitlines()[0] + "\n")
    result = run_cli("analyze", str(one), "-o", str(tmp_path / "out"), "--judge-model", "local",
                     "--judge-base-url", judge_server.url, "--judge-api-key", "sk-analyze-judge")
    assert result.returncode != 2, result.stderr  # this judge's replies do not fit the sessions' questions: 3
    assert judge_server.requests
    assert {r["headers"]["authorization"] for r in judge_server.requests} == {"Bearer sk-analyze-judge"}

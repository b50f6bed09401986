"""The model_judge grader against a scripted judge: fallback chain, defensive parsing, failure is not zero."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evals_cli import load_suite, run_suite
from evals_cli.errors import ConfigError
from evals_cli.runner import RunOptions
from tests.helpers import write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, judge_score, text

ROWS = [{"id": "host", "input": "db host?", "ground_truth": "localhost", "rubric_vars": {"persona": "strict"}}]
AGENT = {"host": [call("read_file", {"path": ".env"}), text("It is localhost.")]}
RUBRIC = ("Persona: {{ persona }}\nQ: {{ input }}\nRef: {{ ground_truth }}\nA: {{ submission }}\n"
          "Tools: {% for c in tool_calls %}{{ c.name }}={{ c.result }};{% endfor %}\n{{ trajectory }}")


def unfenced(text: str) -> str:
    """A judge message as the judge reads it once the data fences are taken away (the rubric quotes each
    value of the sample inside its own `<data-NONCE>` span)."""
    return re.sub(r"</?data-[0-9a-f]{10}>", "", text)


def judged(server: ScriptedServer, tmp_path: Path, judge: Any, rows: list[dict] | None = None,
           **grader: Any) -> tuple[dict, Any]:
    server.script = agent_script(AGENT, judge=judge)
    (tmp_path / "rubric.j2").write_text(RUBRIC)
    spec = {"kind": "model_judge", "rubric": "rubric.j2", **grader}
    suite_path = write_suite(tmp_path, rows or ROWS, base_url=server.url, graders={"judge": spec},
                             gate={"value": 0.5})
    outcome = run_suite(load_suite(suite_path), RunOptions(output=tmp_path / "out"))
    line = json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[0])
    return line["grades"]["judge"], outcome


def test_structured_output_verdict_is_normalised(server: ScriptedServer, tmp_path: Path) -> None:
    grade, outcome = judged(server, tmp_path, lambda body: judge_score(8, "right"))
    assert grade["score"] == 0.8 and grade["rationale"] == "right"
    assert grade["metadata"]["mode"] == "json_schema"
    [request] = server.judge_requests()
    body = request["body"]
    assert body["response_format"]["type"] == "json_schema" and body["temperature"] == 0
    assert body["messages"][0]["role"] == "system"
    user = body["messages"][1]["content"]
    [nonce] = set(re.findall(r"<data-([0-9a-f]{10})>", user))
    assert f"<data-{nonce}>" in body["messages"][0]["content"]  # the judge is told where the data is
    # the rubric's own words are outside the fence, each value of the sample inside its own span
    assert user.startswith(f"Persona: <data-{nonce}>strict</data-{nonce}>\nQ: <data-{nonce}>db host?</data-{nonce}>")
    assert f"Tools: <data-{nonce}>read_file</data-{nonce}>=<data-{nonce}>DB_HOST=localhost" in user
    for expected in ("Persona: strict", "Q: db host?", "Ref: localhost", "A: It is localhost.",
                     "read_file=DB_HOST=localhost", "[tool call] read_file", "[assistant] It is localhost."):
        assert expected in unfenced(user)
    assert outcome.exit_code == 0 and outcome.summary.judge_usage.total_tokens == 15


def test_falls_back_to_json_object_then_remembers(server: ScriptedServer, tmp_path: Path) -> None:
    def judge(body: dict) -> Any:
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply({"error": {"message": "response_format json_schema unsupported"}}, status=500)
        return judge_score(6)

    rows = [dict(ROWS[0], id=f"s{i}") for i in range(3)]
    grade, _ = judged(server, tmp_path, judge, rows=rows)
    assert grade["score"] == 0.6 and grade["metadata"]["mode"] == "json_object"
    modes = [r["body"].get("response_format", {}).get("type") for r in server.judge_requests()]
    assert modes.count("json_object") == 3
    assert 1 <= modes.count("json_schema") <= 2  # concurrency 2: later calls skip the refused mode


def test_one_garbled_reply_does_not_push_later_calls_down_a_mode(server: ScriptedServer, tmp_path: Path) -> None:
    """json_schema is refused (remembered); one json_object reply is garbled, so that call steps down to text;
    the later calls still start at json_object, the mode the server accepts (a garbled reply is the model's
    slip, not the server's refusal)."""
    garbled = {"left": 1}

    def judge(body: dict) -> Any:
        kind = body.get("response_format", {}).get("type")
        if kind == "json_schema":
            return Reply({"error": {"message": "response_format json_schema unsupported"}}, status=500)
        if kind == "json_object" and garbled["left"]:
            garbled["left"] -= 1
            return text("{not json")
        return judge_score(6) if kind else text("Score: 6")

    rows = [dict(ROWS[0], id=f"s{i}") for i in range(4)]
    server.script = agent_script(AGENT, judge=judge)
    (tmp_path / "rubric.j2").write_text(RUBRIC)
    suite_path = write_suite(tmp_path, rows, base_url=server.url, concurrency=1,
                             graders={"judge": {"kind": "model_judge", "rubric": "rubric.j2"}}, gate={"value": 0.5})
    run_suite(load_suite(suite_path), RunOptions(output=tmp_path / "out"))
    modes = [r["body"].get("response_format", {}).get("type") for r in server.judge_requests()]
    assert modes == ["json_schema", "json_object", None, "json_object", "json_object", "json_object"]


def test_falls_back_to_plain_text_and_reads_a_score_line(server: ScriptedServer, tmp_path: Path) -> None:
    def judge(body: dict) -> Any:
        if "response_format" in body:
            return Reply({"error": {"message": "bad request"}}, status=400)
        return text("The answer matches the reference.\nScore: 9")

    grade, _ = judged(server, tmp_path, judge)
    assert grade["score"] == 0.9 and grade["metadata"]["mode"] == "text"


@pytest.mark.parametrize("reply", [
    '```json\n{"reason": "ok", "score": 7}\n```',
    'Here is my verdict: {"reason": "ok", "score": 7} I hope this helps.',
    '{"score": "7", "reason": "ok"}',
])
def test_defensive_parser_accepts_fences_and_prose(server: ScriptedServer, tmp_path: Path, reply: str) -> None:
    grade, _ = judged(server, tmp_path, lambda body: text(reply))
    assert grade["score"] == 0.7


@pytest.mark.parametrize("reply", ["I cannot grade this.", '{"score": 15, "reason": "great"}', ""])
def test_garbage_or_out_of_range_is_an_error_not_zero(server: ScriptedServer, tmp_path: Path, reply: str) -> None:
    grade, outcome = judged(server, tmp_path, lambda body: text(reply))
    assert grade["score"] is None and grade["error"].startswith("judge error")
    assert len(server.judge_requests()) == 3  # json_schema, json_object, text
    summary = outcome.summary
    assert summary.graders["judge"].errors == 1 and summary.graders["judge"].count == 0
    assert summary.errors_by_category == {"judge": 1}
    assert summary.gate.passed is None and outcome.exit_code == 3  # nothing graded: no verdict


def test_judge_timeout_is_an_error_and_the_run_goes_on(server: ScriptedServer, tmp_path: Path) -> None:
    tmp2 = tmp_path
    server.script = agent_script(AGENT, judge=lambda body: Reply(judge_score(9), delay=3))
    (tmp2 / "rubric.j2").write_text("{{ submission }}")
    suite_path = write_suite(tmp2, ROWS, base_url=server.url,
                             graders={"judge": {"kind": "model_judge", "rubric": "rubric.j2"},
                                      "answer": {"kind": "tool", "function": "contains"}},
                             judge={"base_url": server.url, "model": "scripted", "timeout": 0.5, "max_retries": 0})
    outcome = run_suite(load_suite(suite_path), RunOptions(output=tmp2 / "out", max_error_rate=0.5))
    line = json.loads((tmp2 / "out" / "results.jsonl").read_text())
    assert line["grades"]["judge"]["score"] is None and "timed out" in line["grades"]["judge"]["error"]
    # issue 11 item 12: the missing judge grade is not spread over the rest; the sample is incomplete (errored)
    assert line["grades"]["answer"]["score"] == 1.0 and line["score"] is None and line["passed"] is None
    assert line["error"]["category"] == "judge" and "judge" in line["error"]["message"]
    assert outcome.exit_code == 3  # the only sample errored: no verdict from survivors


def test_judge_endpoint_resolution_order(server: ScriptedServer, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from evals_cli.endpoints.resolve import resolve_agent, resolve_judge
    from evals_cli.graders.kinds.model_judge import ModelJudgeSpec
    from evals_cli.models.specs import JudgeSpec
    from evals_cli.targets.openai_chat import OpenAIChatTarget

    agent = resolve_agent(OpenAIChatTarget(base_url="http://agent/v1", model="agent-model", api_key="ka"))
    bare = ModelJudgeSpec(prompt="x")
    assert (resolve_judge(bare, None, agent).base_url, resolve_judge(bare, None, agent).model) == \
        ("http://agent/v1", "agent-model")
    monkeypatch.setenv("EVAL_JUDGE_BASE_URL", "http://env/v1")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "env-model")
    assert resolve_judge(bare, None, agent).model == "env-model"
    block = JudgeSpec(base_url="http://suite/v1", model="suite-model")
    assert resolve_judge(bare, block, agent).base_url == "http://suite/v1"
    own = ModelJudgeSpec(prompt="x", model="grader-model", base_url="http://grader/v1")
    resolved = resolve_judge(own, block, agent)
    assert (resolved.base_url, resolved.model) == ("http://grader/v1", "grader-model")
    assert "ka" not in resolved.describe()


def test_missing_rubric_variable_stops_before_any_call(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "no-persona", "input": "db host?", "ground_truth": "localhost"}]
    server.script = agent_script(AGENT, judge=lambda body: judge_score(9))
    (tmp_path / "rubric.j2").write_text(RUBRIC)
    suite_path = write_suite(tmp_path, rows, base_url=server.url,
                             graders={"judge": {"kind": "model_judge", "rubric": "rubric.j2"}})
    with pytest.raises(ConfigError) as info:
        run_suite(load_suite(suite_path), RunOptions(output=tmp_path / "out"))
    message = "\n".join(info.value.problems)
    assert "'persona' is undefined" in message and "no-persona" in message and "submission" in message
    assert server.requests == []


def test_per_turn_judging_grades_each_turn(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "conv", "input": ["first: host?", "second: port?"], "ground_truth": ["localhost", "5432"],
             "rubric_vars": {"persona": "p"}}]

    def judge(body: dict) -> Any:
        content = unfenced(body["messages"][1]["content"])
        return judge_score(10 if "Ref: localhost" in content else 2)

    server.script = agent_script({"first": [text("localhost")], "second": [text("80")]}, judge=judge)
    (tmp_path / "rubric.j2").write_text(RUBRIC)
    suite_path = write_suite(tmp_path, rows, base_url=server.url,
                             graders={"judge": {"kind": "model_judge", "rubric": "rubric.j2"}})
    run_suite(load_suite(suite_path), RunOptions(output=tmp_path / "out"))
    grade = json.loads((tmp_path / "out" / "results.jsonl").read_text())["grades"]["judge"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [1.0, 0.2]
    assert grade["score"] == pytest.approx(0.6) and grade["metadata"]["turns_passed"] == 1
    second = unfenced(server.judge_requests()[-1]["body"]["messages"][1]["content"])
    assert "Q: second: port?" in second and "A: 80" in second


def test_the_suite_judge_block_settings_reach_the_judge_graders(server: ScriptedServer, tmp_path: Path) -> None:
    """max_tokens, temperature and extra_body of the suite's judge block are sent by the graders it is the
    default for (they were accepted and silently ignored); a grader's own setting still wins."""
    server.script = agent_script(AGENT, judge=lambda body: judge_score(7))
    (tmp_path / "rubric.j2").write_text(RUBRIC)
    graders = {"plain": {"kind": "model_judge", "rubric": "rubric.j2"},
               "own": {"kind": "model_judge", "rubric": "rubric.j2", "max_tokens": 99}}
    suite_path = write_suite(tmp_path, ROWS, base_url=server.url, graders=graders, gate={"value": 0.5},
                             judge={"max_tokens": 160, "temperature": 0.3, "extra_body": {"top_k": 5}})
    run_suite(load_suite(suite_path), RunOptions(output=tmp_path / "out"))
    bodies = sorted((r["body"] for r in server.judge_requests()), key=lambda b: b["max_tokens"])
    assert [(b["max_tokens"], b["temperature"], b.get("top_k")) for b in bodies] == [(99, 0.3, 5), (160, 0.3, 5)]


def test_the_judge_prompt_and_reply_are_kept_for_the_report(server: ScriptedServer, tmp_path: Path) -> None:
    """The rendered prompt and the judge's reply text are in the results line (whole-sample judges: `messages`
    and each verdict's `reply`; per-turn judges: one `turn_calls` entry per turn) and the HTML report shows them."""
    from evals_cli.exporters.html import render_html
    from evals_cli.models.results import SampleResult

    rows = [{"id": "conv", "input": ["first: host?", "second: port?"], "ground_truth": ["localhost", "5432"],
             "rubric_vars": {"persona": "p"}}, dict(ROWS[0], id="whole")]
    server.script = agent_script({"first": [text("localhost")], "second": [text("80")], **AGENT},
                                 judge=lambda body: judge_score(6, "kept reply"))
    (tmp_path / "rubric.j2").write_text(RUBRIC)
    suite_path = write_suite(tmp_path, rows, base_url=server.url, concurrency=1,
                             graders={"judge": {"kind": "model_judge", "rubric": "rubric.j2"}})
    outcome = run_suite(load_suite(suite_path), RunOptions(output=tmp_path / "out"))
    lines = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    by_id = {line["sample_id"]: line["grades"]["judge"]["metadata"] for line in lines}
    whole = by_id["whole"]
    assert "Q: db host?" in unfenced(whole["messages"][1]["content"]) and "kept reply" in whole["verdicts"][0]["reply"]
    turns = by_id["conv"]["turn_calls"]
    assert [c["turn"] for c in turns] == [0, 1] and "Q: second: port?" in unfenced(turns[1]["messages"][1]["content"])
    page = render_html([SampleResult.model_validate(line) for line in lines], outcome.summary)
    assert "turn 2 · user" in page and "second: port?" in page and "turn 1: " in page

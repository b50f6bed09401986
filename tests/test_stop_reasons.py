"""An empty final answer, or a tool call the model wrote as text instead of making it, no longer ends as
`stop_reason: completed` (issue 11, item 13): they get `empty_answer` and `unparsed_tool_call`, in the results,
in the table and for the graders (a judge sees `[stopped: ...]`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals_cli.targets.common import answer_stop_reason
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, response_text, text

CALL_JSON = '{"name": "get_forecast", "arguments": {"city": "Paris", "day": "today"}}'


@pytest.mark.parametrize("answer,reason", [
    ("", "empty_answer"),
    (None, "empty_answer"),
    ("  \n ", "empty_answer"),
    (CALL_JSON, "unparsed_tool_call"),
    (f"```json\n{CALL_JSON}\n```", "unparsed_tool_call"),
    (f"```\n{CALL_JSON}\n```", "unparsed_tool_call"),
    (f"<tool_call>\n{CALL_JSON}\n</tool_call>", "unparsed_tool_call"),
    (f"<tool_call>{CALL_JSON}", "unparsed_tool_call"),
    ('{"type": "function", "function": {"name": "get_forecast", "arguments": "{}"}}', "unparsed_tool_call"),
    (f"[{CALL_JSON}, {CALL_JSON}]", "unparsed_tool_call"),
    (f"Let me look that up.\n{CALL_JSON}", "unparsed_tool_call"),
    # Qwen2.5-Coder-1.5B's own forms, seen in the stateful suite's recording: the tag its template lists tools in,
    # and the doubled braces of the template's escaped example
    (f"<tools>{CALL_JSON}</tools>", "unparsed_tool_call"),
    (f"<tool_call>\n{{{CALL_JSON}}}\n</tool_call>", "unparsed_tool_call"),
    (f"{{{CALL_JSON}}}", "unparsed_tool_call"),
    ("<b>Paris today: sunny.</b>", "completed"),
    ("Paris today: sunny, 24°C.", "completed"),
    ('The answer is {"name": "Ada", "age": 36}.', "completed"),
    ('{"name": "Ada", "age": 36}', "completed"),
    ('Here is an example:\n{"name": "not_offered", "arguments": {}}', "completed"),
])
def test_answer_stop_reason(answer: str | None, reason: str) -> None:
    assert answer_stop_reason(answer, {"get_forecast"}) == reason


ROWS = [{"id": "empty", "input": "empty please", "ground_truth": ""},
        {"id": "texted", "input": "weather in Paris", "ground_truth": "sunny"},
        {"id": "fine", "input": "fine answer", "ground_truth": "sunny"}]


@pytest.mark.parametrize("kind", ["openai_chat", "openai_responses"])
def test_stop_reasons_reach_results_and_table(server: ScriptedServer, tmp_path: Path, kind: str) -> None:
    empty = response_text("") if kind == "openai_responses" else text("")  # a message item with no text
    server.script = agent_script({"empty": [empty],
                                  "Paris": [call("read_file", {"path": ".env"}), text(CALL_JSON)],
                                  "fine": [text("It is sunny.")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url, target={"kind": kind},
                        graders={"order": {"kind": "tool_order"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    # no row has an expected order: the run completes, but with nothing checked the gate has no verdict (issue 24)
    assert result.returncode == 3 and "no sample had anything to check" in result.stdout, result.stdout + result.stderr
    reasons = {r["sample_id"]: r["trajectory"]["stop_reason"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert reasons == {"empty": "empty_answer", "texted": "unparsed_tool_call", "fine": "completed"}
    assert "[empty_answer]" in result.stdout and "[unparsed_tool_call]" in result.stdout


def test_a_judge_is_told_how_the_agent_stopped(server: ScriptedServer, tmp_path: Path) -> None:
    seen: list[str] = []

    def judge(body: dict) -> dict:
        seen.append(str(body["messages"]))
        return judge_score(1, "no answer")

    server.script = agent_script({"empty": [text("")]}, judge=judge)
    suite = write_suite(tmp_path, ROWS[:1], base_url=server.url,
                        graders={"judge": {"kind": "model_judge", "prompt": "Grade {{ trajectory }}"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert seen and any("empty_answer" in s for s in seen)


"""The seeds (the example harnesses evals-cli was built from), read as those harnesses read them (issue 24, item 7):

- the tutorial JSON-array format (`{"data", "target"}` items: seed 004's multi_turn.json, the book chapter's
  agent_multiturn.json) answers "" for a tool without a mock result, as those harnesses do, with a validate
  note; a row of our own format and suite YAML keep refusing a tool that answers nothing;
- a tutorial item's `data.config.model` (seed 001) is that item's agent model;
- `tool_order` modes `subset` / `superset` mean what agentevals means (seed 001 was graded with agentevals),
  and `evals validate` notes the change for suites that use them;
- letta-evals suites count a per-turn turn as passed at a score of 1.0, as letta-evals does.
(Seed 003, recorded sessions, is in tests/test_sessions_overruled.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals_cli.graders.base import GraderContext
from evals_cli.graders.kinds.trajectory import ToolOrderGrader, ToolOrderSpec
from evals_cli.models.sample import Sample
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, text
from tests.trajectory_builders import run, traj

# the shape of a seed-001 item: the agent is expected to list, then read; it reads straight away
PLAN_ITEM: dict[str, Any] = {
    "data": {
        "prompt": "What is in the config file?",
        "mock_tools": [
            {"name": "list_files", "description": "List files", "mock_return": "config.yaml"},
            {"name": "read_file", "description": "Read a file",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
             "mock_return": "port: 8080"},
        ],
    },
    "target": {"original_task": "Report the config", "expected_tool_order": ["list_files", "read_file"]},
}


def _tutorial_suite(tmp_path: Path, server: ScriptedServer, items: list[Any], graders: dict[str, Any],
                    **overrides: Any) -> Path:
    (tmp_path / "data.json").write_text(json.dumps(items), encoding="utf-8")
    return write_suite(tmp_path, [], base_url=server.url, dataset="data.json", tools={}, graders=graders,
                       **overrides)


def _order(mode: str) -> ToolOrderGrader:
    return ToolOrderGrader("order", ToolOrderSpec(mode=mode), GraderContext(Path(".")))  # type: ignore[arg-type]


# --- a tutorial tool without a mock result answers "" ------------------------------------------------------------

# the shape of seed 004's multi_turn.json (camelCase, a harness in TypeScript): writeFile has no mock result,
# and that harness answers such a call with ""
SEED_004: list[dict[str, Any]] = [{
    "data": {
        "prompt": "Save the note 'buy milk' to notes.txt, then tell me what you did.",
        "mockTools": [
            {"type": "function", "function": {"name": "readFile", "description": "Read a file",
                                              "parameters": {"type": "object",
                                                             "properties": {"path": {"type": "string"}}}},
             "mockReturn": "(empty file)"},
            {"type": "function", "function": {"name": "writeFile", "description": "Write a file",
                                              "parameters": {"type": "object",
                                                             "properties": {"path": {"type": "string"},
                                                                            "content": {"type": "string"}}}}},
        ],
        "config": {"maxTurns": 4},
    },
    "target": {"originalTask": "Save a note", "expectedToolOrder": ["writeFile"]},
}]


def test_seed_004_loads_and_its_silent_tool_answers_empty(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"buy milk": [call("writeFile", {"path": "notes.txt", "content": "buy milk"}),
                                               text("I saved 'buy milk' to notes.txt.")]})
    suite = _tutorial_suite(tmp_path, server, SEED_004, {"order": {"kind": "tool_order"}})
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    notes = [line for line in checked.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "data.json: item 1" in notes[0] and "'writeFile'" in notes[0]
    assert 'answers "" (an empty result)' in notes[0] and "mock_return" in notes[0] and "readFile" not in notes[0]

    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    second = server.agent_requests()[1]["body"]["messages"]
    assert [m["content"] for m in second if m["role"] == "tool"] == [""]
    (line,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"] is None and line["grades"]["order"]["score"] == 1.0
    assert line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]["result"] == ""


def test_the_note_is_one_line_for_many_rows(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [], dataset="data.json", tools={}, graders={"order": {"kind": "tool_order"}})
    (tmp_path / "data.json").write_text(json.dumps(SEED_004 * 5), encoding="utf-8")
    result = run_cli("validate", str(suite))
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "(5 rows)" in notes[0]


def test_our_own_formats_still_refuse_a_tool_that_answers_nothing(tmp_path: Path) -> None:
    """A plain row (JSONL, or a plain object in a JSON array) and suite YAML keep the error: in our own format
    a tool with no result is a mistake, not a convention."""
    for name, text_ in (("data.jsonl", json.dumps({"id": "a", "input": "x", "tools": {"writeFile": {}}}) + "\n"),
                        ("data.json", json.dumps([{"id": "a", "input": "x", "tools": {"writeFile": {}}}]))):
        suite = write_suite(tmp_path, [], dataset=name, tools={}, graders={"order": {"kind": "tool_order"}})
        (tmp_path / name).write_text(text_, encoding="utf-8")
        result = run_cli("validate", str(suite))
        assert result.returncode == 2 and "'writeFile' has no return configured" in result.stderr, name
    suite = write_suite(tmp_path, [{"id": "a", "input": "x"}], tools={"writeFile": {"description": "Write"}},
                        graders={"order": {"kind": "tool_order"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "tools.writeFile" in result.stderr and "no return configured" in result.stderr


# --- a tutorial item's own agent model -------------------------------------------------------------------------


def _model_items() -> list[dict[str, Any]]:
    """Two seed-001 items: the first names its agent model in data.config, the second does not."""
    own = json.loads(json.dumps(PLAN_ITEM))
    own["id"] = "own"
    own["data"]["config"] = {"model": "item-model", "max_steps": 3}
    plain = json.loads(json.dumps(PLAN_ITEM))
    plain["id"] = "plain"
    plain["data"]["prompt"] = "And what is in the readme?"
    return [own, plain]


def _models_asked(server: ScriptedServer) -> dict[str, set[str]]:
    """The model of every agent request, by the row's prompt."""
    asked: dict[str, set[str]] = {}
    for request in server.agent_requests():
        body = request["body"]
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        asked.setdefault("own" if "config" in prompt else "plain", set()).add(body["model"])
    return asked


def test_an_items_config_model_is_its_agent_model(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"config": [call("list_files"), text("port: 8080")],
                                  "readme": [text("nothing")]})
    suite = _tutorial_suite(tmp_path, server, _model_items(), {"order": {"kind": "tool_order"}}, gate={"value": 0.0},
                            pricing={"item-model": {"input": 1000.0, "output": 1000.0},
                                     "scripted": {"input": 0.0, "output": 0.0}})
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 0, checked.stderr
    notes = [line for line in checked.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "item 1" in notes[0] and "'item-model'" in notes[0]

    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert _models_asked(server) == {"own": {"item-model"}, "plain": {"scripted"}}
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["own"]["trajectory"]["agent_model"] == "item-model"
    assert lines["plain"]["trajectory"]["agent_model"] is None
    # the row's tokens are priced at its own model's price, not the run's
    assert lines["own"]["cost"] > 0 and lines["plain"]["cost"] == 0


def test_the_responses_target_asks_the_items_model_too(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"config": [text("port: 8080")], "readme": [text("nothing")]})
    suite = _tutorial_suite(tmp_path, server, _model_items(), {"order": {"kind": "tool_order"}}, gate={"value": 0.0},
                            target={"kind": "openai_responses"})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    asked = {("own" if "config" in json.dumps(r["body"]["input"]) else "plain", r["body"]["model"])
             for r in server.agent_requests()}
    assert asked == {("own", "item-model"), ("plain", "scripted")}


def test_a_run_over_several_models_asks_each_its_own_for_every_row(server: ScriptedServer, tmp_path: Path) -> None:
    """Otherwise every column would show the item's model under another model's name."""
    server.script = agent_script({"config": [text("port: 8080")], "readme": [text("nothing")]})
    suite = _tutorial_suite(tmp_path, server, _model_items(), {"order": {"kind": "tool_order"}}, gate={"value": 0.0})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--model", "m1", "--model", "m2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _models_asked(server) == {"own": {"m1", "m2"}, "plain": {"m1", "m2"}}


def test_a_bad_config_model_names_the_field(tmp_path: Path) -> None:
    item = json.loads(json.dumps(PLAN_ITEM))
    item["data"]["config"] = {"model": 4}
    suite = write_suite(tmp_path, [], dataset="data.json", tools={}, graders={"order": {"kind": "tool_order"}})
    (tmp_path / "data.json").write_text(json.dumps([item]), encoding="utf-8")
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "item 1: data.config.model: expected the agent model's name" in result.stderr


# --- tool_order subset / superset, as agentevals means them ----------------------------------------------------


def test_subset_and_superset_mean_what_agentevals_means(server: ScriptedServer, tmp_path: Path) -> None:
    """agentevals on this trajectory (read_file only, expected list_files then read_file): subset 1.0 (every
    call is an expected one), superset 0.0 (list_files was never called)."""
    server.script = agent_script({"config": [call("read_file", {"path": "config.yaml"}), text("port: 8080")]})
    suite = _tutorial_suite(tmp_path, server, [PLAN_ITEM], {
        "subset": {"kind": "tool_order", "mode": "subset"},
        "superset": {"kind": "tool_order", "mode": "superset"},
    }, gate={"value": 0.0})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["subset"]["score"] == 1.0
    assert line["grades"]["superset"]["score"] == 0.0
    assert "missing 'list_files'" in line["grades"]["superset"]["rationale"]


def test_a_repeated_call_is_beyond_a_subset() -> None:
    """agentevals matches each expected call to one call of the agent: calling read_file twice where the
    expected list has it once is not a subset."""
    sample = Sample(input="q", expected_tool_order=["list_files", "read_file"])
    calls = traj("list_files", "read_file", "read_file")
    assert run(_order("subset"), calls, sample).score == 0.0
    assert run(_order("superset"), calls, sample).score == 1.0


def test_validate_notes_the_changed_meaning_of_subset_and_superset(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "x"}], graders={
        "sub": {"kind": "tool_order", "mode": "subset"},
        "sup": {"kind": "tool_order", "mode": "superset"},
        "seq": {"kind": "tool_order", "mode": "subsequence"},
    })
    result = run_cli("validate", str(suite))
    assert result.returncode == 0, result.stderr  # a note, not an error: the suite runs as it is
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    sub = [n for n in notes if "graders.sub.mode" in n]
    sup = [n for n in notes if "graders.sup.mode" in n]
    assert len(sub) == 1 and "agentevals" in sub[0] and "write mode: superset" in sub[0]
    assert len(sup) == 1 and "agentevals" in sup[0] and "write mode: subset" in sup[0]
    assert not any("graders.seq" in n for n in notes)


# --- letta-evals' turns_passed ----------------------------------------------------------------------------------


def _per_turn_suite(tmp_path: Path, server: ScriptedServer, letta: bool) -> Path:
    """One per-turn row graded by a 0-1 judge that gives every turn 0.8: above the grader's threshold, below
    letta-evals' 1.0. The same grader, in a letta-evals file (`num_runs`, `kind: rubric`) or in ours."""
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "walk", "input": ["first question", "second question"],
                                                     "ground_truth": ["one", "two"]}) + "\n", encoding="utf-8")
    grader = {"kind": "rubric" if letta else "model_judge", "prompt": "Is {submission} like {ground_truth}?",
              "model": "scripted", "scale": "0-1"}
    suite: dict[str, Any] = {
        "name": "turns", "dataset": "data.jsonl",
        "target": {"kind": "openai_chat", "base_url": server.url, "model": "scripted", "api_key": "sk-test",
                   "max_retries": 0, "timeout": 10},
        "graders": {"quality": grader},
        "gate": {"metric_key": "quality", "metric": "avg_score", "op": "gte", "value": 0.5} if letta else
        {"kind": "simple", "metric_key": "quality", "aggregation": "avg_score", "op": "gte", "value": 0.5},
    }
    if letta:
        suite["num_runs"] = 1
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


def test_a_letta_suite_counts_a_turn_passed_at_a_perfect_score(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"first": [text("one-ish")], "second": [text("two-ish")]},
                                 judge=lambda body: judge_score(0.8))
    turns = {}
    for letta in (True, False):
        folder = tmp_path / ("letta" if letta else "ours")
        folder.mkdir()
        suite = _per_turn_suite(folder, server, letta)
        result = run_cli("run", str(suite), "-o", str(folder / "out"))
        assert result.returncode == 0, result.stdout + result.stderr
        (line,) = read_jsonl(folder / "out" / "results.jsonl")
        grade = line["grades"]["quality"]
        assert grade["score"] == 0.8 and [t["score"] for t in grade["per_turn_grades"]] == [0.8, 0.8]
        turns[letta] = (grade["metadata"]["turns_passed"], grade["metadata"]["turns_total"], grade["rationale"])
    assert turns[True] == (0, 2, "0/2 turns passed")  # letta-evals: a turn passes at score >= 1.0
    assert turns[False] == (2, 2, "2/2 turns passed")  # ours: at the grader's threshold

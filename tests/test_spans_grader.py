"""`kind: spans`: assertions over an episode's OpenTelemetry spans, run end to end: a `kind: traces` suite over a
trace file, and a real command agent exporting its spans (the OTel SDK, protobuf) to the run's receiver while it
talks to the scripted model server through the real openai client; n/a for a model target; bad assertions exit
2 naming the field."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from evals_cli.graders.span_query import SpanAssertion, check
from evals_cli.models.trajectory import SpanRecord, SpanTree
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

FIXTURES = ROOT / "tests" / "fixtures" / "traces"
AGENT = ROOT / "examples" / "external_agent" / "agent.py"
GATE = {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.0}


def _traces_suite(tmp: Path, graders: dict[str, Any]) -> Path:
    shutil.copy(FIXTURES / "genai.otlp.jsonl", tmp / "traces.jsonl")
    suite = {"name": "traced", "target": {"kind": "traces", "path": "traces.jsonl"}, "graders": graders,
             "gate": GATE}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}


TRACE_ASSERTIONS = [
    {"name": "execute_tool lookup_order", "count": 1},
    {"error": True, "absent": True},
    {"name_matches": "^chat ", "max_duration_s": 5},
    {"name": "invoke_agent support", "attributes": {"gen_ai.agent.name": "support"}},
    {"name": "execute_tool delete_account", "absent": True},
]


def test_a_traces_suite_is_graded_on_its_conversations_spans(tmp_path: Path) -> None:
    graders = {"spans": {"kind": "spans", "assert": TRACE_ASSERTIONS},
               "share": {"kind": "spans", "score": "fraction", "assert": TRACE_ASSERTIONS}}
    result = run_cli("run", str(_traces_suite(tmp_path, graders)), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _results(tmp_path / "out")
    good, bad = rows["order-42"], rows["order-7"]
    assert good["grades"]["spans"]["score"] == 1.0, good["grades"]["spans"]["rationale"]
    # order-7 never looked the order up, and its delete_account call failed (status ERROR): three assertions fail
    grade = bad["grades"]["spans"]
    assert grade["score"] == 0.0 and bad["grades"]["share"]["score"] == 2 / 5
    why = grade["rationale"]
    assert why.startswith("2/5 assertions hold")
    assert 'name "execute_tool lookup_order": 0 span(s), expected exactly 1' in why
    assert 'error true: 1 span(s) ("execute_tool delete_account"), expected none' in why
    assert 'name "execute_tool delete_account": 1 span(s)' in why
    # the spans are kept on the trajectory in the results, with their parent links, status and attributes
    spans = bad["trajectory"]["spans"]["spans"]
    failed = next(s for s in spans if s["name"] == "execute_tool delete_account")
    assert failed["error"] == "unknown tool" and failed["parent_id"] is not None
    assert failed["attributes"]["gen_ai.tool.name"] == "delete_account"


def test_a_command_agents_spans_are_graded(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"port": [call("list_files", {}), call("read_file", {"path": "config.toml"}),
                                           text("The port is 5433.")]})
    target = {"kind": "command", "command": [sys.executable, str(AGENT)],
              "env": {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-test", "AGENT_MODEL": "scripted"}}
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "port", "input": "Which port?"}) + "\n")
    assertions = [{"name_contains": "execute_tool", "under": "invoke_agent project-helper", "count": {"min": 2}},
                  {"name": "chat scripted", "count": 3, "attributes": {"gen_ai.request.model": "scripted"}},
                  {"name": "execute_tool read_file", "has_attributes": ["gen_ai.tool.call.result"]},
                  {"error": True, "absent": True},
                  {"name": "execute_tool write_file", "absent": True},
                  {"name_matches": "^invoke_agent", "max_duration_s": 0.000001}]
    suite = {"name": "external", "target": target, "dataset": "rows.jsonl", "gate": GATE,
             "graders": {"spans": {"kind": "spans", "score": "fraction", "assert": assertions}}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    result = run_cli("run", str(tmp_path / "suite.yaml"), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    row = _results(tmp_path / "out")["port"]
    grade = row["grades"]["spans"]
    # the agent's whole turn cannot take a microsecond: the one failing assertion, named with what it took
    assert grade["score"] == 5 / 6, grade["rationale"]
    assert 'spans with name_matches "^invoke_agent": "invoke_agent project-helper" took ' in grade["rationale"]
    assert "over max_duration_s 1e-06" in grade["rationale"]
    assert row["trajectory"]["spans"]["left_out"] == 0 and len(row["trajectory"]["spans"]["spans"]) == 6


def test_a_model_target_has_no_spans_and_the_grader_is_na(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"hi": [text("hello")]})
    graders = {"spans": {"kind": "spans", "assert": [{"name": "x"}]}}
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi", "ground_truth": "hello"}], base_url=server.url,
                        graders=graders)
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    grade = _results(tmp_path / "out")["a"]["grades"]["spans"]
    assert grade["applicable"] is False and "recorded no spans" in grade["rationale"]
    assert "spans" not in _results(tmp_path / "out")["a"]["trajectory"]


def test_bad_assertions_exit_2_naming_the_field(tmp_path: Path) -> None:
    cases = [({"nme": "x"}, "assert.0.nme: unknown key 'nme'; did you mean 'name'?"),
             ({"name_matches": "(unclosed"}, "not a valid regular expression"),
             ({"error": False}, "{error: true, absent: true}"), ({"name": "x", "absent": True, "count": 2},
                                                                 "takes no count")]
    for assertion, said in cases:
        suite = _traces_suite(tmp_path, {"spans": {"kind": "spans", "assert": [assertion]}})
        result = run_cli("validate", str(suite))
        assert result.returncode == 2, (assertion, result.stdout + result.stderr)
        out = result.stdout + result.stderr
        assert said in out and "graders.spans" in out and "Traceback" not in out, out


def _span(name: str, span_id: str, parent: str | None = None, **attrs: Any) -> SpanRecord:
    return SpanRecord(name=name, span_id=span_id, parent_id=parent, duration_s=1.0, attributes=attrs)


def test_spans_not_kept_leave_what_they_could_change_unknown() -> None:
    tree = SpanTree(spans=[_span("tool a", "1"), _span("tool b", "2")], left_out=3)
    holds = {json.dumps(q): check(SpanAssertion.model_validate(q), tree).holds
             for q in ({"name_contains": "tool", "count": {"min": 2}},  # met among the spans kept
                       {"name_contains": "tool", "count": {"max": 1}},  # over already
                       {"name_contains": "tool", "count": {"max": 4}},  # the 3 left out may match
                       {"name": "c", "absent": True}, {"name": "c"})}
    assert list(holds.values()) == [True, False, None, None, None]
    # a parent among the spans left out: whether an ancestor is named so cannot be said
    chain = SpanTree(spans=[_span("agent", "1"), _span("tool", "2", parent="1"), _span("orphan", "3", parent="9")],
                     left_out=1)
    under = [check(SpanAssertion.model_validate({"name": n, "under": "agent"}), chain).holds
             for n in ("tool", "orphan")]
    assert under == [True, None]


def test_kept_spans_are_masked_and_bounded() -> None:
    from evals_cli.models.trajectory import MAX_ATTRIBUTES, MAX_VALUE_CHARS
    from evals_cli.traces.masking import TraceCleaner
    from evals_cli.traces.otlp import Span
    from evals_cli.traces.span_records import span_tree

    secret = "sk-live-" + "9" * 24
    attributes = {"llm.api_key": secret, "note": f"called with {secret}", "big": "x" * 5000,
                  **{f"k{i}": i for i in range(MAX_ATTRIBUTES)}}
    span = Span("t" * 32, "s" * 16, None, "chat", 1, 2, attributes, "f:1")
    tree = span_tree([span], TraceCleaner([span]))
    kept = tree.spans[0]
    assert secret not in json.dumps(tree.model_dump())
    assert len(kept.attributes["big"]) < MAX_VALUE_CHARS + 200 and "truncated by evals: 5000" in kept.attributes["big"]
    assert len(kept.attributes) == MAX_ATTRIBUTES and kept.attributes_left_out == 3

"""`evals validate` checks environments, effects and expected states without calling a model; `evals list`
shows the effects; a python agent gets the same stateful tools."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

from evals_cli.catalog import render_section
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.targets.base import TargetContext
from evals_cli.targets.python_agent import PythonAgent, PythonTarget
from tests.helpers import run_cli, write_suite

ENV = {"files": {"config.json": '{"port": 8080}', "README.md": "# demo"},
       "records": {"orders": [{"id": "1", "status": "delivered"}]}}
TOOLS = {
    "read_file": {"description": "Read.", "parameters": {"path": "p"}, "effect": "files.read"},
    "get_order": {"description": "Get.", "parameters": {"order_id": "o"},
                  "effect": {"records.get": "orders", "key": "order_id"}},
}


def validate(tmp: Path, rows: list[dict[str, Any]], tools: dict[str, Any] | None = None,
             env: dict[str, Any] | None = None, graders: dict[str, Any] | None = None) -> tuple[int, str]:
    suite = write_suite(tmp, rows, base_url="http://127.0.0.1:9/v1", tools=tools or TOOLS,
                        environment=ENV if env is None else env, graders=graders or {"final": {"kind": "final_state"}})
    result = run_cli("validate", str(suite))
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout + result.stderr


def test_a_stateful_suite_validates(tmp_path: Path) -> None:
    code, out = validate(tmp_path, [{"id": "a", "input": "x", "expected_state": {
        "files": {"config.json": {"json_subset": {"port": 3000}}}, "unchanged": ["README.md", "orders/1"]}}])
    assert code == 0, out


def test_an_unknown_effect_gets_a_did_you_mean(tmp_path: Path) -> None:
    tools = {"read_file": {"description": "Read.", "parameters": {"path": "p"}, "effect": "files.raed"}}
    code, out = validate(tmp_path, [{"id": "a", "input": "x"}], tools=tools)
    assert code == 2
    assert "tools.read_file.effect" in out and "unknown effect 'files.raed'; did you mean 'files.read'?" in out


def test_a_key_argument_the_tool_does_not_declare(tmp_path: Path) -> None:
    tools = {"get_order": {"description": "Get.", "parameters": {"id": "o"},
                           "effect": {"records.get": "orders", "key": "order_id"}}}
    code, out = validate(tmp_path, [{"id": "a", "input": "x"}], tools=tools)
    assert code == 2
    assert "tools.get_order" in out
    assert "effect.key: records.get reads argument 'order_id', which the tool does not declare (parameters: id)" in out


def test_expected_paths_and_records_outside_the_environment(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "x", "expected_state": {
        "files": {"confg.json": {"json_subset": {"port": 3000}}}, "unchanged": ["READMe.md"],
        "records": {"order": {"1": {"status": "x"}}}}}]
    code, out = validate(tmp_path, rows)
    assert code == 2
    assert "data.jsonl:1" in out
    assert ("expected_state.files.confg.json: not in the environment and no tool can create files; did you mean "
            "'config.json'?") in out
    assert "expected_state.unchanged: 'READMe.md' is not in the environment; did you mean 'README.md'?" in out
    assert "expected_state.records.order: the environment has no such collection; did you mean 'orders'?" in out


def test_a_records_collection_the_environment_lacks(tmp_path: Path) -> None:
    code, out = validate(tmp_path, [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}],
                         env={"files": {"a.txt": "x"}, "records": {"order": []}})
    assert code == 2
    assert ("tools.get_order.effect: acts on records collection 'orders', which the environment does not declare "
            "(samples a, b); add environment.records.orders; did you mean 'order'?") in out


def test_a_bad_environment_or_expected_state_names_the_field(tmp_path: Path) -> None:
    code, out = validate(tmp_path, [{"id": "a", "input": "x", "expected_state": {"files": {"a": {"jsn_subset": 1}}}}],
                         env={"records": {"orders": [{"status": "x"}]}})
    assert code == 2
    assert "environment.records" in out and "a record needs an 'id' field" in out


def test_an_expected_state_without_any_environment(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "x", "expected_state": {"exists": ["a.txt"]}}],
                        graders={"final": {"kind": "final_state"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "expected_state: the sample has no environment" in result.stderr


def test_evals_list_shows_the_effects_and_the_final_state_grader() -> None:
    effects = render_section("effects", 200)
    for op in ("files.read", "files.write", "files.append", "files.list", "files.delete", "files.exists",
               "records.get", "records.list", "records.search", "records.create", "records.update", "records.delete"):
        assert f"\n{op} — " in effects
    assert 'key: tool parameter = "id", required' in effects
    graders = render_section("graders", 200)
    assert "final_state — The final files and records against an expected state" in graders
    assert "expected_state: ExpectedState | null = null" in graders


def test_a_python_agent_gets_the_same_stateful_tools(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(textwrap.dedent("""
        def run_agent(sample, tools):
            before = tools.read_file(path="config.json")
            tools.write_file(path="config.json", content=before.replace("8080", "3000"))
            tools.next_turn()
            return [before, tools.read_file(path="config.json"), tools.read_file(path="gone.txt")]
    """), encoding="utf-8")
    tools = {**{k: ToolSpec.model_validate(v) for k, v in TOOLS.items()},
             "write_file": ToolSpec.model_validate({"parameters": {"path": "p", "content": "c"},
                                                    "effect": "files.write"})}
    spec = PythonTarget(callable="agent.py:run_agent")
    agent = PythonAgent(spec, TargetContext(tools=tools, base_dir=tmp_path))
    sample = Sample.model_validate({"id": "p", "input": ["a", "b", "c"], "environment": ENV})
    first = asyncio.run(agent.run(sample))
    again = asyncio.run(agent.run(sample))  # a second run (a repeat) starts from the declared world again
    for trajectory in (first, again):
        assert [t.answer for t in trajectory.turns] == ['{"port": 8080}', '{"port": 3000}',
                                                        "Error: gone.txt: no such file"]
        assert [(c.target, c.after) for c in trajectory.state_changes or []] == [("config.json", '{"port": 3000}')]
        [write] = [c for c in trajectory.tool_calls if c.name == "write_file"]
        assert write.effect is not None and write.effect.changed
    assert json.loads(first.tool_calls[0].result) == {"port": 8080}

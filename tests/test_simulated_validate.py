"""`evals validate` and `evals list` on simulated users: `user:` blocks and the `user_simulator:` block are checked
without calling any model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer


def validate(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], **overrides: Any) -> tuple[int, str]:
    suite = write_suite(tmp, rows, base_url=server.url, graders={"a": {"kind": "match", "function": "contains"}},
                        **overrides)
    result = run_cli("validate", str(suite))
    assert server.requests == []  # no model was called, not even GET /models
    return result.returncode, result.stdout + result.stderr


def test_unknown_keys_and_bounds_name_the_row_and_field(tmp_path: Path, server: ScriptedServer) -> None:
    code, output = validate(tmp_path, server, [
        {"id": "a", "user": {"persona": "p", "goal": "g", "max_turn": 3}},
        {"id": "b", "user": {"persona": "p", "max_turns": 0}},
        {"id": "c", "user": {"persona": "p", "stop": "wave"}},
    ])
    assert code == 2
    assert "data.jsonl:1: sample 'a': user.max_turn: unknown key 'max_turn'; did you mean 'max_turns'?" in output
    assert "data.jsonl:2: sample 'b': user.max_turns: input should be greater than or equal to 1" in output
    assert "data.jsonl:3: sample 'c': user.stop" in output and "'token' or 'tool'" in output
    assert "Traceback" not in output


def test_the_suite_blocks_are_strict_too(tmp_path: Path, server: ScriptedServer) -> None:
    code, output = validate(tmp_path, server, [{"id": "a", "user": {"goal": "g"}}],
                            user_simulator={"model": "u", "temprature": 1}, user={"max_turns": -1})
    assert code == 2
    assert "user_simulator.temprature: unknown key 'temprature'; did you mean 'temperature'?" in output
    assert "user.max_turns" in output


def test_a_user_needs_something_to_play(tmp_path: Path, server: ScriptedServer) -> None:
    code, output = validate(tmp_path, server, [
        {"id": "nothing", "user": {"knows": {"x": 1}}},
        {"id": "too-many", "user": {"goal": "g", "script": ["a", "b"], "max_turns": 1}},
        {"id": "per-turn", "input": ["a", "b"], "ground_truth": ["x", "y"], "user": {"goal": "g"}},
        {"id": "from-suite", "user": {"knows": {"x": 1}}},
    ], user=None)
    assert code == 2
    assert "data.jsonl:1: user: no persona and no goal for the simulator to play" in output
    assert "data.jsonl:2: user.max_turns 1 is less than the 2 scripted user messages" in output
    assert "data.jsonl:3: per-turn ground_truth cannot follow a simulated user" in output


def test_suite_defaults_give_rows_what_they_lack(tmp_path: Path, server: ScriptedServer) -> None:
    code, output = validate(tmp_path, server, [{"id": "a", "user": {"knows": {"x": 1}}}],
                            user={"goal": "a refund"})
    assert code == 0, output
    assert "1 row(s) with a simulated user" in output and "user simulator endpoint" in output


def test_the_simulator_endpoint_must_resolve(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "agent.py").write_text("def agent(sample, tools):\n    return 'ok'\n", encoding="utf-8")
    suite = write_suite(tmp_path, [{"id": "a", "user": {"goal": "g"}}], graders={"a": {"kind": "match",
                                                                                      "function": "contains"}})
    data = yaml.safe_load(suite.read_text())
    data["target"] = {"kind": "python", "callable": "agent.py:agent"}  # no model behind the agent to fall back to
    suite.write_text(yaml.safe_dump(data))
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert "user_simulator: no model set for the simulated users; give user_simulator.model" in result.stdout + \
        result.stderr
    data["user_simulator"] = {"model": "u", "base_url": server.url}
    suite.write_text(yaml.safe_dump(data))
    assert run_cli("validate", str(suite)).returncode == 0
    assert server.requests == []


def test_a_bad_simulator_template_is_a_config_error(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "user.j2").write_text("You are {{ persona }} and {{ nope }}", encoding="utf-8")
    code, output = validate(tmp_path, server, [{"id": "a", "user": {"goal": "g"}}],
                            user_simulator={"model": "u", "system_prompt_file": "user.j2"})
    assert code == 2 and "the user simulator's system prompt does not render for this row" in output
    (tmp_path / "user.j2").write_text("{% if %}", encoding="utf-8")
    code, output = validate(tmp_path, server, [{"id": "a", "user": {"goal": "g"}}],
                            user_simulator={"model": "u", "system_prompt_file": "user.j2"})
    assert code == 2 and "user_simulator.system_prompt_file: user.j2: line 1: Jinja2 syntax error" in output
    code, output = validate(tmp_path, server, [{"id": "a", "user": {"goal": "g"}}],
                            user_simulator={"model": "u", "system_prompt_file": "missing.j2"})
    assert code == 2 and "user_simulator.system_prompt_file: missing.j2 not found" in output


def test_a_custom_template_is_what_the_simulator_gets(tmp_path: Path, server: ScriptedServer) -> None:
    from tests.scripted_server import text

    (tmp_path / "user.j2").write_text("Play {{ persona }}; want {{ goal }}; know {{ knows.order_id }}; "
                                      "stop with {{ stop_token }}", encoding="utf-8")
    # a ground truth gives the grader something to check: a run with nothing checked has no verdict (exit 3)
    suite = write_suite(tmp_path, [{"id": "a", "ground_truth": "hello",
                                    "user": {"persona": "Sam", "goal": "refund", "knows": {"order_id": 7},
                                             "max_turns": 1}}],
                        base_url=server.url, graders={"a": {"kind": "match", "function": "contains"}},
                        user_simulator={"system_prompt_file": "user.j2"})
    server.script = lambda path, body: text("hello")
    assert run_cli("run", str(suite), "-o", str(tmp_path / "out"), "-q").returncode in (0, 1)
    [simulator] = [r["body"] for r in server.requests if "user" in r["body"]]
    assert simulator["messages"][0] == {"role": "system",
                                        "content": "Play Sam; want refund; know 7; stop with ###STOP###"}


def test_list_shows_the_user_options() -> None:
    from evals_cli.catalog import render_section

    text = render_section("users", 120)
    for option in ("persona:", "goal:", "knows:", "first_message:", "script:", "max_turns: int = 8",
                   'stop: "token" | "tool" = "token"', "sees_tools: bool = false", "user_simulator:",
                   "system_prompt_file:", "seed:", "temperature:"):
        assert option in text, option
    assert "models:" not in text  # one simulator model: the target's list of models does not apply
    assert json.dumps("###STOP###")[1:-1] in text


def test_max_turns_must_be_a_whole_number_not_a_boolean() -> None:
    import pydantic
    import pytest

    from evals_cli.models.simulated_user import UserSpec

    with pytest.raises(pydantic.ValidationError, match="max_turns"):
        UserSpec.model_validate({"goal": "g", "max_turns": True})
    assert UserSpec.model_validate({"goal": "g", "max_turns": 3}).max_turns == 3

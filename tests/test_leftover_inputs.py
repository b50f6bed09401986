"""Inputs that were accepted and then did nothing, each now exit 2 naming the field and the fix: `tolerance`
beside a key that is no matcher key in an expected record field, a simulated user whose first message is only
###STOP### (a sample of 0 turns), and `--replay-user` on a run with no simulated user to replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer, text
from tests.test_replay_user import recorded, run

__all__ = ["recorded"]  # the fixture, used here by name


def _validate(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], **overrides: Any) -> tuple[int, str]:
    suite = write_suite(tmp, rows, base_url=server.url, graders={"a": {"kind": "match", "function": "contains"}},
                        **overrides)
    result = run_cli("validate", str(suite))
    assert "Traceback" not in result.stdout + result.stderr
    return result.returncode, result.stdout + result.stderr


def test_tolerance_beside_a_non_matcher_key_is_refused(tmp_path: Path, server: ScriptedServer) -> None:
    environment = {"records": {"orders": [{"id": 1, "price": 10.0, "note": {"tolerance": 1, "value": 2}}]}}

    def row(fields: dict[str, Any]) -> dict[str, Any]:
        return {"id": "r", "input": "x", "environment": environment,
                "expected_state": {"records": {"orders": {"1": fields}}}}

    code, said = _validate(tmp_path, server, [row({"price": {"tolerance": 0.5, "value": 10}})])
    assert code == 2, said
    assert "orders.1.price: tolerance beside value, which is not a matcher key" in said and "exact:" in said
    code, said = _validate(tmp_path, server, [row({"price": {"tolerance": 0.5, "exact": 10},
                                                   "note": {"exact": {"tolerance": 1, "value": 2}}})])
    assert code == 0, said  # a matcher, and an object holding such keys under exact:


def test_a_first_message_that_is_only_the_stop_token_is_refused(tmp_path: Path, server: ScriptedServer) -> None:
    user = {"persona": "p", "goal": "g", "first_message": "###STOP###"}
    code, said = _validate(tmp_path, server, [{"id": "s", "user": user}])
    assert code == 2, said
    assert "data.jsonl:1: user: the first scripted message" in said and "0 turns" in said
    user["first_message"] = "bye now ###STOP###"  # words before the token are sent and answered: one turn
    code, said = _validate(tmp_path, server, [{"id": "s", "user": user}])
    assert code == 0, said


def test_replay_user_on_a_run_without_simulated_users_is_exit_2(recorded: tuple[Any, Path, Path],
                                                               server: ScriptedServer, tmp_path: Path) -> None:
    _, _, run_a = recorded
    server.script = lambda path, body: text("refund done")
    (tmp_path / "plain").mkdir()
    plain = write_suite(tmp_path / "plain", [{"id": "p", "input": "refund?", "ground_truth": "refund"}],
                        base_url=server.url, graders={"answer": {"kind": "tool", "function": "contains"}})
    code, _, said = run(plain, tmp_path / "b", "--replay-user", str(run_a))
    assert code == 2, said
    assert f"--replay-user {run_a}" in said and "no user to replay" in said
    assert server.requests == [] and not (tmp_path / "b" / "results.jsonl").exists()

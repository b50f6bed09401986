"""Credential-shaped text evals-cli did not write itself (a traced conversation, an MCP result, an echoed reply)
is masked in everything it writes: one test per key shape, ordinary text left alone, and end to end through a
trace (results, the session file, both HTML reports) and an MCP server's plain-named env value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals_cli.endpoints.secrets import MASK, Redactor
from tests.helpers import run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, text

SHAPES = {
    "openai": "sk-1234567890abcdefghijT3BlbkFJ1234567890abcdefgh",
    "openai project": "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcd-_EfGh",
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhAA",
    "aws access key id": "AKIAIOSFODNN7EXAMPL3",
    "github classic": "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "github oauth": "gho_1234567890abcdefghijABCDEFGHIJ123456",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQs",
}
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_key_shape_is_masked_in_free_text(shape: str) -> None:
    key = SHAPES[shape]
    masked = Redactor()(f'the key is {key}, and "{key}" again')
    assert key not in masked and masked == f'the key is {MASK}, and "{MASK}" again'
    line = json.dumps({"content": f"first line\n{key}\n\t{key}"})  # as a results line holds it: after \\n
    assert key not in Redactor()(line), line


def test_an_aws_secret_access_key_is_masked_beside_its_key_id_or_its_name() -> None:
    redact = Redactor()
    assert redact(f"id AKIAIOSFODNN7EXAMPL3 secret {AWS_SECRET}") == f"id {MASK} secret {MASK}"
    assert redact(f"aws_secret_access_key = {AWS_SECRET}") == f"aws_secret_access_key = {MASK}"
    assert AWS_SECRET not in redact(json.dumps(f"AKIAIOSFODNN7EXAMPL3\n{AWS_SECRET}"))
    assert AWS_SECRET in redact(f"a 40-character token alone: {AWS_SECRET}")  # no hint: not taken for one


def test_ordinary_text_is_left_alone() -> None:
    ordinary = ("task-list and risk-free, sk-learn, sk-test, a skeleton key; ghost_town, gh_pages; AKIA is a word; "
                "xoxo; eyJ alone; AIza short; the commit 3f786850e387550fdab836ed7e6dc881de23001b; "
                "uuid 123e4567-e89b-12d3-a456-426614174000; sk-another-key-entirely; Basic research")
    assert Redactor()(ordinary) == ordinary
    sha_near_a_key = "commit 3f786850e387550fdab836ed7e6dc881de23001b for AKIAIOSFODNN7EXAMPL3"
    assert Redactor()(sha_near_a_key) == f"commit 3f786850e387550fdab836ed7e6dc881de23001b for {MASK}"


def test_masking_the_shapes_stays_linear_on_hostile_text() -> None:
    import time

    redact = Redactor()
    for hostile in ("sk-" * 200_000, "AKIA" + "A" * 400_000, "eyJ" + "a" * 100 + "." * 100_000,
                    "AKIAIOSFODNN7EXAMPL3 " + "Ab1/" * 100_000, "ghp_" * 100_000):
        started = time.monotonic()
        redact(hostile)
        assert time.monotonic() - started < 1.0, hostile[:20]


def _trace(user: str, answer: str) -> str:
    span = {"traceId": "7" * 32, "spanId": "1" * 16, "name": "chat m", "startTimeUnixNano": str(10**18),
            "endTimeUnixNano": str(10**18 + 10**9),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.conversation.id", "value": {"stringValue": "leaky"}},
                {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": user}]}])}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}],
                      "finish_reason": "stop"}])}}]}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"


def test_keys_in_a_traced_conversation_are_masked_in_results_sessions_and_both_reports(tmp_path: Path) -> None:
    keys = [SHAPES["openai project"], "AKIAIOSFODNN7EXAMPL3", AWS_SECRET, SHAPES["github classic"]]
    path = tmp_path / "trace.otlp.jsonl"
    path.write_text(_trace(f"my keys: {keys[0]} and {keys[1]} / {keys[2]}", f"use {keys[3]} then"),
                    encoding="utf-8")
    out = tmp_path / "out"
    analyzed = run_cli("analyze", str(path), "--no-judge", "-o", str(out), "--html", str(tmp_path / "a.html"))
    assert analyzed.returncode in (0, 1), analyzed.stdout + analyzed.stderr
    report = run_cli("report", str(out), "--html", str(tmp_path / "b.html"))
    written = [p for p in out.rglob("*") if p.is_file()] + [tmp_path / "a.html", tmp_path / "b.html"]
    assert any(p.name == "traced_sessions.jsonl" for p in written) and (out / "results.jsonl").exists()
    for file in written:
        content = file.read_text(encoding="utf-8")
        for key in keys:
            assert key not in content, f"{key[:8]} in {file.name}"
    for said in (analyzed.stdout, analyzed.stderr, report.stdout, report.stderr):
        assert not any(key in said for key in keys)
    assert "my keys: ***" in (out / "traced_sessions.jsonl").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_plain_named_mcp_env_value_shaped_like_a_key_is_masked(tmp_path: Path, server: ScriptedServer) -> None:
    from tests.test_mcp import calls_of, demo, mcp_suite, run

    key = SHAPES["github classic"]
    server.script = agent_script({"env": [call("env_value", {"name": "REPO_ACCESS"}), text(f"it is {key}")]})
    suite = mcp_suite(tmp_path, server, [{"id": "e", "input": "env", "ground_truth": "it is"}],
                      {"demo": demo(env={"REPO_ACCESS": key}, include=["env_value"])})
    code, [line], said = run(tmp_path, suite)
    assert code == 0, said
    assert calls_of(line)[0]["result"] == MASK  # the server did answer the value; it was masked as written
    assert key not in (tmp_path / "out" / "results.jsonl").read_text() and key not in said

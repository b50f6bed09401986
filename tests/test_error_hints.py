"""Error messages point at the real cause: the setting the URL came from, a missing Responses API, and the queue a
local server makes requests wait in."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import yaml

from evals_cli.endpoints.errors import classify
from evals_cli.endpoints.httpx_compat import httpx
from evals_cli.endpoints.resolve import Endpoint
from tests.helpers import run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, text

ROWS = [{"id": f"s{i}", "input": "db host?", "ground_truth": "x"} for i in range(3)]
UNREACHABLE = "http://127.0.0.1:9/v1"


def error_of(out: Path) -> str:
    return str(json.loads((out / "results.jsonl").read_text().splitlines()[0])["error"]["message"])


def test_unreachable_url_from_the_command_line_names_base_url(server: ScriptedServer, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS, base_url=server.url)  # the suite's URL is fine: the option's is not
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--base-url", UNREACHABLE)
    assert result.returncode == 3
    assert "cannot reach agent endpoint" in result.stderr and "check --base-url" in result.stderr
    assert "target.base_url" not in result.stderr and "EVAL_AGENT_BASE_URL" not in result.stderr


def test_unreachable_url_from_the_suite_names_the_suite(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS, base_url=UNREACHABLE)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3 and "check target.base_url in the suite" in result.stderr


def test_unreachable_url_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS)
    data = yaml.safe_load(suite.read_text())
    del data["target"]["base_url"]
    suite.write_text(yaml.safe_dump(data))
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), env={"EVAL_AGENT_BASE_URL": UNREACHABLE})
    assert result.returncode == 3 and "check EVAL_AGENT_BASE_URL and" in result.stderr


def test_responses_target_against_a_server_without_responses_api(server: ScriptedServer, tmp_path: Path) -> None:
    def script(path: str, body: dict[str, object]) -> object:
        if path.rstrip("/").endswith("/responses"):  # what llama.cpp or an older vLLM answer
            return Reply({"error": {"message": "Not Found", "code": 404}}, status=404)
        return agent_script({"db": [text("x")]})(path, body)

    server.script = script
    suite = write_suite(tmp_path, ROWS, base_url=server.url, target={"kind": "openai_responses"})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert "no Responses API" in result.stderr and "kind: openai_chat" in result.stderr
    assert "model name or base URL is wrong" not in result.stderr


def test_responses_target_with_an_unknown_model_still_says_model(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "The model `scripted` does not exist"}}, 404)
    suite = write_suite(tmp_path, ROWS, base_url=server.url, target={"kind": "openai_responses"})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert "model name or base URL is wrong" in result.stderr and "Responses API" not in result.stderr


def test_timeout_against_a_local_server_mentions_its_queue(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: Reply(text("late"), delay=1.5)
    suite = write_suite(tmp_path, ROWS[:1], base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--timeout", "0.3")
    message = error_of(tmp_path / "out")
    assert "timed out after 0.3s" in message
    assert "waiting in the server's queue" in message and "-c 1" in message and "max_tokens" in message
    assert result.returncode == 3


def test_timeout_against_a_remote_server_keeps_the_plain_hint() -> None:
    endpoint = Endpoint(role="agent", base_url="https://api.example.com/v1", api_key="k", model="m", timeout=5)
    found = classify(openai.APITimeoutError(request=httpx.Request("POST", "https://api.example.com/v1/x")), endpoint)
    assert found.category == "timeout" and "queue" not in found.message and "raise timeout" in found.message
    local = Endpoint(role="agent", base_url="http://localhost:8080/v1", api_key="k", model="m", timeout=5)
    assert "queue" in classify(openai.APITimeoutError(request=httpx.Request("POST", "http://localhost:8080/v1")),
                               local).message


def test_a_suites_default_endpoint_with_nothing_there_is_no_endpoint_configured(tmp_path: Path,
                                                                                server: ScriptedServer) -> None:
    """`${VAR:-http://127.0.0.1:PORT/v1}` with VAR unset and nothing listening: said before any sample (exit 2,
    naming the variable and the flag), not found out by every sample in flight."""
    suite = write_suite(tmp_path, ROWS, base_url="${EVALS_TEST_AGENT_URL:-" + UNREACHABLE + "}")
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "EVALS_TEST_AGENT_URL is not set" in result.stderr and "--base-url" in result.stderr
    assert "no sample was run" in result.stderr and not (tmp_path / "out" / "results.jsonl").exists()
    # the variable set to the same dead URL is an endpoint configured: every sample's error, exit 3, as before
    result = run_cli("run", str(suite), "-o", str(tmp_path / "set"), env={"EVALS_TEST_AGENT_URL": UNREACHABLE})
    assert result.returncode == 3 and "cannot reach agent endpoint" in result.stderr
    # a default with a server behind it runs
    server.script = lambda path, body: text("x")
    default_up = write_suite(tmp_path, ROWS, base_url="${EVALS_TEST_AGENT_URL:-" + server.url + "}")
    assert run_cli("run", str(default_up), "-o", str(tmp_path / "up")).returncode in (0, 1)


def test_no_endpoint_and_no_key_anywhere_is_said_before_any_sample(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS)
    data = yaml.safe_load(suite.read_text())
    del data["target"]["base_url"], data["target"]["api_key"]
    suite.write_text(yaml.safe_dump(data))
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no agent endpoint is configured" in result.stderr
    assert "EVAL_AGENT_BASE_URL" in result.stderr and "--base-url" in result.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()

"""Models on different endpoints: `target.models` entries `{model, base_url, api_key}` and `--model NAME@URL`, run
against two scripted servers on different ports, one model each. Each server must receive only its own model's
requests, with that model's key; the side-by-side view (terminal, matrix.json, HTML) names each model's endpoint
with credentials masked; a resumed run keeps the endpoints given on the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.errors import ConfigError
from evals_cli.run_options import RunOptions, split_model_url
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, last_user, text

ROWS = [{"id": "capital", "input": "capital of France?", "ground_truth": "Paris"},
        {"id": "sum", "input": "math: 2+2?", "ground_truth": "4"}]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}
RIGHT = {"capital": "Paris", "math": "4"}
DEAD = "http://127.0.0.1:9/v1"  # the suite's own endpoint: nothing may go there
URL_SECRET = "sk-in-the-url-777"
MODEL_KEY = "sk-model-b-key-555"


def _answering(body: dict[str, Any]) -> Any:
    user = last_user(body)
    return next((text(right) for key, right in RIGHT.items() if key in user), text("no idea"))


@pytest.fixture
def two_servers() -> Iterator[tuple[ScriptedServer, ScriptedServer]]:
    a = ScriptedServer(lambda path, body: _answering(body)).start()
    b = ScriptedServer(lambda path, body: _answering(body)).start()
    yield a, b
    a.stop()
    b.stop()


def _agent_calls(server: ScriptedServer) -> list[tuple[str, str]]:
    return [(r["body"]["model"], r["headers"].get("authorization", "")) for r in server.requests]


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://user:{URL_SECRET}@")


def _everything_written(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file())


def test_suite_entries_send_each_model_to_its_own_server(tmp_path: Path,
                                                         two_servers: tuple[ScriptedServer, ScriptedServer]) -> None:
    a, b = two_servers
    models = [{"model": "local-a", "base_url": _with_credentials(a.url)},
              {"model": "hosted-b", "base_url": b.url, "api_key": MODEL_KEY}]
    suite = write_suite(tmp_path, ROWS, base_url=DEAD, graders=GRADERS, target={"model": None, "models": models})
    data = yaml.safe_load(suite.read_text())
    del data["target"]["model"]
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "run"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    # each server heard only its model, b with the key of its entry (a's credential is in its URL: httpx sends it)
    assert [m for m, _ in _agent_calls(a)] == ["local-a"] * 2 and not any(MODEL_KEY in h for _, h in _agent_calls(a))
    assert _agent_calls(b) == [("hosted-b", f"Bearer {MODEL_KEY}")] * 2
    matrix = json.loads((out / "matrix.json").read_text())
    shown = {m["model"]: (m["base_url"], m["base_url_from"]) for m in matrix["models"]}
    assert shown == {"local-a": (a.url.replace("http://", "http://user:***@"), "target.models (local-a)"),
                     "hosted-b": (b.url, "target.models (hosted-b)")}
    [row] = [line for line in result.stdout.splitlines() if line.strip().startswith("endpoint")]
    assert b.url in row and "user:***@127.0.0.1" in row
    html = tmp_path / "matrix.html"
    report = run_cli("report", str(out), "--html", str(html))
    assert report.returncode == 0, report.stdout + report.stderr
    page = html.read_text(encoding="utf-8")
    assert f"<td>{b.url}</td>" in page and "user:***@127.0.0.1" in page
    for text_out in (result.stdout, result.stderr, report.stdout, page, _everything_written(out)):
        assert URL_SECRET not in text_out and MODEL_KEY not in text_out


def test_model_at_url_on_the_command_line(tmp_path: Path, two_servers: tuple[ScriptedServer, ScriptedServer]) -> None:
    a, b = two_servers
    suite = write_suite(tmp_path, ROWS, base_url=DEAD, graders=GRADERS)
    out = tmp_path / "run"
    result = run_cli("run", str(suite), "-o", str(out), "--model", f"small@{a.url}", "--model", f"big@{b.url}")
    assert result.returncode == 0, result.stdout + result.stderr
    # no entry in the suite: each model gets the target's key, at its own endpoint
    assert _agent_calls(a) == [("small", "Bearer sk-test")] * 2 and _agent_calls(b) == [("big", "Bearer sk-test")] * 2
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["big", "small"]  # named after the model alone
    matrix = json.loads((out / "matrix.json").read_text())
    assert [(m["model"], m["base_url"], m["base_url_from"]) for m in matrix["models"]] == [
        ("small", a.url, "--model small@URL"), ("big", b.url, "--model big@URL")]
    # one model with its own endpoint is an ordinary run of that model there (over --base-url)
    one = run_cli("run", str(suite), "-o", str(tmp_path / "one"), "--model", f"solo@{b.url}", "--base-url", DEAD)
    assert one.returncode == 0, one.stdout + one.stderr
    assert [m for m, _ in _agent_calls(b)][-2:] == ["solo", "solo"] and len(a.requests) == 2


def test_resume_keeps_the_endpoints_given_on_the_command_line(
        tmp_path: Path, two_servers: tuple[ScriptedServer, ScriptedServer]) -> None:
    """--resume takes no --model: the endpoint each model was given comes back from matrix.json, so the retried
    samples go to the same server, not to the suite's."""
    a, b = two_servers
    b.script = lambda path, body: Reply({"error": {"message": "warming up"}}, status=500)
    suite = write_suite(tmp_path, ROWS, base_url=DEAD, graders=GRADERS)
    out = tmp_path / "run"
    first = run_cli("run", str(suite), "-o", str(out), "--model", f"small@{a.url}", "--model", f"big@{b.url}")
    assert first.returncode == 3 and all(r["error"] for r in read_jsonl(out / "big" / "results.jsonl"))
    b.script = lambda path, body: _answering(body)
    before = len(b.requests)
    resumed = run_cli("run", str(suite), "--resume", str(out), "--retry-errors")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert [m for m, _ in _agent_calls(b)[before:]] == ["big", "big"] and len(a.requests) == 2
    assert all(r["passed"] for r in read_jsonl(out / "big" / "results.jsonl"))


def test_model_at_url_parsing() -> None:
    assert split_model_url("llama3:8b@http://localhost:11434/v1") == ("llama3:8b", "http://localhost:11434/v1")
    assert split_model_url("m@https://u:p@host/v1") == ("m", "https://u:p@host/v1")  # the first @ before a URL
    assert split_model_url("org/model@v2") == ("org/model@v2", None)  # no URL after the @: a plain name
    options = RunOptions(models=["a@http://127.0.0.1:1/v1", "b"])
    assert options.models == ["a", "b"] and options.model_base_urls == {"a": "http://127.0.0.1:1/v1"}
    with pytest.raises(ConfigError, match="given twice"):
        RunOptions(models=["a@http://127.0.0.1:1/v1", "a@http://127.0.0.1:2/v1"])


def test_a_models_entry_is_checked_like_a_name(tmp_path: Path) -> None:
    for models, message in (([{"model": " "}], "entry 0 is an empty model name"),
                            ([{"model": "x"}, "x"], "'x' is listed twice"),
                            ([{"model": "x", "base_urll": "http://h/v1"}], "base_urll")):
        suite = write_suite(tmp_path, ROWS, graders=GRADERS, target={"models": models})
        data = yaml.safe_load(suite.read_text())
        del data["target"]["model"]
        suite.write_text(yaml.safe_dump(data, sort_keys=False))
        result = run_cli("validate", str(suite))
        assert result.returncode == 2 and message in result.stderr, (models, result.stderr)

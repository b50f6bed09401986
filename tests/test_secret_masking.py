"""Secrets never reach an output: credentials in a base URL (userinfo, query keys), the API key a server echoes
back, and secret-looking extra_body values are masked in the error lines, results.jsonl, summary.json, JUnit,
TaskResult, the HTML report, `evals report` and --record files; replay still matches a masked recording."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from evals_cli.endpoints.resolve import Endpoint
from evals_cli.endpoints.secrets import Redactor, mask_url, spec_secrets, url_secrets
from tests.helpers import run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, text

URL_SECRET = "sk-URLPASS-7777"
QUERY_SECRET = "sk-QUERYKEY-8888"
API_SECRET = "sk-APIKEY-9999"
BODY_SECRET = "tok-EXTRABODY-5555"
SENTINELS = (URL_SECRET, QUERY_SECRET, API_SECRET, BODY_SECRET)
ROWS = [{"id": "host", "input": "db host?", "ground_truth": "localhost"},
        {"id": "math", "input": "math: 2+2?", "ground_truth": "4"}]


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://user:{URL_SECRET}@") + f"?api_key={QUERY_SECRET}"


def _assert_clean(paths: list[Path], *texts: str) -> None:
    for path in paths:
        content = path.read_text(encoding="utf-8")
        for sentinel in SENTINELS:
            assert sentinel not in content, f"{sentinel} in {path.name}"
    for text_ in texts:
        for sentinel in SENTINELS:
            assert sentinel not in text_


def test_mask_url_keeps_the_user_and_masks_password_and_query_keys() -> None:
    assert mask_url("http://user:sk-abc@host:8/v1") == "http://user:***@host:8/v1"
    assert mask_url("https://sk-lonetoken@host/v1") == "https://***@host/v1"
    assert mask_url("https://host/v1?api_key=abc&model=x&token=t2") == "https://host/v1?api_key=***&model=x&token=***"
    assert mask_url("http://localhost:11434/v1") == "http://localhost:11434/v1"
    assert set(url_secrets("http://u:p%40ss-word@h/v1?key=k-123456")) == {
        "p%40ss-word", "p@ss-word", "k-123456", "u:p%40ss-word", "u:p@ss-word",  # and what HTTP Basic sends:
        "dTpwQHNzLXdvcmQ=", "dTpwJTQwc3Mtd29yZA=="}  # base64 of the pair, decoded (what httpx sends) and raw


def test_masking_stays_linear_on_hostile_text() -> None:
    """The patterns run on model output: text built to make them backtrack is masked quickly."""
    import time

    redact = Redactor([API_SECRET])
    for hostile in ("a." * 100_000 + "://x@", "http://" + "a@" * 100_000, "?a" * 100_000 + "=1",
                    "Bearer " * 50_000 + "://@=", "x://" + ":" * 200_000 + "@"):
        started = time.monotonic()
        redact(hostile)
        assert time.monotonic() - started < 1.0, hostile[:20]


def test_redactor_masks_values_under_secret_looking_keys_but_not_token_counts() -> None:
    redact = Redactor([API_SECRET])
    value = redact.value({"extra": {"x_api_key": "anything", "Authorization": "Bearer abc"},
                          "usage": {"prompt_tokens": 3, "max_tokens": 9}, "error": f"bad key {API_SECRET}"})
    assert value == {"extra": {"x_api_key": "***", "Authorization": "***"},
                     "usage": {"prompt_tokens": 3, "max_tokens": 9}, "error": "bad key ***"}
    assert "***" in redact("curl -H 'Authorization: Bearer sk-unknown-123456789'")


def test_endpoint_describe_masks_url_credentials() -> None:
    endpoint = Endpoint(role="agent", base_url=_with_credentials("http://h/v1"), api_key="k", model="m")
    assert URL_SECRET not in endpoint.describe() and QUERY_SECRET not in endpoint.describe()
    assert "user:***@h" in endpoint.describe()
    assert set(spec_secrets({"target": {"base_url": endpoint.base_url, "api_key": API_SECRET,
                                        "extra_body": {"auth": {"token": BODY_SECRET}}}})) >= set(SENTINELS)


def test_credentials_in_base_url_and_echoed_key_never_written(server: ScriptedServer, tmp_path: Path) -> None:
    """A 401 that echoes the key: the fatal error line, summary, results, exports and report are all masked."""
    server.script = lambda path, body: Reply({"error": {"message": f"Incorrect API key provided: {API_SECRET}. "
                                                                  f"You used {URL_SECRET} at ?key={QUERY_SECRET}"}},
                                             status=401)
    suite = write_suite(tmp_path, ROWS, base_url=_with_credentials(server.url), target={"api_key": None})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--junit", str(tmp_path / "junit.xml"),
                     "--task-results", str(tmp_path / "tasks.jsonl"), "--record", str(tmp_path / "rec.jsonl"),
                     env={"EVAL_AGENT_API_KEY": API_SECRET},
                     )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "refused the API key" in result.stderr
    assert "user:***@127.0.0.1" in result.stderr
    report = run_cli("report", str(out), "--html", str(tmp_path / "report.html"))
    _assert_clean([*out.iterdir(), tmp_path / "junit.xml", tmp_path / "tasks.jsonl", tmp_path / "report.html",
                   tmp_path / "rec.jsonl"], result.stdout, result.stderr, report.stdout, report.stderr)
    summary = json.loads((out / "summary.json").read_text())
    assert "user:***@" in summary["abort_reason"]


def test_base_url_credentials_from_cli_and_target_file_are_masked(tmp_path: Path) -> None:
    """--base-url and a --target file carrying userinfo: the 'cannot reach' line shows user:***@."""
    suite = write_suite(tmp_path, ROWS)
    target = tmp_path / "target.yaml"
    target.write_text(yaml.safe_dump({"kind": "openai_chat", "model": "m", "max_retries": 0,
                                      "base_url": f"http://user:{URL_SECRET}@127.0.0.1:9/v1?token={QUERY_SECRET}"}))
    for args in (["--base-url", f"http://user:{URL_SECRET}@127.0.0.1:9/v1?token={QUERY_SECRET}"],
                 ["--target", str(target)]):
        out = tmp_path / f"out{len(args[0])}"
        result = run_cli("run", str(suite), "-o", str(out), *args)
        assert result.returncode == 3, result.stderr
        assert "cannot reach agent endpoint http://user:***@127.0.0.1:9/v1?token=***" in result.stderr
        _assert_clean(list(out.iterdir()), result.stdout, result.stderr)


def test_recording_masks_echoed_keys_and_extra_body_and_replay_still_matches(server: ScriptedServer,
                                                                             tmp_path: Path) -> None:
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text(f"localhost {API_SECRET}")],
                                  "math": [text("4")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url,
                        target={"api_key": "${EVAL_AGENT_API_KEY}",
                                "extra_body": {"metadata": {"auth_token": BODY_SECRET}, "seed": 1}})
    rec = tmp_path / "rec.jsonl"
    recorded = run_cli("run", str(suite), "-o", str(tmp_path / "a"), "--record", str(rec),
                       env={"EVAL_AGENT_API_KEY": API_SECRET})
    assert recorded.returncode == 0, recorded.stderr
    assert server.requests[0]["body"]["metadata"]["auth_token"] == BODY_SECRET  # the real value was sent
    _assert_clean([rec, *(tmp_path / "a").iterdir()], recorded.stdout, recorded.stderr)
    assert '"auth_token": "***"' in rec.read_text()
    served = len(server.requests)
    replayed = run_cli("run", str(suite), "-o", str(tmp_path / "b"), "--replay", str(rec),
                       env={"EVAL_AGENT_API_KEY": "sk-another-key-entirely"})
    assert replayed.returncode == 0, replayed.stderr
    assert len(server.requests) == served  # every call was answered from the recording
    assert "replay miss" not in replayed.stdout + replayed.stderr


def test_basic_credentials_of_a_model_url_are_masked_in_every_form_the_client_sends(server: ScriptedServer,
                                                                                    tmp_path: Path) -> None:
    """`--model m@http://user:KEY@host/v1` makes the client send `Authorization: Basic base64(user:KEY)`; a
    server that echoes that header (or the pair) must not put any form of the key in results or the report."""
    import base64

    key = "sk-BASICKEY-4242"
    token = base64.b64encode(f"user:{key}".encode()).decode()

    def echo(path: str, body: dict[str, object]) -> dict[str, object]:
        sent = server.requests[-1]["headers"].get("authorization", "")
        return text(f"you sent {sent}; token {token}; pair user:{key}; scheme-less Basic {token}")

    server.script = echo
    suite = write_suite(tmp_path, ROWS[:1], base_url=server.url)
    out = tmp_path / "out"
    url = server.url.replace("http://", f"http://user:{key}@")
    result = run_cli("run", str(suite), "-o", str(out), "--model", f"m@{url}")
    assert server.requests[0]["headers"]["authorization"] == f"Basic {token}"  # what the client really sent
    report = run_cli("report", str(out), "--html", str(tmp_path / "report.html"))
    for path in [*out.iterdir(), tmp_path / "report.html"]:
        content = path.read_text(encoding="utf-8")
        assert token not in content and key not in content, path.name
    assert token not in result.stdout + result.stderr + report.stdout
    answer = json.loads((out / "results.jsonl").read_text().splitlines()[0])["trajectory"]["turns"][0]
    assert "you sent Basic ***" in json.dumps(answer)


def test_basic_pattern_masks_a_credential_and_leaves_prose() -> None:
    redact = Redactor()
    assert redact("Authorization: Basic dXNlcjpzZWNyZXQ=") == "Authorization: Basic ***"
    assert redact("Basic research and Basic English stay") == "Basic research and Basic English stay"

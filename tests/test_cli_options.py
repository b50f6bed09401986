"""The small things people expect of the command line: --version and -h, a default suite, --sample-id and
--rerun-failed, -k refused with a pointer, flags shown as flags, several suites to validate, --base-url and
--model on validate, and a run in which no model answered marked as such."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

import evals_cli
from evals_cli.errors import ConfigError
from evals_cli.run_options import NothingToRun, RunOptions
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

COMMANDS = ["run", "validate", "report", "compare", "analyze", "merge", "init", "list"]
ROWS = [{"id": i, "input": f"{i}: db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}
        for i in ("refund-1", "refund-2", "refund-3", "ship-1", "ship-2")]
GOOD = [call("read_file", {"path": ".env"}), text("localhost")]


def good(server: ScriptedServer, bad: tuple[str, ...] = ()) -> None:
    """Every sample answers right, except those in `bad` (a wrong answer: failed)."""
    server.script = agent_script({**{i: GOOD for i in ("refund", "ship")}, **{b: [text("no idea")] for b in bad}})


def ran(out: Path) -> list[str]:
    return sorted(r["sample_id"] for r in read_jsonl(out / "results.jsonl"))


# --- --version, -h, help text ---------------------------------------------------------------------------------


def test_version() -> None:
    for flag in ("--version", "-V"):
        result = run_cli(flag)
        assert result.returncode == 0 and result.stdout.strip() == f"evals {evals_cli.__version__}"


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_dash_h_is_help_on_every_command(command: str | None) -> None:
    args = [command] if command else []
    short, long = run_cli(*args, "-h"), run_cli(*args, "--help")
    assert short.returncode == long.returncode == 0
    assert "Usage:" in short.stdout and short.stdout == long.stdout


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_flags_are_shown_as_flags(command: str | None) -> None:
    out = run_cli(*([command] if command else []), "--help").stdout
    assert "<bool>" not in out and "--help" in out
    if command == "run":
        assert re.search(r"--no-judge\s+Skip model_judge", out)
        assert "needs the [otel] extra" in out  # a literal bracket, not eaten as markup
        assert not re.search(r"\s-k\s", out)  # the refused short option is not advertised


# --- the default suite ------------------------------------------------------------------------------------------


def test_run_without_a_suite_uses_suite_yaml_here(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(ran(tmp_path / "out")) == 5
    assert run_cli("validate", cwd=tmp_path).stdout.startswith("suite.yaml: ok: 5 samples")


def test_run_without_a_suite_uses_evals_yaml(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    write_suite(tmp_path, ROWS, base_url=server.url).rename(tmp_path / "evals.yaml")
    result = run_cli("run", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_run_without_a_suite_and_none_here_names_both(tmp_path: Path) -> None:
    result = run_cli("run", cwd=tmp_path)
    assert result.returncode == 2
    assert "suite.yaml" in result.stderr and "evals.yaml" in result.stderr and "Traceback" not in result.stderr
    assert run_cli("validate", cwd=tmp_path).returncode == 2


def test_run_without_a_suite_and_both_here_asks_which(tmp_path: Path) -> None:
    write_suite(tmp_path, ROWS)
    (tmp_path / "evals.yaml").write_text((tmp_path / "suite.yaml").read_text())
    result = run_cli("run", cwd=tmp_path)
    assert result.returncode == 2 and "both suite.yaml and evals.yaml" in result.stderr


# --- -k, --repeats ---------------------------------------------------------------------------------------------


def test_dash_k_is_refused_with_a_pointer(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS)
    result = run_cli("run", str(suite), "-k", "refund")
    assert result.returncode == 2
    assert "--repeats" in result.stderr and "--sample-id" in result.stderr
    assert not (tmp_path / "results").exists()


def test_dash_r_repeats(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "-r", "2", "--sample-id", "ship-1")
    assert result.returncode == 0, result.stderr
    assert ran(tmp_path / "out") == ["ship-1", "ship-1"]


# --- --sample-id ------------------------------------------------------------------------------------------------


def test_sample_id_globs_and_exact_ids(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "a"), "--sample-id", "refund-*")
    assert result.returncode == 0, result.stderr
    assert ran(tmp_path / "a") == ["refund-1", "refund-2", "refund-3"]
    assert "ran 3 of 5 samples: --sample-id refund-* kept 3" in result.stdout  # the filter named as such
    assert run_cli("run", str(suite), "-o", str(tmp_path / "b"), "--sample-id", "ship-2",
                   "--sample-id", "refund-1").returncode == 0
    assert ran(tmp_path / "b") == ["refund-1", "ship-2"]
    assert {r["body"]["model"] for r in server.requests} == {"scripted"}


def test_sample_id_matching_nothing_is_an_error_naming_it(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "--sample-id", "refund-1", "--sample-id", "refnud-*")
    assert result.returncode == 2
    assert "--sample-id refnud-*: matches no sample id" in result.stderr and "refund-1:" not in result.stderr
    assert not server.requests


def test_sample_ids_from_python(server: ScriptedServer, tmp_path: Path) -> None:
    good(server)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    outcome = evals_cli.run(suite, RunOptions(output=tmp_path / "out", sample_ids=["ship-*"]))
    assert outcome.exit_code == 0 and ran(tmp_path / "out") == ["ship-1", "ship-2"]
    with pytest.raises(ConfigError, match="--sample-id nothing: matches no sample"):
        evals_cli.run(suite, RunOptions(output=tmp_path / "none", sample_ids=["nothing"]))


# --- --rerun-failed ---------------------------------------------------------------------------------------------


def test_rerun_failed_runs_only_failed_and_errored_samples_as_a_new_run(server: ScriptedServer,
                                                                       tmp_path: Path) -> None:
    from tests.scripted_server import Reply

    server.script = agent_script({"refund-1": [text("no idea")],
                                  "ship-2": [Reply({"error": {"message": "boom"}}, status=500)],
                                  "refund": GOOD, "ship": GOOD})
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    first = run_cli("run", str(suite), "-o", str(tmp_path / "first"))
    assert first.returncode in (0, 1), first.stderr
    good(server)
    again = run_cli("run", str(suite), "-o", str(tmp_path / "again"), "--rerun-failed", str(tmp_path / "first"))
    assert again.returncode == 0, again.stderr
    assert ran(tmp_path / "again") == ["refund-1", "ship-2"]
    assert len(read_jsonl(tmp_path / "first" / "results.jsonl")) == 5  # the earlier run is left as it was
    # its results.jsonl works as well; with nothing failed in the rerun, a rerun of it runs nothing
    nothing = run_cli("run", str(suite), "-o", str(tmp_path / "third"), "--rerun-failed",
                      str(tmp_path / "again" / "results.jsonl"))
    assert nothing.returncode == 0 and "nothing to rerun" in nothing.stdout
    assert not (tmp_path / "third").exists()
    with pytest.raises(NothingToRun, match="nothing to rerun") as raised:  # Python: the same decision, exit code 0
        evals_cli.run(suite, RunOptions(output=tmp_path / "fourth", rerun_failed=tmp_path / "again"))
    assert raised.value.exit_code == 0 and not (tmp_path / "fourth").exists()


def test_rerun_failed_counts_a_sample_failed_when_any_repeat_failed(server: ScriptedServer, tmp_path: Path) -> None:
    answers: dict[str, int] = {}

    def flaky(path: str, body: dict[str, Any]) -> Any:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if user.startswith("refund-2") and body["messages"][-1]["role"] == "user":
            answers["refund-2"] = answers.get("refund-2", 0) + 1
            if answers["refund-2"] == 2:  # the second repeat answers wrong
                return text("no idea")
        return agent_script({"refund": GOOD, "ship": GOOD})(path, body)

    server.script = flaky
    suite = write_suite(tmp_path, ROWS, base_url=server.url, concurrency=1)
    first = run_cli("run", str(suite), "-o", str(tmp_path / "first"), "--repeats", "3")
    assert first.returncode in (0, 1), first.stderr
    good(server)
    again = run_cli("run", str(suite), "-o", str(tmp_path / "again"), "--rerun-failed", str(tmp_path / "first"))
    assert again.returncode == 0, again.stderr
    assert ran(tmp_path / "again") == ["refund-2"]


def test_rerun_failed_usage_errors(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS)
    missing = run_cli("run", str(suite), "--rerun-failed", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "--rerun-failed" in missing.stderr and "no such folder" in missing.stderr
    both = run_cli("run", str(suite), "--rerun-failed", str(tmp_path), "--resume", str(tmp_path))
    assert both.returncode == 2 and "--resume" in both.stderr
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.jsonl").write_text(json.dumps({"sample_id": "gone", "passed": False}) + "\n")
    gone = run_cli("run", str(suite), "--rerun-failed", str(tmp_path / "old"))
    assert gone.returncode == 2 and "not in" in gone.stderr and "gone" in gone.stderr


# --- validate: several suites, --base-url / --model -------------------------------------------------------------


def test_validate_takes_several_suites(tmp_path: Path) -> None:
    ok_a, ok_b, bad = (tmp_path / d for d in ("a", "b", "bad"))
    for folder in (ok_a, ok_b, bad):
        folder.mkdir()
    write_suite(ok_a, ROWS)
    write_suite(ok_b, ROWS[:2])
    write_suite(bad, ROWS, graders={"answer": {"kind": "tool", "function": "containz"}})
    suites = [str(ok_a / "suite.yaml"), str(bad / "suite.yaml"), str(ok_b / "suite.yaml")]
    result = run_cli("validate", *suites)
    assert result.returncode == 2
    lines = result.stdout.strip().splitlines()
    assert lines == [f"{suites[0]}: ok: 5 samples, 3 graders (answer, order, avoided)", f"{suites[1]}: 1 problem",
                     f"{suites[2]}: ok: 2 samples, 3 graders (answer, order, avoided)"]
    problems = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert problems and all(line.startswith(f"error: {suites[1]}") for line in problems)
    assert "unknown function 'containz'" in result.stderr and "1 of 3 suites have problems" in result.stderr
    every = run_cli("validate", suites[0], suites[2])
    assert every.returncode == 0 and len(every.stdout.strip().splitlines()) == 2


LETTA = ROOT / "suites" / "letta" / "support_rubric.yaml"


def test_validate_takes_base_url_and_model_like_run() -> None:
    plain = run_cli("validate", str(LETTA))
    assert plain.returncode == 2 and "is a letta-evals target" in plain.stderr
    given = run_cli("validate", str(LETTA), "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert given.returncode == 0, given.stderr


def test_base_url_alone_uses_the_endpoints_only_model(server: ScriptedServer, tmp_path: Path) -> None:
    result = run_cli("validate", str(LETTA), "--base-url", server.url)
    assert result.returncode == 0, result.stderr  # GET /models lists exactly one: "scripted"
    good(server)
    suite = write_suite(tmp_path, ROWS[:1], base_url=server.url)
    data = yaml.safe_load(suite.read_text())
    del data["target"]["model"]
    suite.write_text(yaml.safe_dump(data))
    run = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--base-url", server.url)
    assert run.returncode == 0, run.stderr
    assert {r["body"]["model"] for r in server.requests if r["body"]} == {"scripted"}


@pytest.fixture
def two_models() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": "qwen"}, {"id": "llama"}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_base_url_alone_with_several_models_asks_for_one(two_models: str) -> None:
    result = run_cli("validate", str(LETTA), "--base-url", two_models)
    assert result.returncode == 2
    assert "serves 2 models (qwen, llama)" in result.stderr and "--model" in result.stderr
    unreachable = run_cli("validate", str(LETTA), "--base-url", "http://127.0.0.1:9/v1")
    assert unreachable.returncode == 2 and "did not list its models" in unreachable.stderr


# --- a run in which no model answered ---------------------------------------------------------------------------


def test_a_run_where_no_model_answered_is_marked(server: ScriptedServer, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS, base_url="http://127.0.0.1:9/v1")
    outcome = evals_cli.run(suite, RunOptions(output=tmp_path / "dead"))
    assert outcome.exit_code == 3 and outcome.made_no_call
    good(server)
    alive = evals_cli.run(suite, RunOptions(output=tmp_path / "alive", base_url=server.url))
    assert alive.exit_code == 0 and not alive.made_no_call


# --- sessions output --------------------------------------------------------------------------------------------


def test_one_session_is_one_session(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text((ROOT / "datasets" / "multi_agent_sessions.jsonl").read_text().splitlines()[0] + "\n")
    result = run_cli("analyze", str(one), "-o", str(tmp_path / "out"))
    assert result.returncode in (0, 1), result.stderr
    assert "1 sessions" not in result.stdout and "1 session " in result.stdout

"""User regexes (regex_match ground truth, the `pattern` extractor, tool_args `regex:`) run with a time bound:
a catastrophic pattern is a grade error naming it, the run finishes, and SIGTERM during a slow match stops the
run within a couple of seconds. The SIGTERM test runs a real subprocess: the bug was a process that ignored
signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evals_cli import safe_regex
from evals_cli.errors import ConfigError
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

HOSTILE = "(a|aa)+$"
EVIL_TEXT = "a" * 60 + "!"
GRADERS = {
    "rx": {"kind": "tool", "function": "regex_match"},
    "extract": {"kind": "tool", "function": "contains", "extractor": "pattern",
                "extractor_config": {"pattern": "(aa|a)+$"}},
    "args": {"kind": "tool_args", "calls": [{"tool": "read_file", "match": {"path": {"regex": "^(a|aa)+$"}}}]},
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
    env.update({"NO_COLOR": "1", "COLUMNS": "200", **extra})
    return env


def test_safe_regex_times_out_naming_the_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(safe_regex.TIMEOUT_ENV, "0.2")
    started = time.monotonic()
    with pytest.raises(safe_regex.RegexTimeout) as info:
        safe_regex.search(HOSTILE, EVIL_TEXT)
    assert time.monotonic() - started < 2
    assert HOSTILE in str(info.value) and "EVALS_REGEX_TIMEOUT" in str(info.value)
    assert safe_regex.search("b+", "abbbc") is not None  # ordinary patterns are unaffected
    monkeypatch.setenv(safe_regex.TIMEOUT_ENV, "not-a-number")  # no silent default: the run would not be bounded
    with pytest.raises(ConfigError, match="EVALS_REGEX_TIMEOUT='not-a-number': expected a number of seconds"):
        safe_regex.timeout_s()
    monkeypatch.setenv(safe_regex.TIMEOUT_ENV, "")  # empty is unset
    assert safe_regex.timeout_s() == 1.0


@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_hostile_patterns_become_grade_errors_and_the_run_finishes(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"evil": [call("read_file", {"path": EVIL_TEXT}), text(EVIL_TEXT)],
                                  "fine": [text("the answer is 4")]})
    rows = [{"id": "evil", "input": "evil?", "ground_truth": HOSTILE},
            {"id": "fine", "input": "fine?", "ground_truth": "answer is \\d"}]
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS)
    started = time.monotonic()
    done = run_cli("run", str(suite), "-o", str(tmp_path / "out"), env={"EVALS_REGEX_TIMEOUT": "0.5"})
    assert time.monotonic() - started < 60
    assert done.returncode in (0, 1, 3), done.stderr  # a grade error counts as an errored sample
    assert "Traceback" not in done.stderr
    results = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    evil = results["evil"]["grades"]
    for name, pattern in (("rx", HOSTILE), ("extract", "(aa|a)+$"), ("args", "^(a|aa)+$")):
        assert evil[name]["score"] is None, (name, evil[name])
        assert pattern in evil[name]["error"] and "longer than 0.5s" in evil[name]["error"], evil[name]
    assert results["fine"]["grades"]["rx"]["score"] == 1.0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["total"] == 2


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_sigterm_during_a_slow_match_stops_the_run_quickly(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"evil": [text(EVIL_TEXT)]})
    rows = [{"id": f"evil{i}", "input": "evil?", "ground_truth": HOSTILE} for i in range(4)]
    suite = write_suite(tmp_path, rows, base_url=server.url, concurrency=1,
                        graders={"rx": {"kind": "tool", "function": "regex_match"}})
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env(EVALS_REGEX_TIMEOUT="120"), cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, "the run never called the model"
        time.sleep(1.0)  # now inside the 120 s match
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=15)
        assert time.monotonic() - sent < 5, "SIGTERM took too long to stop the run"
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted", stdout + stderr
    assert "Traceback" not in stderr

"""The pytest integration: `pytest --evals suite.yaml` (evals_cli/pytest_plugin.py) run as an inner pytest by
pytester, and `evals_cli.testing.run_suite` called from a test. The shipped demo suite's recording has known
outcomes (4 samples: 1 passed, 3 failed, the gate failed); the scripted loopback server gives the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

import evals_cli.runner.run  # noqa: F401  (imported here, it outlives each in-process inner run: see _inner)
from evals_cli.testing import SuiteIncomplete, assert_passed, run_suite
from tests.helpers import ROOT, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, text

pytest_plugins = ["pytester"]

DEMO = ROOT / "suites" / "demo.yaml"
DEMO_REPLAY = ROOT / "suites" / "demo.recording.jsonl"
ANSWER_ONLY = {"answer": {"kind": "tool", "function": "contains"}}


def _installed() -> bool:
    """The package is installed with its `pytest11` entry point (pip install, make test): pytest loads the plugin
    itself, and naming it again with -p would register it twice."""
    from importlib.metadata import entry_points

    return any(e.value == "evals_cli.pytest_plugin" for e in entry_points(group="pytest11"))


def _inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    load = [] if _installed() else ["-p", "evals_cli.pytest_plugin"]
    return pytester.runpytest_inprocess(*load, "-p", "no:cacheprovider", "-rA", *args)


def _three_ways(server: ScriptedServer, tmp: Path) -> Path:
    """A suite of three samples: one passes, one fails its grader, one errors (the endpoint answers 500)."""
    server.script = agent_script({"good": [text("alpha")], "wrong": [text("beta")],
                                  "broken": [Reply({"error": {"message": "boom"}}, status=500)]})
    rows = [{"id": "ok-1", "input": "good?", "ground_truth": "alpha"},
            {"id": "bad-1", "input": "wrong?", "ground_truth": "alpha"},
            {"id": "err-1", "input": "broken?", "ground_truth": "alpha"}]
    return write_suite(tmp, rows, base_url=server.url, graders=ANSWER_ONLY)


def test_each_demo_sample_is_a_test_failing_with_its_reasons(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = _inner(pytester, "--evals", str(DEMO), "--evals-replay", str(DEMO_REPLAY),
                    "--evals-output", str(tmp_path / "out"))
    result.assert_outcomes(passed=1, failed=4)  # trivial-math passes; db-host, server-port, find-then-read, gate
    out = result.stdout.str()
    for name, word in [("trivial-math[r0]", "PASSED"), ("db-host[r0]", "FAILED"), ("server-port[r0]", "FAILED"),
                       ("find-then-read[r0]", "FAILED"), ("gate", "FAILED")]:
        assert f"{word} " in out and f"demo.yaml::{name}" in out
    db_host = out.split("_ db-host[r0] _")[1].split("_ server-port[r0] _")[0]
    assert "expected read_file; matched 0/1, missing 'read_file'; no tool calls were made" in db_host
    assert "tool_order 0.00 < 0.7 (required)" in db_host
    gate = out.split("_ gate _")[1]
    assert "Gate FAILED: sample pass rate (1 of 4 samples passed)" in gate
    assert "not passed: db-host[r0], server-port[r0], find-then-read[r0]" in gate
    assert (tmp_path / "out" / "demo" / "results.jsonl").is_file()  # the run is kept for `evals report`


def test_an_errored_sample_is_a_pytest_error_never_a_pass_or_fail(pytester: pytest.Pytester, server: ScriptedServer,
                                                                 tmp_path: Path) -> None:
    suite = _three_ways(server, tmp_path)
    result = _inner(pytester, "--evals", str(suite), "--evals-output", str(tmp_path / "out"))
    # one in three errored: past the 0.2 error rate the run aborts, so the gate has no verdict: an error too
    result.assert_outcomes(passed=1, failed=1, errors=2)
    out = result.stdout.str()
    summary = {line.split(" ")[0] for line in out.splitlines() if "suite.yaml::err-1[r0]" in line}
    assert summary == {"ERROR"}  # the -rA line: an error, not FAILED, not PASSED
    err_text = out.split("ERROR at setup of err-1[r0]")[1].split("ERROR at setup of gate")[0]
    assert "endpoint error: agent endpoint" in err_text and "HTTP 500" in err_text
    assert "'alpha' not found in the submission" in out.split("_ bad-1[r0] _")[1]
    assert "the run is incomplete (1/3 samples errored" in out.split("ERROR at setup of gate")[1]


def test_a_suite_that_does_not_load_is_a_usage_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = _inner(pytester, "--evals", str(tmp_path / "missing.yaml"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--evals" in result.stderr.str() and "missing.yaml" in result.stderr.str()


def test_run_suite_in_a_test_asserts_the_gate_with_the_failed_reasons(tmp_path: Path) -> None:
    run = run_suite(DEMO, replay=DEMO_REPLAY, output=tmp_path / "r")
    assert {s.name: s.verdict for s in run.samples} == {"db-host[r0]": "failed", "server-port[r0]": "failed",
                                                         "find-then-read[r0]": "failed", "trivial-math[r0]": "passed"}
    assert run.exit_code == 1 and run.gate is not None and run.gate.passed is False
    with pytest.raises(AssertionError) as caught:
        assert_passed(run)
    message = str(caught.value)
    assert message.startswith("Gate FAILED: sample pass rate (1 of 4 samples passed) = 0.250 not ≥ 0.75")
    assert "expected list_files → read_file; matched 0/2, missing 'list_files'" in message  # find-then-read's reason
    assert "db-host  ✗ failed: tool_order" in message and "trivial-math" not in message


def test_run_suite_passes_a_passing_suite_and_refuses_a_verdict_for_an_aborted_one(server: ScriptedServer,
                                                                                   tmp_path: Path) -> None:
    server.script = agent_script({"good": [text("alpha")]})
    (tmp_path / "pass").mkdir()
    suite = write_suite(tmp_path / "pass", [{"id": "ok-1", "input": "good?", "ground_truth": "alpha"}],
                        base_url=server.url, graders=ANSWER_ONLY)
    run_suite(suite, output=tmp_path / "r1").assert_gate()  # passes: no exception
    (tmp_path / "three").mkdir()
    aborted = run_suite(_three_ways(server, tmp_path / "three"), output=tmp_path / "r2")
    assert [s.verdict for s in aborted.samples if s.result.sample_id == "err-1"] == ["error"]
    with pytest.raises(SuiteIncomplete, match="the run is incomplete") as caught:  # not an AssertionError
        aborted.assert_gate()
    assert not isinstance(caught.value, AssertionError) and "endpoint error" in str(caught.value)

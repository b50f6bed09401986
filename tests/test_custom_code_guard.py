"""The suite's own code (custom extractors, @grader functions, custom rewards, python agents) cannot end, hold or
interrupt a run (issue 24, item 3; evals_cli/custom_code/).

Real subprocesses of the CLI: the bugs were a process that exited 0 with no results and no summary
(`sys.exit(0)`, `os._exit(0)`), one that exited 130 with no summary (a raised KeyboardInterrupt) and one that only
SIGKILL ended (`while True`). The agent is the scripted OpenAI-compatible server on loopback; it answers
`answer: <the user's message>`, so each sample's input says what the custom code does with it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT, read_jsonl, run_cli, run_cli_process, wait_for_lines
from tests.scripted_server import Reply, ScriptedServer, last_user, text

CUSTOM = '''
import os, sys, time
from pathlib import Path

from evals_cli import grader

MARK = Path(__file__).with_name("hanging.txt")


def act(said):
    """What the sample's input asks the custom code to do."""
    if "sys-exit" in said:
        sys.exit(0)
    if "os-exit" in said:
        os._exit(0)
    if "interrupt" in said:
        raise KeyboardInterrupt
    if "raise-exit" in said:
        raise SystemExit(0)
    if "hang" in said:
        MARK.write_text("hanging")
        while True:
            pass
    if "timer" in said:  # a thread left behind, exiting after the call returned
        import threading
        threading.Timer(0.2, os._exit, (0,)).start()


def extract(trajectory, config):
    answer = trajectory.turns[-1].steps[-1].content
    act(answer)
    return answer


@grader
def check(sample, submission):
    act(sample.input)
    return "answer" in submission


def reward(ctx):
    act(ctx.sample.input)
    return 1.0
'''


PLAIN = {"answer": {"kind": "match", "function": "contains"}}  # no custom code in the grader


def _agent(path: str, body: dict[str, Any]) -> Any:
    return text(f"answer: {last_user(body)}")


def _suite(tmp_path: Path, server: ScriptedServer, inputs: list[str], *, graders: dict[str, Any] | None = None,
           gate: dict[str, Any] | None = None, code: str = CUSTOM, **extra: Any) -> Path:
    server.script = _agent
    (tmp_path / "custom.py").write_text(code, encoding="utf-8")
    rows = [{"id": f"s{i}-{said}", "input": said, "ground_truth": "answer"} for i, said in enumerate(inputs)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "guard-suite", "dataset": "data.jsonl", "concurrency": 1,
             "target": {"kind": "openai_chat", "base_url": server.url, "model": "scripted", "api_key": "sk-test",
                        "max_retries": 0},
             "graders": graders or {"answer": {"kind": "match", "function": "contains", "extractor": "custom.py:extract"}},
             "gate": gate or {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5},
             **extra}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _run(suite: Path, out: Path, *extra: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str],
                                                                         dict[str, Any], dict[str, dict[str, Any]]]:
    done = run_cli_process("run", str(suite), "-o", str(out), *extra, timeout=timeout)
    assert (out / "summary.json").is_file(), done.stdout + done.stderr  # the run finished, with its summary
    summary = json.loads((out / "summary.json").read_text())
    assert done.returncode == summary["exit_code"], done.stdout + done.stderr
    results = {r["sample_id"].split("-", 1)[1]: r for r in read_jsonl(out / "results.jsonl")}
    return done, summary, results


def _custom_error(result: dict[str, Any], *words: str) -> None:
    error = result["error"]
    assert error is not None and error["category"] == "custom_code", result
    assert all(w in error["message"] for w in words), error["message"]
    assert result["passed"] is None and result["score"] is None  # an error, never a zero


# --- at call ---------------------------------------------------------------------------------------------

def test_an_extractor_that_exits_or_interrupts_errors_its_sample_and_the_run_finishes(
        server: ScriptedServer, tmp_path: Path) -> None:
    suite = _suite(tmp_path, server, ["fine", "sys-exit", "os-exit", "interrupt", "raise-exit", "fine too"])
    done, summary, results = _run(suite, tmp_path / "out")
    assert done.returncode == 3  # 4 of 6 errored, past --max-error-rate: no verdict, and never 0 or 130
    assert summary["total"] == 6 and summary["errored"] == 4 and summary["gate"]["passed"] is None
    assert "Gate not evaluated" in done.stdout
    _custom_error(results["sys-exit"], "custom extractor custom.py:extract", "called sys.exit(0)")
    _custom_error(results["os-exit"], "custom.py:extract", "called os._exit(0)")
    _custom_error(results["interrupt"], "custom.py:extract", "raised KeyboardInterrupt")
    _custom_error(results["raise-exit"], "custom.py:extract", "raised SystemExit(0)")
    assert results["fine"]["passed"] is True and results["fine too"]["passed"] is True


def test_a_grader_that_exits_errors_its_sample_and_the_gate_decides_on_the_rest(
        server: ScriptedServer, tmp_path: Path) -> None:
    graders = {"answer": {"kind": "match", "function": "custom.py:check"}}
    inputs = ["os-exit", *(f"fine {i}" for i in range(5))]  # 1 of 6 errored: within --max-error-rate
    done, summary, results = _run(_suite(tmp_path, server, inputs, graders=graders), tmp_path / "out")
    assert summary["status"] == "completed" and summary["errored"] == 1 and summary["passed"] == 5
    assert done.returncode == 0 and summary["gate"]["passed"] is True  # the verdict of the 5 graded samples
    _custom_error(results["os-exit"], "custom grader custom.py:check", "called os._exit(0)")
    assert "custom_code" in json.dumps(summary["errors_by_category"]) or summary["errored"] == 1


def test_a_reward_that_exits_or_interrupts_errors_its_sample(server: ScriptedServer, tmp_path: Path) -> None:
    gate = {"kind": "custom", "function": "custom.py:reward", "op": "gte", "value": 0.5}
    suite = _suite(tmp_path, server, ["sys-exit", "interrupt", "fine"], gate=gate, graders=PLAIN)
    done, summary, results = _run(suite, tmp_path / "out")
    assert done.returncode == 3 and summary["errored"] == 2 and summary["gate"]["passed"] is None
    _custom_error(results["sys-exit"], "custom reward custom.py:reward", "called sys.exit(0)")
    _custom_error(results["interrupt"], "custom.py:reward", "raised KeyboardInterrupt")
    assert results["fine"]["passed"] is True


def test_a_thread_left_behind_cannot_exit_the_run_later(server: ScriptedServer, tmp_path: Path) -> None:
    # the extractor returns at once, leaving a timer that calls os._exit(0) 0.2 s later, while the next samples
    # are still being answered (0.15 s each): refused in that thread, the run goes on to its own verdict
    suite = _suite(tmp_path, server, ["timer", "fine 1", "fine 2", "fine 3"])
    server.script = lambda path, body: Reply(text(f"answer: {last_user(body)}"), delay=0.15)
    out = tmp_path / "out"
    done = run_cli_process("run", str(suite), "-o", str(out), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((out / "summary.json").read_text())["passed"] == 4


def test_a_python_agent_that_raises_keyboard_interrupt_errors_its_sample(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(textwrap.dedent('''
        async def run_agent(sample, tools):
            if sample.input == "interrupt":
                raise KeyboardInterrupt
            return "answer"
    '''), encoding="utf-8")
    rows = [{"id": "s0-interrupt", "input": "interrupt", "ground_truth": "answer"},
            {"id": "s1-fine", "input": "fine", "ground_truth": "answer"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "agent-guard", "dataset": "data.jsonl",
                                     "target": {"kind": "python", "callable": "agent.py:run_agent"},
                                     "graders": {"answer": {"kind": "match", "function": "contains"}}}),
                     encoding="utf-8")
    done, summary, results = _run(suite, tmp_path / "out")
    assert done.returncode == 3 and summary["errored"] == 1  # 1 of 2 errored: no verdict; not 130
    _custom_error(results["interrupt"], "python agent agent.py:run_agent", "raised KeyboardInterrupt")
    assert results["fine"]["passed"] is True


@pytest.mark.slow  # two real runs, each waiting out a sample_timeout: seconds; make test-slow runs it
def test_python_agents_that_never_return_are_cut_off_and_the_run_goes_on(tmp_path: Path) -> None:
    # an async agent that never awaits used to block the run's own event loop: no timeout, no signal could end it
    (tmp_path / "agent.py").write_text(textwrap.dedent('''
        async def async_agent(sample, tools):
            if sample.input == "block":
                while True:
                    pass
            return "answer"

        def sync_agent(sample, tools):
            if sample.input == "block":
                while True:
                    pass
            return "answer"
    '''), encoding="utf-8")
    rows = [{"id": f"s{i}-{said}", "input": said, "ground_truth": "answer"}
            for i, said in enumerate(["fine", "block", "fine", "fine"])]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for name in ("async_agent", "sync_agent"):
        suite = tmp_path / f"{name}.yaml"
        suite.write_text(yaml.safe_dump({"name": name, "dataset": "data.jsonl", "concurrency": 1,
                                         "target": {"kind": "python", "callable": f"agent.py:{name}"},
                                         "graders": PLAIN}), encoding="utf-8")
        done, summary, results = _run(suite, tmp_path / name, "--sample-timeout", "1", "--max-error-rate", "1")
        assert summary["status"] == "completed" and summary["total"] == 4, (name, summary["abort_reason"])
        assert results["block"]["error"]["category"] == "timeout", results["block"]
        # the samples after it ran on a loop (or in a thread) the blocked one does not hold
        assert results["fine"]["passed"] is True, (name, results["fine"])
        assert [r["passed"] for r in read_jsonl(tmp_path / name / "results.jsonl")][-1] is True, name


# --- at import -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("where", "code", "did"), [
    ("extractor", "import sys\nsys.exit(0)\n", "called sys.exit(0)"),
    ("grader", "import os\nos._exit(0)\n", "called os._exit(0)"),
    ("reward", "raise KeyboardInterrupt\n", "raised KeyboardInterrupt"),
])
def test_exiting_at_import_is_exit_2_naming_the_field_and_file(server: ScriptedServer, tmp_path: Path, where: str,
                                                                code: str, did: str) -> None:
    body = CUSTOM.replace("MARK = ", code + "MARK = ")
    graders = {"answer": {"kind": "match", "function": "custom.py:check" if where == "grader" else "contains",
                          **({"extractor": "custom.py:extract"} if where == "extractor" else {})}}
    gate = {"kind": "custom", "function": "custom.py:reward"} if where == "reward" else None
    suite = _suite(tmp_path, server, ["fine"], graders=graders, gate=gate, code=body)
    field = {"extractor": "graders.answer", "grader": "graders.answer", "reward": "gate (custom reward)"}[where]
    for args in (["run", str(suite), "-o", str(tmp_path / "out")], ["validate", str(suite), "--import-code"]):
        done = run_cli_process(*args, timeout=60)
        assert done.returncode == 2, done.stdout + done.stderr
        assert field in done.stderr and "custom.py" in done.stderr and did in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()


# --- time and signals ------------------------------------------------------------------------------------

@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_a_hanging_extractor_errors_its_sample_at_the_sample_timeout(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _suite(tmp_path, server, ["fine", "hang", *(f"fine {i}" for i in range(4))])
    started = time.monotonic()
    # --max-error-rate 1: on a loaded machine another sample may also run out of its second; what is tested is
    # that the hanging one errors at its timeout and the run goes on to the end
    done, summary, results = _run(suite, tmp_path / "out", "--sample-timeout", "1", "--max-error-rate", "1")
    assert time.monotonic() - started < 60
    _custom_error(results["hang"], "custom extractor custom.py:extract", "sample_timeout (1s", "stopped")
    assert summary["status"] == "completed" and summary["total"] == 6, summary["abort_reason"]
    assert [r["sample_id"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")][-1] == "s5-fine 3"
    assert done.returncode in (0, 1) and summary["gate"]["passed"] is not None  # the gate decided
    assert any(r["passed"] is True for r in results.values())


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_a_signal_during_a_hanging_extractor_stops_the_run_as_any_run(server: ScriptedServer, tmp_path: Path,
                                                                      sig: signal.Signals) -> None:
    suite = _suite(tmp_path, server, ["fine", "hang", "never reached"])
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out), "--grace", "0.5"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**_env(), "NO_COLOR": "1", "COLUMNS": "200"})
    try:
        wait_for_lines(out / "results.jsonl", 1)
        deadline = time.monotonic() + 30
        while not (tmp_path / "hanging.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "hanging.txt").exists()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["gate"]["passed"] is None
    assert [r["sample_id"] for r in read_jsonl(out / "results.jsonl")] == ["s0-fine"]  # kept, nothing invented
    assert "Gate not evaluated" in stdout


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}


# --- which files, and validate not running them ----------------------------------------------------------

MARKING = '''
from pathlib import Path
Path(__file__).with_name("imported.txt").write_text("the file ran")

def extract(trajectory, config):
    return ""
'''


def test_validate_reads_custom_code_without_running_it_unless_asked(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _suite(tmp_path, server, ["fine"], code=MARKING)
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (tmp_path / "imported.txt").exists()
    assert "custom code read, not run: custom.py:extract" in checked.stderr and "--import-code" in checked.stderr
    checked = run_cli("validate", str(suite), "--import-code")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (tmp_path / "imported.txt").read_text() == "the file ran"


@pytest.mark.parametrize(("code", "says"), [
    ("def other(trajectory, config):\n    return ''\n", "custom.py has no function 'extract' at its top level"),
    ("def extract(trajectory, config:\n    return ''\n", "custom.py:1: custom extractor file is not valid Python"),
    ("def extract(trajectory):\n    return ''\n", "extractor custom.py:extract takes (trajectory); it must be"),
    ("async def extract(trajectory, config):\n    return ''\n", "custom.py:extract is async"),
])
def test_validate_without_running_still_checks_the_file(server: ScriptedServer, tmp_path: Path, code: str,
                                                        says: str) -> None:
    suite = _suite(tmp_path, server, ["fine"], code=code)
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 2 and says in checked.stderr and "graders.answer" in checked.stderr, checked.stderr


@pytest.mark.parametrize("where", ["extractor", "grader", "reward", "agent"])
def test_custom_files_outside_the_suites_folder_are_refused(server: ScriptedServer, tmp_path: Path,
                                                             where: str) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "outside.py").write_text(CUSTOM + "\n\ndef run_agent(sample, tools):\n    return 'answer'\n",
                                       encoding="utf-8")
    home = tmp_path / "suite"
    home.mkdir()
    graders = {"answer": {"kind": "match", "function": "../shared/outside.py:check" if where == "grader"
                          else "contains", **({"extractor": "../shared/outside.py:extract"}
                                              if where == "extractor" else {})}}
    gate = {"kind": "custom", "function": "../shared/outside.py:reward"} if where == "reward" else None
    suite = _suite(home, server, ["fine"], graders=graders, gate=gate)
    if where == "agent":
        data = yaml.safe_load(suite.read_text())
        data["target"] = {"kind": "python", "callable": str(shared / "outside.py") + ":run_agent"}
        suite.write_text(yaml.safe_dump(data), encoding="utf-8")
    field = {"extractor": "graders.answer", "grader": "graders.answer", "reward": "gate (custom reward)",
             "agent": "target.callable"}[where]
    for args in (["validate", str(suite)], ["validate", str(suite), "--import-code"],
                 ["run", str(suite), "-o", str(home / "out")]):
        done = run_cli(*args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert field in done.stderr and "outside.py" in done.stderr and "outside the suite's folder" in done.stderr
    assert not (home / "out" / "results.jsonl").exists()
    data = yaml.safe_load(suite.read_text())
    data["code_dirs"] = ["../shared"]  # listed: allowed
    suite.write_text(yaml.safe_dump(data), encoding="utf-8")
    done = run_cli("validate", str(suite), "--import-code")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_exit_guard_installs_again_what_was_put_back_while_it_was_held() -> None:
    """A call given up on holds the guard; an embedding program (or the tests' in-process CLI helper) that puts its
    own exits back meanwhile must not leave the next custom call unguarded (it would end the process)."""
    from evals_cli.custom_code import EXIT_GUARD

    real = sys.exit
    with EXIT_GUARD:
        sys.exit = real  # put back behind the guard's back
        with EXIT_GUARD:
            assert sys.exit is not real
        assert sys.exit is not real  # still held by the outer holder
    assert sys.exit is real

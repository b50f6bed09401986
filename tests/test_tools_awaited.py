"""Every tool call is awaited: a tool with logic works in a thread of its own while the run's event loop goes on,
so one sample's slow or hanging tool holds neither the other samples nor Ctrl-C and SIGTERM (issue 33 item 1,
issue 37 item 1). End to end through the real `openai` client against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import evals_cli
from evals_cli.run_options import RunOptions
from tests.helpers import ROOT, read_jsonl, run_cli, wait_for_lines, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

# `block` starts, notes when, and never returns (in C: Abandoned cannot stop a sleep); `lookup` answers how long
# after `block` started it ran, which is under the sample timeout only if the run went on meanwhile
TOOLS_PY = '''import threading
import time
from pathlib import Path

STARTED = threading.Event()
AT = []


def block(arguments, world):
    AT.append(time.monotonic())
    STARTED.set()
    Path(__file__).with_name("blocking.txt").write_text("blocking")
    time.sleep(3600)
    return "woke up"


def lookup(arguments, world):
    if not STARTED.wait(10):
        return "block never started"
    return f"ran {time.monotonic() - AT[0]:.2f} s after block started"
'''

TOOLS = {"block": {"description": "Block.", "parameters": {}, "python": "tools.py:block"},
         "lookup": {"description": "Look up.", "parameters": {}, "python": "tools.py:lookup"}}


def _suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], sample_timeout: float | None,
           concurrency: int = 4) -> Path:
    (tmp / "tools.py").write_text(TOOLS_PY, encoding="utf-8")
    return write_suite(tmp, rows, base_url=server.url, tools=TOOLS, concurrency=concurrency,
                       target={"kind": "openai_chat", "base_url": server.url, "model": "scripted",
                               "api_key": "sk-test", "max_retries": 0, "sample_timeout": sample_timeout},
                       graders={"answer": {"kind": "tool", "function": "contains"}})


def test_a_hanging_tool_is_bounded_by_the_sample_timeout_while_other_samples_finish(
        server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"hang": [call("block", {}), text("never")],
                                  "look": [call("lookup", {}), text("looked")]})
    rows = [{"id": "hang", "input": "hang"}] + [{"id": f"look-{i}", "input": "look", "ground_truth": "looked"}
                                                for i in range(3)]
    limit = 3.0
    started = time.monotonic()
    outcome = evals_cli.run(_suite(tmp_path, server, rows, limit), RunOptions(no_judge=True, output=tmp_path / "out"))
    took = time.monotonic() - started
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "out" / "results.jsonl")}
    hung = lines["hang"]
    assert hung["error"]["category"] in ("timeout", "custom_code"), hung["error"]
    assert "sample_timeout" in hung["error"]["message"]
    for i in range(3):
        line = lines[f"look-{i}"]
        assert line["error"] is None and line["passed"] is True, line
        [answer] = [c["result"] for t in line["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]
        # the lookups ran while the blocking tool still held its thread: the loop was never held by it
        assert answer.startswith("ran ") and float(answer.split()[1]) < limit, answer
    assert outcome.summary.errored == 1 and took < limit + 20
    # the blocked thread was given up on without an exception left pending on it: that stalled every thread
    # running a trace function (a rubric's time bound) until the sleep ended, an hour later
    from evals_cli.graders.rubric import compile_rubric

    rendered = threading.Event()
    threading.Thread(target=lambda: (compile_rubric("{{ input }} after a hang"), rendered.set()), daemon=True).start()
    assert rendered.wait(10), "compiling a rubric stalled behind the abandoned tool's thread"


def _signalled_once_blocking(suite: Path, out: Path, blocking: Path, sig: signal.Signals,
                             bound: float) -> tuple[int, str, str, float]:
    """A real `evals run` (no EVAL_/OPENAI_ variables of the caller's), sent `sig` once its first sample finished
    and its blocking tool has written `blocking`: (exit code, stdout, stderr, seconds it took to stop). Every wait
    is bounded by `bound` seconds; the process is killed whatever happens."""
    proc = subprocess.Popen([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out), "--grace", "0.5"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))},
                                 "NO_COLOR": "1", "COLUMNS": "200"})
    try:
        wait_for_lines(out / "results.jsonl", 1, timeout=bound)
        deadline = time.monotonic() + bound
        while not blocking.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert blocking.exists()
        signalled = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=bound)
        return proc.returncode, stdout, stderr, time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_run_whose_tool_blocks_forever(server: ScriptedServer, tmp_path: Path,
                                                        sig: signal.Signals) -> None:
    """No sample_timeout at all (null): only the signal can end the run, and it does, keeping what finished."""
    server.script = agent_script({"hang": [call("block", {}), text("never")], "fine": [text("fine")]})
    suite = _suite(tmp_path, server, [{"id": "fine", "input": "fine", "ground_truth": "fine"},
                                      {"id": "hang", "input": "hang"}], None, concurrency=1)
    out = tmp_path / "out"
    code, stdout, stderr, took = _signalled_once_blocking(suite, out, tmp_path / "blocking.txt", sig, 30)
    assert code == 130, stdout + stderr
    assert took < 10, f"the run took {took:.1f} s to stop"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["gate"]["passed"] is None
    assert [r["sample_id"] for r in read_jsonl(out / "results.jsonl")] == ["fine"]  # kept, nothing invented
    assert "--resume" in stdout + stderr


# four calls can only all get past the barrier when they run at the same time
BARRIER_PY = '''import threading

BARRIER = threading.Barrier(4, timeout=10)


def meet(arguments, world):
    try:
        BARRIER.wait()
    except threading.BrokenBarrierError:
        return "alone"
    return "met"
'''

AGENT_PY = '''def agent(sample, tools):
    return tools.meet()
'''


def test_a_python_agents_tool_calls_hop_to_the_loop_and_run_side_by_side(server: ScriptedServer,
                                                                         tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(BARRIER_PY, encoding="utf-8")
    (tmp_path / "agent.py").write_text(AGENT_PY, encoding="utf-8")
    rows = [{"id": f"s{i}", "input": "meet", "ground_truth": "met"} for i in range(4)]
    suite = write_suite(tmp_path, rows, concurrency=4,
                        tools={"meet": {"description": "Meet.", "parameters": {}, "python": "tools.py:meet"}},
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    data = yaml.safe_load(suite.read_text())
    data["target"] = {"kind": "python", "callable": "agent.py:agent", "sample_timeout": 30}
    suite.write_text(yaml.safe_dump(data))
    outcome = evals_cli.run(suite, RunOptions(no_judge=True, output=tmp_path / "out"))
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    # each agent's thread waited on the run's loop for its call, and the four calls ran at the same time
    assert [line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]["result"] for line in lines] == ["met"] * 4
    assert outcome.summary.errored == 0 and outcome.exit_code == 0, outcome.messages


def test_sample_timeout_defaults_to_600_seconds_and_0_or_null_turns_it_off(server: ScriptedServer,
                                                                           tmp_path: Path) -> None:
    from evals_cli.models.target_specs import DEFAULT_SAMPLE_TIMEOUT, sample_limit
    from evals_cli.suite.loader import load_suite

    suite = write_suite(tmp_path, [{"id": "a", "input": "x", "ground_truth": "done"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    assert load_suite(suite).target.sample_timeout == DEFAULT_SAMPLE_TIMEOUT == 600
    assert sample_limit(0) is None and sample_limit(None) is None and sample_limit(5.0) == 5.0
    server.script = agent_script({"x": [text("done")]})
    for value in ("0", "1.5"):
        result = run_cli("run", str(suite), "--sample-timeout", value, "-o", str(tmp_path / f"out-{value}"))
        assert result.returncode in (0, 1), result.stdout + result.stderr
    bad = run_cli("run", str(suite), "--sample-timeout", "-1", "-o", str(tmp_path / "out-bad"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    negative = write_suite(tmp_path, [{"id": "a", "input": "x"}], base_url=server.url,
                           target={"sample_timeout": -5})
    checked = run_cli("validate", str(negative))
    assert checked.returncode == 2 and "suite.yaml:" in checked.stderr and "sample_timeout" in checked.stderr


@pytest.mark.slow
def test_sigterm_stops_a_run_while_an_mcp_server_is_busy_keeping_what_finished(server: ScriptedServer,
                                                                              tmp_path: Path) -> None:
    note = tmp_path / "blocking.txt"
    demo = str(ROOT / "tests" / "mcp_servers" / "demo_server.py")
    server.script = agent_script({"hang": [call("block", {"note": str(note)}), text("never")],
                                  "fine": [text("fine")]})
    suite = write_suite(tmp_path, [{"id": "fine", "input": "fine", "ground_truth": "fine"},
                                   {"id": "hang", "input": "hang"}], base_url=server.url, concurrency=1,
                        tools={}, graders={"answer": {"kind": "tool", "function": "contains"}},
                        mcp_servers={"demo": {"command": sys.executable, "args": [demo], "include": ["block"],
                                              "timeout": 3600}})
    out = tmp_path / "out"
    code, stdout, stderr, took = _signalled_once_blocking(suite, out, note, signal.SIGTERM, 60)
    assert code == 130, stdout + stderr
    assert took < 15, f"the run took {took:.1f} s to stop"
    assert [r["sample_id"] for r in read_jsonl(out / "results.jsonl")] == ["fine"]
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"


COUNT_PY = '''import threading
import time

ACTIVE = []
LOCK = threading.Lock()


def bump(arguments, world):
    with LOCK:
        ACTIVE.append(1)
        together = len(ACTIVE)
    time.sleep(0.2)
    world.records["counters"]["c"]["n"] += 1
    with LOCK:
        ACTIVE.pop()
    return "together" if together > 1 else "alone"
'''

FAN_OUT_PY = '''from concurrent.futures import ThreadPoolExecutor


def agent(sample, tools):
    with ThreadPoolExecutor(4) as pool:
        return " ".join(pool.map(lambda _: tools.bump(), range(4)))
'''


def test_a_python_agent_fanning_out_to_threads_acts_on_its_world_one_call_at_a_time(server: ScriptedServer,
                                                                                   tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(COUNT_PY, encoding="utf-8")
    (tmp_path / "agent.py").write_text(FAN_OUT_PY, encoding="utf-8")
    suite = write_suite(tmp_path, [{"id": "fan", "input": "go", "ground_truth": "alone"}],
                        tools={"bump": {"description": "Bump.", "parameters": {}, "python": "tools.py:bump"}},
                        environment={"records": {"counters": [{"id": "c", "n": 0}]}},
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    data = yaml.safe_load(suite.read_text())
    data["target"] = {"kind": "python", "callable": "agent.py:agent", "sample_timeout": 30}
    suite.write_text(yaml.safe_dump(data))
    evals_cli.run(suite, RunOptions(no_judge=True, output=tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"] is None, line["error"]
    results = [c["result"] for s in line["trajectory"]["turns"][0]["steps"] for c in s["tool_calls"]]
    assert results == ["alone"] * 4
    assert line["trajectory"]["state_changes"][0]["after"]["n"] == 4  # no update lost to another thread

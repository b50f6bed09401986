"""What `evals run` shows on a terminal and in a CI log, captured as text for review (issue 14).

    python bench/terminal_captures.py OUT_DIR [--widths 160 80] [--delay 0.35]

Against the scripted loopback server (tests/scripted_server.py), a 30-sample suite (some pass, some fail a grader,
some call a forbidden tool, some error) runs in tmux at each width; the captures are:

- `W-progress.txt`: the live progress view mid-run;
- `W-ctrl-c.txt`: the screen just after Ctrl-C (the "stopping: ..." message), `W-interrupted.txt`: the end of
  that run (the resume command);
- `W-final.txt`: a complete run's final table with the reasons under it;
- `ci-W.log` / `ci-W.err`: the same run with stdout and stderr piped to files (what a CI log holds).

tmux is needed for the terminal captures (Debian: `apt-get install tmux`); without it they are skipped with a
message and only the CI logs are written. `ci_log_problems()` is what tests/test_ci_log.py checks of a CI log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.scripted_server import Reply, ScriptedServer, call, last_user, steps_since_user, text  # noqa: E402

N = 30
CALLED = ["read_file", "search_knowledge_base"]  # the tools the script calls (the table must show them whole)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TOOLS = {
    "read_file": {"description": "Read a file", "parameters": {"path": "File path"}, "returns": "DB_PORT=5432"},
    "search_knowledge_base": {"description": "Search the docs", "parameters": {"query": "Query"},
                              "returns": "refunds take 5 days"},
    "delete_customer_record": {"description": "Delete a record", "parameters": {"id": "Record id"},
                               "returns": "deleted"},
}


def sample_ids(n: int = N) -> list[str]:
    """Ids of several shapes: short, long with dashes, one very long (never to be cut mid-word at 80 columns)."""
    shapes = ["db-port-{i:02d}", "refund-policy-question-{i:02d}", "s{i:02d}",
              "customer-escalation-with-a-rather-long-identifier-{i:02d}"]
    return [shapes[i % len(shapes)].format(i=i) for i in range(n)]


def rows(n: int = N) -> list[dict[str, Any]]:
    out = []
    for i, sid in enumerate(sample_ids(n)):
        row: dict[str, Any] = {"id": sid, "input": f"question {i}: {sid}", "ground_truth": "5432",
                               "tags": ["ops" if i % 2 else "billing"]}
        if i % 5 == 1:
            row["ground_truth"] = "no such answer"  # the answer grader fails
        if i % 7 == 3:
            row["forbidden_tools"] = ["read_file"]  # and it calls read_file: the forbidden grader fails
        out.append(row)
    return out


def script(delay: float) -> Any:
    """Per sample: one or two tool calls, then an answer; every 9th sample errors (HTTP 500)."""

    def answer(path: str, body: dict[str, Any]) -> Reply:
        user = last_user(body)
        i = int(user.split(":")[0].split()[-1])
        if i % 9 == 4:
            return Reply({"error": {"message": "upstream model overloaded, try again later"}}, status=500,
                         delay=delay)
        step = steps_since_user(body)
        plan = [call("read_file", {"path": ".env"})]
        if i % 3 == 0:
            plan.append(call("search_knowledge_base", {"query": "port"}))
        reply = plan[step] if step < len(plan) else text("The port is 5432.")
        return Reply(reply, delay=delay)

    return answer


def write_suite(folder: Path, url: str, concurrency: int = 4) -> Path:
    import yaml

    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
    suite = {
        "name": "terminal-captures", "dataset": "data.jsonl", "concurrency": concurrency,
        "target": {"kind": "openai_chat", "base_url": url, "model": "scripted", "api_key": "sk-test",
                   "max_retries": 0, "timeout": 10, "max_steps": 5},
        "tools": TOOLS,
        "graders": {"answer": {"kind": "tool", "function": "contains"}, "forbidden": {"kind": "forbidden_tools"}},
        # n/a is left out of the averages: `forbidden` averages 0.00 over the 4 samples that had forbidden tools,
        # so the weighted average is (0.78 + 0) / 2; the capture is of a run whose gate passes
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.3},
    }
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _env(columns: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVAL_AGENT_", "EVAL_JUDGE_", "EVAL_USER_", "OPENAI_", "NO_COLOR"))}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return env


def ci_log(suite: Path, out: Path, columns: int, log: Path) -> int:
    """The run with stdout and stderr piped to files, as a CI job runs it."""
    with log.open("w") as stdout, log.with_suffix(".err").open("w") as stderr:
        return subprocess.call([sys.executable, "-m", "evals_cli", "run", suite.name, "-o", str(out)],
                               stdout=stdout, stderr=stderr, env=_env(columns), cwd=suite.parent, timeout=300)


def ci_log_problems(log: str, ids: Iterable[str], tools: Iterable[str], columns: int) -> list[str]:
    """What is wrong with a CI log: no progress lines, ANSI codes, trailing spaces, lines over the width, an id
    or a tool name that is not whole on any line (cut or folded)."""
    problems = []
    lines = log.splitlines()
    if not any(line.startswith("progress: ") for line in lines):
        problems.append("no progress line")
    if ANSI.search(log) or "\r" in log:
        problems.append("ANSI codes or carriage returns")
    problems += [f"trailing spaces: {line!r}" for line in lines if line != line.rstrip()]
    # the progress lines, the results path and the footer's long sentences are not table lines
    table = [line for line in lines
             if not line.startswith(("progress: ", "results: ", "Run ", "full report", "every reason whole"))]
    problems += [f"wider than {columns}: {line!r}" for line in table if len(line) > columns]
    for word in [*ids, *tools]:
        if not any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", line) for line in lines):
            problems.append(f"{word!r} is not whole on any line")
    return problems


class Tmux:
    def __init__(self, name: str, width: int, height: int = 50) -> None:
        self.name, self.width, self.height = name, width, height

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout

    def start(self, command: list[str], cwd: Path) -> None:
        shell = " ".join(_quote(c) for c in command) + "; echo \"[exit $?]\"; sleep 600"
        env = " ".join(f"{k}={_quote(v)}" for k, v in _env().items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH"))
        self.run("new-session", "-d", "-s", self.name, "-x", str(self.width), "-y", str(self.height),
                 "-c", str(cwd), f"env {env} TERM=xterm-256color {shell}")

    def capture(self, history: bool = False) -> str:
        args = ["capture-pane", "-p", "-t", self.name]
        if history:
            args += ["-S", "-"]
        return "\n".join(line.rstrip() for line in self.run(*args).rstrip("\n").splitlines()) + "\n"

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def kill(self) -> None:
        self.run("kill-session", "-t", self.name)


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


def _wait(predicate: Any, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def terminal(suite: Path, work: Path, out_dir: Path, width: int) -> None:
    evals = [sys.executable, "-m", "evals_cli", "run", suite.name]
    # 1. mid-run progress, then Ctrl-C
    session = Tmux(f"evals-cap-{os.getpid()}-{width}a", width)
    run = work / "results" / f"{width}-interrupted"
    session.start([*evals, "-o", str(run.relative_to(work)), "--grace", "10"], suite.parent)
    try:
        _wait(lambda: _lines(run / "results.jsonl") >= 8)
        time.sleep(0.3)
        (out_dir / f"{width}-progress.txt").write_text(session.capture())
        session.keys("C-c")
        time.sleep(0.4)
        (out_dir / f"{width}-ctrl-c.txt").write_text(session.capture())
        _wait(lambda: "[exit " in session.capture(), 30)
        (out_dir / f"{width}-interrupted.txt").write_text(session.capture(history=True))
    finally:
        session.kill()
    # 2. a complete run: the final table and the reasons
    session = Tmux(f"evals-cap-{os.getpid()}-{width}b", width)
    run = work / "results" / f"{width}-complete"
    session.start([*evals, "-o", str(run.relative_to(work))], suite.parent)
    try:
        _wait(lambda: "[exit " in session.capture(), 120)
        (out_dir / f"{width}-final.txt").write_text(session.capture(history=True))
    finally:
        session.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="Folder for the captures (created).")
    parser.add_argument("--widths", type=int, nargs="+", default=[160, 80])
    parser.add_argument("--delay", type=float, default=0.35, help="Seconds the scripted server takes per reply.")
    parser.add_argument("--keep", type=Path, default=None, help="Copy the CI runs' result folders here.")
    args = parser.parse_args(argv)
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    server = ScriptedServer(script(args.delay)).start()
    try:
        with tempfile.TemporaryDirectory(prefix="evals-captures-") as tmp:
            work = Path(tmp)  # the runs' own folders: relative paths (results/...) in what is captured
            suite = write_suite(work, server.url)
            for width in args.widths:
                code = ci_log(suite, Path("results") / f"ci-{width}", width, out_dir / f"ci-{width}.log")
                problems = ci_log_problems((out_dir / f"ci-{width}.log").read_text(), sample_ids(), CALLED, width)
                if args.keep is not None:
                    shutil.copytree(work / "results" / f"ci-{width}", args.keep / f"ci-{width}", dirs_exist_ok=True)
                print(f"ci-{width}.log: exit {code}; " + ("ok" if not problems else "; ".join(problems)))
            if shutil.which("tmux") is None:
                print("tmux not found: terminal captures skipped (Debian: apt-get install tmux)")
                return 0
            for width in args.widths:
                terminal(suite, work, out_dir, width)
                print(f"{width} columns: {width}-progress.txt, {width}-ctrl-c.txt, {width}-interrupted.txt, "
                      f"{width}-final.txt")
    finally:
        server.stop()
    print(f"captures in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

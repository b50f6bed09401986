"""evals-cli against a real small model (Qwen2.5-Coder-0.5B-Instruct, llama.cpp on 127.0.0.1): `make test-real`.

Runs suites/real_model.yaml the way a user would (`python -m evals_cli run` in a subprocess) with --record,
then --replay of that recording with both endpoints pointed at a closed port. What is asserted holds whatever the
small model answers: a verdict exit code (0 or 1, never 2 or 3), a trajectory for every sample with its tool calls
parsed, every judge grade a number or a counted judge failure, the judge's structured-output step-down
(llama.cpp answers `json_schema` with HTTP 500: probed once, then json_object), identical grades on replay, and
the API keys in no output. The runtime and the model are set up once into ~/.cache/evals-cli/ (see
real_model_server.py); the test is skipped only on machines without the project's shared folder. Each phase
(setup, server start, live run, replay) has its own budget (real_model_phases.py): a machine too busy for one
fails naming the phase and how far it got.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.real_model_phases import BUDGETS, Phase, PhaseTimeout, is_judge, run_within, suite_progress
from tests.real_model_server import closed_port, machine_threads, serve, shared_dir

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "suites" / "real_model.yaml"
JUDGE = "quality"
AGENT_KEY = "sk-realmodel-" + secrets.token_hex(16)
JUDGE_KEY = "sk-realjudge-" + secrets.token_hex(16)

SAMPLES = sum(1 for line in (ROOT / "datasets" / "real_model.jsonl").read_text().splitlines() if line.strip())

# each phase fails on its own budget with a message; pytest's bound (every phase's budget and some) only catches a
# harness that hangs outside them
pytestmark = [pytest.mark.real_model, pytest.mark.timeout(sum(BUDGETS.values()) + 300)]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    folder: Path
    seconds: float

    @property
    def results(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.folder / "results.jsonl").read_text().splitlines() if line.strip()]

    @property
    def summary(self) -> dict[str, Any]:
        return json.loads((self.folder / "summary.json").read_text())


def evals_run(phase: Phase, folder: Path, base_url: str, *extra: str, recording: Path | None = None) -> Run:
    """The suite run as a user would, within `phase`'s budget; past it, PhaseTimeout says how many samples and
    (when `recording`) model calls were done."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
    env.update(NO_COLOR="1", COLUMNS="160", EVAL_AGENT_BASE_URL=base_url, EVAL_JUDGE_BASE_URL=base_url,
               EVAL_AGENT_API_KEY=AGENT_KEY, EVAL_JUDGE_API_KEY=JUDGE_KEY)
    # --max-error-rate 1: a sample whose judge gave no verdict is errored (category judge), and one of three would
    # be past the default 0.2 (exit 3); here such failures are counted and checked, not the small judge's skill
    started = time.monotonic()
    done = run_within(phase, [sys.executable, "-m", "evals_cli", "run", str(SUITE), "-o", str(folder),
                              "--max-error-rate", "1", *extra],
                      lambda: suite_progress(folder, SAMPLES, recording), cwd=ROOT, env=env)
    return Run(done.returncode, done.stdout, done.stderr, folder, time.monotonic() - started)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shared_dir() is None:
        pytest.skip("no shared/local-model beside the repo or a folder above it (the project's machines have it): "
                    "no runtime or model")
    return tmp_path_factory.mktemp("real-model")


@pytest.fixture(scope="module")
def threads() -> tuple[int, str]:
    """llama.cpp's thread count, chosen from the load before anything of this test adds to it."""
    return machine_threads()


@pytest.fixture(scope="module")
def recorded(work: Path, threads: tuple[int, str]) -> tuple[Run, Path]:
    """The suite run live against the model, recorded; the server is stopped before the tests look at it."""
    recording = work / "real_model.recording.jsonl"
    try:
        with serve("0.5b", work / "server.log", threads=threads[0]) as base_url:
            run = evals_run(Phase("live run", BUDGETS["live run"]), work / "live", base_url, "--record",
                            str(recording), recording=recording)
    except PhaseTimeout as exc:  # the phase and how far it got say it all; a traceback through the harness does not
        pytest.fail(f"{exc}\n(llama.cpp's log: {work / 'server.log'})", pytrace=False)
    return run, recording


@pytest.fixture(scope="module")
def replayed(recorded: tuple[Run, Path], work: Path) -> Run:
    """The recording replayed with both endpoints at a closed port: a single live call would fail."""
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    try:
        return evals_run(Phase("replay", BUDGETS["replay"]), work / "replay", dead, "--replay", str(recorded[1]))
    except PhaseTimeout as exc:
        pytest.fail(str(exc), pytrace=False)


def exchanges(recording: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in recording.read_text().splitlines() if line.strip()]


def check_error(result: dict[str, Any]) -> None:
    """No sample fails on its own (endpoint, parsing, replay); the only error allowed is a judge that gave no
    verdict, which marks the sample incomplete."""
    error = result["error"]
    assert error is None or (error["category"] == "judge" and error["message"].startswith("incomplete:")), \
        (result["sample_id"], error)


def judge_scores(result: dict[str, Any]) -> list[float | None]:
    """The judge's scores of a sample: one per turn for a per-turn sample, else the one."""
    grade = result["grades"][JUDGE]
    return [turn["score"] for turn in grade["per_turn_grades"] or [grade]]


def explain(run: Run) -> str:
    return f"exit {run.returncode}\n--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-3000:]}"


def test_live_run_gives_a_verdict_and_a_trajectory_per_sample(recorded: tuple[Run, Path], threads: tuple[int, str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run, recording = recorded
    assert run.returncode in (0, 1), explain(run)  # 2 (bad suite) or 3 (run broken) is never the model's doing
    assert "Traceback" not in run.stderr + run.stdout, explain(run)
    rows = [json.loads(line) for line in (ROOT / "datasets" / "real_model.jsonl").read_text().splitlines()]
    user_messages = {row["id"]: len(row["input"]) if isinstance(row["input"], list) else 1 for row in rows}
    results = run.results
    assert sorted(r["sample_id"] for r in results) == sorted(user_messages)
    agent_calls_with_tools = 0
    for result in results:
        check_error(result)
        trajectory = result["trajectory"]
        turns = trajectory["turns"]
        # every user message got a turn, unless an earlier turn ended the conversation (max_steps, empty answer)
        assert 1 <= len(turns) <= user_messages[result["sample_id"]], result["sample_id"]
        assert len(turns) == user_messages[result["sample_id"]] or trajectory["stop_reason"] != "completed"
        assert all(turn["steps"] for turn in turns), result["sample_id"]
        for turn in turns:
            for step in turn["steps"]:
                agent_calls_with_tools += bool(step["tool_calls"])
                for call in step["tool_calls"]:  # parsed into a call the mocked tools answered, or a named error
                    assert isinstance(call["name"], str) and call["name"], call
                    assert isinstance(call["arguments"], dict) or call["arguments_error"], call
                    assert call["result"], call
    # every reply of the server that carried tool_calls is a step with parsed tool calls in the results
    agent = [e for e in exchanges(recording) if not is_judge(e) and e["status"] == 200]
    replied_calls = sum(1 for e in agent if e["response"]["choices"][0]["message"].get("tool_calls"))
    assert replied_calls == agent_calls_with_tools
    assert sum(len(turn["steps"]) for r in results for turn in r["trajectory"]["turns"]) == len(agent)

    tools = [c["name"] for r in results for t in r["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]
    judge = [e for e in exchanges(recording) if is_judge(e)]
    modes = ", ".join(f"{e['context'].rsplit('(', 1)[-1].rstrip(')')} {e['status']}" for e in judge)
    with capsys.disabled():
        print(f"\n[real-model] live run with {threads[1]}: exit {run.returncode} in {run.seconds:.0f}s; "
              f"{len(agent)} agent calls, tool calls: "
              f"{', '.join(tools) or 'none'}; stop reasons: {[r['trajectory']['stop_reason'] for r in results]}; "
              f"judge calls: {modes}; judge grades missing: {run.summary['graders'][JUDGE]['errors']}; "
              f"gate metric {run.summary['gate'].get('metric')}")


def test_every_judge_grade_is_a_number_or_a_counted_failure(recorded: tuple[Run, Path]) -> None:
    run, _ = recorded
    failed = 0
    for result in run.results:
        grade = result["grades"][JUDGE]
        scores = judge_scores(result)
        for score in scores:
            assert score is None or (isinstance(score, float | int) and 0 <= score <= 1), (result["sample_id"], grade)
        if None in scores or grade["score"] is None:  # a failed verdict is missing, never a silent 0
            failed += 1
            assert grade["score"] is None and grade["error"] and "judge" in grade["error"], grade
            assert result["error"] and result["error"]["category"] == "judge", result["error"]
        else:
            assert grade["error"] is None, grade
            if "mode" in grade["metadata"]:  # the mode that answered: never json_schema, which llama.cpp refuses
                assert grade["metadata"]["mode"] in ("json_object", "text"), grade
    counted = run.summary["graders"][JUDGE]["errors"]
    assert counted == failed, (counted, failed)
    incomplete = sum(r["error"] is not None for r in run.results)  # a sample missing a judge grade is incomplete
    assert run.summary["errored"] == incomplete == failed, (run.summary["errored"], incomplete, failed)


def test_judge_steps_down_from_json_schema_once(recorded: tuple[Run, Path]) -> None:
    """llama.cpp answers response_format json_schema with HTTP 500: the first judge call steps down to
    json_object at once (no retries), and the run remembers it: no later call tries json_schema again."""
    _, recording = recorded
    judge = [e for e in exchanges(recording) if is_judge(e)]
    assert judge, "no judge call was recorded"
    kinds = [(e["request"].get("response_format") or {}).get("type", "text") for e in judge]
    assert kinds[0] == "json_schema" and judge[0]["status"] == 500, (kinds[:2], judge[0]["status"])
    assert kinds[1] == "json_object" and "(json_object)" in judge[1]["context"], kinds[:2]
    assert kinds.count("json_schema") == 1, kinds
    assert all(e["status"] == 200 for e in judge[1:]), [e["status"] for e in judge]


def test_replay_without_network_gives_identical_grades(recorded: tuple[Run, Path], replayed: Run,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    live, _ = recorded
    with capsys.disabled():
        print(f"\n[real-model] replay: exit {replayed.returncode} in {replayed.seconds:.0f}s")
    assert replayed.returncode == live.returncode, explain(replayed)

    def grades(run: Run) -> dict[str, Any]:
        """Every grade with its rationale and metadata, and each sample's score, verdict and error."""
        for r in run.results:
            check_error(r)
        return {r["sample_id"]: (r["grades"], r["score"], r["passed"], r["error"]) for r in run.results}

    def calls(run: Run) -> dict[str, list[tuple[str, Any]]]:
        return {r["sample_id"]: [(c["name"], c["arguments"]) for t in r["trajectory"]["turns"] for s in t["steps"]
                                 for c in s["tool_calls"]] for r in run.results}

    assert grades(replayed) == grades(live)
    assert calls(replayed) == calls(live)
    assert replayed.summary["gate"] == live.summary["gate"]
    assert replayed.summary["graders"] == live.summary["graders"]


def test_no_api_key_in_any_output(recorded: tuple[Run, Path], replayed: Run) -> None:
    live, recording = recorded
    texts = {"live stdout": live.stdout, "live stderr": live.stderr,
             "replay stdout": replayed.stdout, "replay stderr": replayed.stderr}
    for path in [recording, *live.folder.rglob("*"), *replayed.folder.rglob("*")]:
        if path.is_file():
            texts[str(path)] = path.read_text(errors="replace")
    assert len(texts) > 6
    for key in (AGENT_KEY, JUDGE_KEY):
        leaks = [name for name, text in texts.items() if key in text or key[-16:] in text]
        assert not leaks, leaks

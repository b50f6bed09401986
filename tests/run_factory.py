"""Finished runs for the exporter and comparison tests: built from the models, or produced by the real CLI.

`make_result` builds a SampleResult the way the runner fills one (trajectory, grades, weighted score,
pass/fail); `scripted_run` runs `evals run` against the scripted server for a run with every feature
the exporters must handle (tool calls, a per-turn sample, a failure, an error, hostile model output).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals_cli.models.results import ErrorInfo, GateResult, Grade, GraderAggregate, RunSummary, SampleResult, TurnGrade
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn, Usage
from tests.helpers import run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, text

XSS = "<script>alert(1)</script>"


def tool_call(name: str, arguments: dict[str, Any] | None = None, result: str = "ok", **extra: Any) -> ToolCall:
    args = arguments or {}
    return ToolCall(id=f"call-{name}", name=name, arguments=args, raw_arguments=json.dumps(args), result=result, **extra)


def make_result(sample_id: str, scores: dict[str, float | None], *, passed: bool | None = None, repeat: int = 0,
                answer: str = "an answer", user: str = "a question", calls: list[ToolCall] | None = None,
                error: tuple[str, str] | None = None, per_turn: dict[str, list[float | None]] | None = None,
                rationale: str = "because", latency: float = 0.5, tags: list[str] | None = None) -> SampleResult:
    """A result as the runner writes it. `passed` defaults to weighted score ≥ 0.8 (equal weights)."""
    steps = []
    if calls:
        steps.append(Step(tool_calls=calls, finish_reason="tool_calls", usage=Usage(prompt_tokens=50, completion_tokens=10)))
    steps.append(Step(content=answer, finish_reason="stop", usage=Usage(prompt_tokens=60, completion_tokens=8)))
    turns = [Turn(user=user, steps=steps)]
    grades: dict[str, Grade] = {}
    for name, score in scores.items():
        grades[name] = Grade(score=score, rationale=f"{name} {rationale}", error=None if score is not None else "no score")
    for name, turn_scores in (per_turn or {}).items():
        turns = [Turn(user=f"{user} (turn {i + 1})", steps=[Step(content=f"{answer} {i + 1}", finish_reason="stop")])
                 for i in range(len(turn_scores))]
        per = [TurnGrade(turn=i + 1, score=s, rationale=f"turn {i + 1} rationale", submission=f"{answer} {i + 1}",
                         ground_truth=f"truth {i + 1}") for i, s in enumerate(turn_scores)]
        present = [s for s in turn_scores if s is not None]
        mean = sum(present) / len(present) if present else None
        grades[name] = Grade(score=mean, rationale=f"{sum(1 for s in present if s >= 1)}/{len(per)} turns passed",
                             per_turn=per, turns_passed=sum(1 for s in present if s >= 1), turns_total=len(per))
    result = SampleResult(sample_id=sample_id, repeat=repeat, input=user, tags=tags or [],
                          trajectory=Trajectory(turns=turns), latency_s=latency)
    if error is not None:
        result.error = ErrorInfo(category=error[0], message=error[1])  # type: ignore[arg-type]
        result.trajectory.stop_reason = "error"
        return result
    result.grades = grades
    present = [g.score for g in grades.values() if g.score is not None]
    result.score = sum(present) / len(present) if present else None
    if passed is None and result.score is not None:
        passed = result.score >= 0.8 - 1e-9
    result.passed = passed
    result.usage = result.trajectory.usage()
    return result


def make_summary(results: list[SampleResult], suite: str = "unit-suite", gate_passed: bool | None = False) -> RunSummary:
    """A summary consistent with the results (counts and per-grader averages)."""
    names = list(dict.fromkeys(n for r in results for n in r.grades))
    graders = {}
    for name in names:
        scores = [r.grades[name].score for r in results if name in r.grades and r.grades[name].score is not None]
        avg = sum(scores) / len(scores) if scores else None  # type: ignore[arg-type]
        graders[name] = GraderAggregate(count=len(scores), avg_score=avg,
                                        accuracy=sum(1 for s in scores if s >= 0.8) / len(scores) if scores else None)
    gate = GateResult(passed=gate_passed, metric=0.5, op="gte", value=0.8, aggregation="avg_score",
                      weights={n: 1.0 for n in names}, message="Gate FAILED: weighted avg_score = 0.500 not ≥ 0.8")
    return RunSummary(suite=suite, started_at="2025-01-02T03:04:05+00:00", duration_s=12.5, total=len(results),
                      errored=sum(1 for r in results if r.error), passed=sum(1 for r in results if r.passed is True),
                      failed=sum(1 for r in results if r.passed is False and r.error is None), graders=graders, gate=gate,
                      usage=Usage(prompt_tokens=1000, completion_tokens=200))


def write_run(directory: Path, results: list[SampleResult], summary: RunSummary | None) -> Path:
    """A run folder as `evals run` leaves it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in results), encoding="utf-8")
    if summary is not None:
        (directory / "summary.json").write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    return directory


ROWS = [
    {"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"],
     "tags": ["tools"]},
    {"id": "math", "input": "math: 2+2?", "ground_truth": "4", "forbidden_tools": ["read_file", "list_files"],
     "tags": ["negative"]},
    {"id": "conv", "input": ["first: host?", "second: port?", "third: user?"],
     "ground_truth": ["localhost", "5432", "admin"]},
    {"id": "xss", "input": "xss: say hi", "ground_truth": "hi"},
    {"id": "broken", "input": "explode", "ground_truth": "4"},
]
SCRIPT = {
    "host": [call("read_file", {"path": ".env"}), text("The host is localhost.")],
    "math": [call("read_file", {"path": "calc"}), text("5")],
    "first": [call("read_file", {"path": ".env"}), text("localhost")],
    "second": [text("port 5433")],
    "third": [text("root")],
    "xss": [call("list_files", {"directory": XSS}), text(f"{XSS} & \"quotes\" 'single' \x1b[31mred\x1b[0m")],
    "explode": [Reply({"error": {"message": "boom"}}, status=500)],
}


def scripted_run(server: ScriptedServer, tmp_path: Path) -> Path:
    """A real run folder: 5 samples — passed, failed (forbidden tool), per-turn with two failed turns, hostile
    output, endpoint error."""
    server.script = agent_script(SCRIPT)
    graders = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"},
               "avoided": {"kind": "tools_avoided"}}
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=graders)
    out = tmp_path / "run"
    result = run_cli("run", str(suite), "-o", str(out), "--max-error-rate", "0.5")
    assert result.returncode == 1, result.stdout + result.stderr  # the gate fails; the run completes
    return out

"""One evals-cli result as an inspect_ai sample (`EvalSample` of inspect_ai/log/_log.py, as JSON): the conversation
as chat messages with its tool calls and results, a score per grader with its rationale as the explanation, the
sample's error. inspect_ai is not imported: the shapes are written from its log schema, and a test reads them
back with inspect's own `read_eval_log`.

What inspect has no place for is never dressed up as a score: a grade that could not be given (an error) and a
grader with nothing to check (n/a, whose 1.0 is a convention) are left out of `scores` and named in the sample's
`metadata.evals` (`grade_errors`, `not_applicable`), beside the gate's verdict (`passed`, the weighted `score`,
`failed_by`). The run folder keeps no ground truth, so a sample's `target` is its per-turn ground truths when
its grades recorded them, else empty.
"""

from __future__ import annotations

import hashlib
from typing import Any

from evals_cli.models.results import Grade, SampleResult
from evals_cli.models.trajectory import Step, Trajectory

_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "max_tokens", "content_filter": "content_filter"}


def short_id(*parts: object) -> str:
    """A stable id (inspect writes random ones; a run exported twice gives the same file)."""
    return hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:22]


def _text(content: Any) -> str:
    """An OpenAI message content (text, or a list of parts) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _prefilled(message: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role") if message.get("role") in ("system", "user", "assistant", "tool") else "user"
    out: dict[str, Any] = {"role": role, "content": _text(message.get("content")), "source": "input"}
    if role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [{"id": str(c.get("id", "")), "function": str((c.get("function") or {}).get("name", "")),
                              "arguments": {}, "type": "function"} for c in message["tool_calls"]]
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    return out


def _step_messages(step: Step, model: str | None) -> list[dict[str, Any]]:
    calls = [{"id": c.id, "function": c.name, "arguments": c.arguments or {}, "parse_error": c.arguments_error,
              "type": "function"} for c in step.tool_calls]
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": step.content or "", "source": "generate",
                                       "tool_calls": calls or None, "model": model}]
    for call in step.tool_calls:
        tool: dict[str, Any] = {"role": "tool", "content": call.result, "tool_call_id": call.id, "function": call.name}
        if call.is_error:
            tool["error"] = {"type": "unknown", "message": call.result}
        messages.append(tool)
    return messages


def messages(trajectory: Trajectory, model: str | None) -> list[dict[str, Any]]:
    """The conversation as run: pre-filled messages, then each user turn and the agent's steps (assistant
    messages with their tool calls, a tool message per result)."""
    out = [_prefilled(m) for m in trajectory.prefilled if isinstance(m, dict)]
    for turn in trajectory.turns:
        if turn.user is not None:
            out.append({"role": "user", "content": turn.user, "source": "input"})
        for step in turn.steps:
            out += _step_messages(step, model)
    return out


def _output(trajectory: Trajectory, model: str) -> dict[str, Any]:
    steps = [step for turn in trajectory.turns for step in turn.steps]
    usage = trajectory.usage()
    out: dict[str, Any] = {"model": model, "choices": [], "completion": trajectory.final_answer,
                           "usage": _usage(usage.prompt_tokens, usage.completion_tokens)}
    if steps:
        last = _step_messages(steps[-1], model)[0]
        out["choices"] = [{"message": last, "stop_reason": _FINISH.get(steps[-1].finish_reason or "", "unknown")}]
    return out


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}


def scores(result: SampleResult) -> dict[str, dict[str, Any]]:
    """A score per grade that was given: value = the score, explanation = the rationale."""
    out: dict[str, dict[str, Any]] = {}
    for name, grade in result.grades.items():
        if grade.score is None or not grade.applicable:
            continue
        metadata = dict(grade.metadata)
        if grade.per_turn_grades:
            metadata["per_turn"] = [t.model_dump(mode="json") for t in grade.per_turn_grades]
        out[name] = {"value": grade.score, "answer": grade.submission, "explanation": grade.rationale,
                     "metadata": metadata or None}
    return out


def _target(grades: dict[str, Grade]) -> str | list[str]:
    for grade in grades.values():
        truths = [t.ground_truth for t in grade.per_turn_grades or []]
        if truths and all(isinstance(t, str) for t in truths):
            return [str(t) for t in truths]
    return ""


def _evals_metadata(result: SampleResult) -> dict[str, Any]:
    """What the gate decided and what inspect has no field for."""
    return {"repeat": result.repeat, "tags": result.tags, "passed": result.passed, "score": result.score,
            "score_note": result.score_note, "failed_by": [f.model_dump(mode="json") for f in result.failed_by],
            "stop_reason": result.trajectory.stop_reason, "cost": result.cost,
            "not_applicable": {n: g.rationale for n, g in result.grades.items() if g.applicable is False},
            "grade_errors": {n: g.error or g.rationale for n, g in result.grades.items()
                             if g.score is None and g.applicable}}


def error(result: SampleResult) -> dict[str, str] | None:
    if result.error is None:
        return None
    return {"message": f"{result.error.category}: {result.error.message}", "traceback": "", "traceback_ansi": ""}


def sample(result: SampleResult, model: str) -> dict[str, Any]:
    """The result as an inspect `EvalSample`."""
    agent_model = result.trajectory.agent_model or model
    usage = result.usage
    said = messages(result.trajectory, agent_model)
    return {"id": result.sample_id, "epoch": result.repeat + 1, "input": result.input,
            "target": _target(result.grades), "messages": said, "output": _output(result.trajectory, agent_model),
            "scores": scores(result), "metadata": {"evals": _evals_metadata(result)},
            "model_usage": {agent_model: _usage(usage.prompt_tokens, usage.completion_tokens)},
            "total_time": round(result.latency_s, 3), "working_time": round(result.latency_s, 3),
            "uuid": short_id("sample", result.sample_id, result.repeat), "error": error(result),
            "message_count": len(said)}


def summary(sample_json: dict[str, Any]) -> dict[str, Any]:
    """The sample's `EvalSampleSummary` (summaries.json: what `inspect view` lists before opening a sample)."""
    keys = ("id", "epoch", "input", "target", "scores", "model_usage", "total_time", "working_time", "uuid",
            "message_count")
    out = {key: sample_json[key] for key in keys}
    err = sample_json.get("error")
    out.update(error=err["message"] if err else None, completed=True)
    return out

"""Grade one trajectory with every grader; per-turn samples are graded turn by turn, and graders with
`scope: reply` grade each agent reply on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evals_cli.concurrency import each_or_raise
from evals_cli.custom_code import CustomCodeError
from evals_cli.errors import RunAborted
from evals_cli.graders.base import GradeContext, Grader
from evals_cli.models.results import Grade, TurnGrade, TurnScores
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory

if TYPE_CHECKING:
    from evals_cli.computer.protocol import EpisodeComputer


async def _safe(grader: Grader, ctx: GradeContext) -> Grade:
    """A grader that raises never takes the run down: its grade is an error (score None)."""
    try:
        return await grader.grade(ctx)
    except RunAborted:  # the grader's model cannot be used at all (the sessions' judge): the run stops
        raise
    except CustomCodeError as exc:  # the suite's own code exited, was interrupted or ran out of time: marked so
        return Grade.failed(str(exc), custom_code=True)  # the sample's error says custom_code (Gate.judge_sample)
    except Exception as exc:
        return Grade.failed(f"grader raised {type(exc).__name__}: {exc}")


async def _grade_per_turn(grader: Grader, sample: Sample, trajectory: Trajectory,
                          tools: dict[str, ToolSpec]) -> TurnScores:
    """letta-evals' per-turn shape: one grade per user turn (0-based), a turn never reached a 0 (the agent did not
    get there); what passed, and the grade's score, the gate settles (gate/turns.py)."""
    turns: list[TurnGrade] = []
    grades: list[Grade] = []
    for index in range(len(sample.user_turns)):
        ground_truth = sample.ground_truth_for(index)
        if index >= len(trajectory.turns):
            grades.append(Grade(score=0.0, rationale=f"turn {index} was never reached "
                                                     f"({trajectory.stop_reason})"))
        else:
            # the loop's stop reason belongs to the turn it stopped in (the last one run), not to earlier turns
            last = index == len(trajectory.turns) - 1
            view = Trajectory(prefilled=trajectory.prefilled, turns=[trajectory.turns[index]],
                              stop_reason=trajectory.stop_reason if last else "completed")
            ctx = GradeContext(sample, trajectory.scoped(index), view, index, ground_truth, tools)
            grades.append(await _safe(grader, ctx))
        g = grades[-1]
        turns.append(TurnGrade(turn=index, score=g.score, rationale=g.rationale,
                               submission=g.submission or "", ground_truth=ground_truth))
    return TurnScores("turn", grades, turns, _turns_metadata(grades, {}))


DIVERGED = ("not graded: the conversation left the recorded user's path at turn {turn} and was stopped there "
            "(--replay-user with --on-divergence stop); a conversation cut short has no whole-conversation verdict, "
            "and leaving the path is not the agent's failure by itself (graders with scope: reply still grade the "
            "replies it gave)")

def _reply_context(sample: Sample, trajectory: Trajectory, index: int, tools: dict[str, ToolSpec],
                   judge: bool) -> GradeContext:
    """What grading reply `index` sees. Its own turn is the view (the extractor's submission: that reply);
    a judge also sees the conversation up to it (its rubric's `trajectory`, `input`: context for the reply),
    every other grader sees only that reply's tool calls: `tools_avoided`, `no_loops` or `tool_schema` per reply
    must not fail reply 3 for what reply 1 did."""
    view = Trajectory(prefilled=trajectory.prefilled, turns=[trajectory.turns[index]],
                      stop_reason=trajectory.stop_reason if index == len(trajectory.turns) - 1 else "completed",
                      state_changes=trajectory.state_changes, setup_changes=trajectory.setup_changes)
    ground_truth = sample.ground_truth_for(index if sample.per_turn else None)
    return GradeContext(sample, trajectory.scoped(index) if judge else view, view, index, ground_truth, tools)


async def _grade_per_reply(grader: Grader, sample: Sample, trajectory: Trajectory,
                           tools: dict[str, ToolSpec]) -> TurnScores:
    """`scope: reply`: each agent reply (each turn of the trajectory as run, however many the conversation had)
    graded on its own, kept like per-turn grades (0-based turns). The share of replies that passed, the grade's
    score, is the gate's to count (gate/turns.py): a reply passes at the grader's `threshold`, else at the
    gate's per-sample pass value."""
    turns: list[TurnGrade] = []
    grades: list[Grade] = []
    for index in range(len(trajectory.turns)):
        ctx = _reply_context(sample, trajectory, index, tools, grader.uses_judge)
        grade = await _safe(grader, ctx)
        grades.append(grade)
        turns.append(TurnGrade(turn=index, score=grade.score, rationale=grade.rationale,
                               submission=grade.submission or "", ground_truth=ctx.ground_truth))
    spec = grader.spec
    own = spec.threshold if spec.threshold is not None else type(spec).threshold_by_default
    metadata = _turns_metadata(grades, {"scope": "reply", "min_share": spec.share_needed})
    return TurnScores("reply", grades, turns, metadata, threshold=own)


def _turns_metadata(grades: list[Grade], metadata: dict[str, Any]) -> dict[str, Any]:
    """What the turns' or replies' grades add up to, for the grader's grade: usage, the judge's calls, custom_code."""
    metadata["usage"] = _usage(grades)
    _judge_metadata(grades, metadata)
    _custom_code_mark(grades, metadata)
    return metadata


def _usage(grades: list[Grade]) -> dict[str, int]:
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for g in grades:
        for key in usage:
            usage[key] += g.metadata.get("usage", {}).get(key, 0)
    return usage


def _custom_code_mark(grades: list[Grade], metadata: dict[str, Any]) -> None:
    """A turn or reply whose custom code failed (see `_safe`) marks the whole grade, as that turn's error does."""
    if any(g.metadata.get("custom_code") for g in grades if g.score is None):
        metadata["custom_code"] = True


def _judge_metadata(grades: list[Grade], metadata: dict[str, Any]) -> None:
    """What a judge's per-turn or per-reply grades keep for the report: the judge, each call, panels."""
    judge = next((g.metadata["judge"] for g in grades if "judge" in g.metadata), None)
    if judge is not None:
        metadata["judge"] = judge
        # each turn's judge call (rendered prompt, verdicts with the reply) for the report
        metadata["turn_calls"] = [{"turn": i, "messages": g.metadata["messages"], "verdicts": g.metadata.get("verdicts", [])}
                                  for i, g in enumerate(grades) if "messages" in g.metadata]
    units = [u for g in grades for u in g.metadata.get("panel_units", [])]
    if units:
        metadata["panel_units"] = units
    if any(g.metadata.get("unreliable") for g in grades):
        metadata["unreliable"] = True


async def grade_sample(graders: dict[str, Grader], sample: Sample, trajectory: Trajectory,
                       tools: dict[str, ToolSpec] | None = None, *,
                       user_tools: dict[str, ToolSpec] | None = None,
                       computer: EpisodeComputer | None = None) -> dict[str, Grade | TurnScores]:
    """Every grader's grade on one sample, run concurrently (judge calls overlap). Graders never see the gate's
    rules: a grader that grades per turn or per reply returns its raw turn grades (`TurnScores`), which the gate
    settles (`Gate.settle`) before it decides the sample. `user_tools`: the simulated user's own tools (dual
    control), which apply its gold actions. `computer`: the episode's, its sandbox still up (sandbox_check)."""
    tools = tools or {}

    async def one(grader: Grader) -> Grade | TurnScores:
        if grader.reads_steps and trajectory.not_observed:
            return Grade.not_applicable(trajectory.not_observed)
        if getattr(grader.spec, "scope", "conversation") == "reply":
            return await _grade_per_reply(grader, sample, trajectory, tools)
        if trajectory.end_reason == "diverged":
            return Grade.failed(DIVERGED.format(turn=len(trajectory.turns)), not_graded="diverged")
        if grader.per_turn and sample.per_turn:
            return await _grade_per_turn(grader, sample, trajectory, tools)
        ctx = GradeContext(sample, trajectory, trajectory, None, sample.ground_truth_for(None), tools,
                           user_tools or {}, computer)
        return await _safe(grader, ctx)

    # deterministic graders run inline; only judges (network calls) are worth a task each
    out = {name: await one(g) for name, g in graders.items() if not g.uses_judge}
    judges = [name for name, g in graders.items() if g.uses_judge]
    if judges:

        async def judge(name: str) -> None:
            out[name] = await one(graders[name])

        await each_or_raise(judges, judge, len(judges))
    return {name: out[name] for name in graders}

"""An LLM judge with a Jinja2 (or letta-style) rubric, optionally sampled n times or asked as a panel.

Instructions live in the system message and in the rubric's own text; every value the rubric quotes from the
sample (input, answer, trajectory, ground truth, row variables) is fenced in `<data-NONCE>` tags and the judge
is told it is data. The verdict is asked for by structured output, falling back to JSON mode, then
plain text. A judge that fails yields score None with the reason, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from evals_cli.endpoints.resolve import Endpoint, resolve_judge
from evals_cli.graders.agreement import combine, spread
from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.graders.judge_call import ExtraField, ask_judge, judge_messages, step_downs
from evals_cli.graders.rubric import (
    RubricError,
    load_row_rubric,
    load_rubric,
    reads_variable,
    row_rubric_is_path,
    row_rubric_path,
    rubric_parts,
)
from evals_cli.graders.rubric_vars import rubric_variables
from evals_cli.graders.scales import Scale
from evals_cli.labels import Label, calibration_labels
from evals_cli.models.base import StrictModel
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.judge import Choice
from evals_cli.models.results import NO_ANSWER, Grade, ending_without_answer
from evals_cli.models.sample import Sample


class PanelJudge(StrictModel):
    """One judge of a panel; unset fields fall back like a single judge's."""

    model: str = Field(description="Judge model.")
    base_url: str | None = Field(default=None, description="Its endpoint (default: the judge endpoint).")
    api_key: str | None = Field(default=None, description="Its key (default: the judge key).")


class ModelJudgeSpec(GraderBase):
    """An LLM grades the submission with a rubric (Jinja2, or letta-style {input}/{submission} placeholders)."""

    kind: Literal["model_judge"] = "model_judge"
    rubric: str | None = Field(
        default=None, description="Rubric file relative to the suite, or builtin:NAME (task_completion, "
        "misread_tool_result, needless_work, goal_completion: was a simulated user's goal met, and at which turn; "
        "policy_violation: did an attacker get the agent to break its rules; these two are pass-fail unless `scale` "
        "says otherwise)."
    )
    prompt: str | None = Field(default=None, description="Inline rubric text, instead of a file.")
    rubric_dirs: list[str] = Field(
        default_factory=list, description="Folders (relative to the suite) a dataset row's `rubric` file may also "
        "come from; by default only files inside the suite's own folder are read.")
    scale: Literal["1-10", "0-1", "pass-fail"] | list[Choice] = Field(
        default="1-10", description="1-10 (score/10), 0-1, pass-fail, or labelled choices with scores."
    )
    samples: int = Field(default=1, ge=1, le=20, description="Ask each judge this many times (use temperature > 0).")
    panel: list[PanelJudge] | None = Field(default=None, min_length=2, description="Several judges asked alike.")
    combine: Literal["mean", "median", "majority"] = Field(default="mean", description="How verdicts become one score.")
    max_spread: float | None = Field(
        default=None, ge=0, le=1, description="Flag the grade unreliable when its verdicts differ by more than this."
    )
    base_url: str | None = Field(default=None, description="Judge endpoint; default the suite's judge block.")
    api_key: str | None = Field(default=None, description="Judge key; default the suite's judge block.")
    model: str | None = Field(default=None, description="Judge model; default the suite's judge block.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Default 0.")
    max_tokens: int | None = Field(default=1024, ge=1, description="Judge completion cap (default 1024: room for "
                                      "the reason before the score; null sends none).")
    system_prompt: str | None = Field(
        default=None, description="Text the judge's system message starts with (role framing, as in letta-evals); "
        "the fence and verdict format instructions follow it.")
    calibration: str | None = Field(
        default=None, description="A labels file (relative to the suite) from an earlier run of this grader and "
        "rubric (`evals label`): every run then prints, beside the judge's pass rate, the rate corrected for the "
        "judge's errors against those labels and its 95% interval, and writes them to summary.json.")
    provider: Literal["openai", "anthropic", "google"] | None = Field(
        default=None, description="Whose model `model` names (letta-evals): when no judge base URL is set "
        "anywhere, the judge is that provider's OpenAI-compatible endpoint, with its usual key variable.")

    @model_validator(mode="after")
    def _one_rubric(self) -> ModelJudgeSpec:
        if (self.rubric is None) == (self.prompt is None):
            raise ValueError("give exactly one of 'rubric' (a file or builtin:NAME) or 'prompt' (inline text)")
        if isinstance(self.scale, list) and len(self.scale) < 2:
            raise ValueError("a choice scale needs at least two labelled choices")
        return self


@dataclass(frozen=True)
class Verdict:
    judge: str
    score: float
    raw: Any
    reason: str
    mode: str
    reply: str = ""
    fields: dict[str, Any] | None = None


def missing_answer(submission: str, extractor: str, stop_reason: str) -> str | None:
    """Why there is no answer to judge (None when there is one): an empty or blank submission, or a turn that
    ended without a final answer. A judge asked about nothing can still give 10/10; that must never pass."""
    ending = ending_without_answer(extractor, stop_reason)
    if ending is not None:
        return ending
    if not submission.strip():
        return "the answer is empty" if not submission else "the answer is only whitespace"
    return None


GOAL_RUBRIC = "builtin:goal_completion"
YES_NO_RUBRICS = (GOAL_RUBRIC, "builtin:policy_violation")
"""Built-in rubrics that ask a yes/no question: graded pass-fail unless the grader sets `scale`."""
TURN_OF_SUCCESS = ExtraField(
    "turn_of_success", {"type": ["integer", "null"]},
    "<the number of the turn in which the goal was first met, or null when it was not met>")


def _turn_number(value: Any, turns: int) -> int | None:
    """A turn the judge named, when it is one of the conversation's (1..turns); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 1 <= value <= turns else None


def goal_metadata(verdicts: list[Verdict], score: float, mark: float, turns: int) -> dict[str, Any]:
    """`goal_met` and `turn_of_success` (1-based; null when not met) for a goal-completion grade.

    Met means the combined score reaches `mark` (pass on the default pass-fail scale). The turn is the one the
    judges that said "met" named (the lower median when several did); a turn outside the conversation, or none,
    is no turn (null, with the problem said): a number the transcript cannot hold is never reported."""
    met = score >= mark - 1e-9
    out: dict[str, Any] = {"goal_met": met, "turn_of_success": None}
    if not met:
        return out
    named = [v.fields.get(TURN_OF_SUCCESS.name) for v in verdicts if v.fields is not None and v.score >= mark - 1e-9]
    valid = sorted(t for t in (_turn_number(n, turns) for n in named) if t is not None)
    if valid:
        out["turn_of_success"] = valid[(len(valid) - 1) // 2]
    else:
        given = ", ".join(repr(n) for n in named) or "none"
        out["turn_problem"] = (f"the judge said the goal was met but named no turn of the {turns} in the "
                               f"conversation (turn_of_success: {given})")
    return out


def judge_endpoints(spec: ModelJudgeSpec, ctx: GraderContext) -> list[Endpoint]:
    """The judge's endpoint, or its panel's (each member falling back to the judge's); none offline.
    ConfigError when no model is set anywhere."""
    if ctx.offline:
        return []
    # --judge-model / --judge-base-url / --judge-api-key win over the grader's own settings and every panel
    # member's: a suite written for a hosted judge can be pointed at a local one without editing it
    endpoint = resolve_judge(spec, ctx.judge, ctx.agent, ctx.judge_overrides)
    panel = [resolve_judge(member, None, endpoint, ctx.judge_overrides) for member in spec.panel or []]
    return panel or [endpoint]


@GRADERS.register("model_judge", spec=ModelJudgeSpec)
class ModelJudgeGrader(Grader[ModelJudgeSpec]):
    """An LLM grades the submission with a rubric."""

    per_turn = True
    uses_judge = True

    def __init__(self, name: str, spec: ModelJudgeSpec, ctx: GraderContext) -> None:
        # what the suite's judge block sets and the grader does not, the grader inherits: a `judge:` block's
        # max_tokens or temperature must not be silently ignored by the graders it is the default for
        judge = ctx.judge
        inherited: dict[str, Any] = {f: getattr(judge, f) for f in ("max_tokens", "temperature")
                     if judge is not None and f in judge.model_fields_set and f not in spec.model_fields_set}
        if inherited:
            spec = spec.model_copy(update=inherited)
        super().__init__(name, spec, ctx)
        self.extra_body = dict(judge.extra_body) if judge is not None else {}
        self.base_dir = ctx.base_dir
        self.endpoints = judge_endpoints(spec, ctx)
        self.pool = ctx.pool
        # goal completion (with a turn) and policy violation are yes/no questions: pass-fail unless the suite asks
        # for another scale
        self.scale = Scale.of("pass-fail" if spec.rubric in YES_NO_RUBRICS and "scale" not in spec.model_fields_set
                              else spec.scale)
        self.rubric_text = load_rubric(spec.rubric, spec.prompt, ctx.base_dir)
        self.rubric_dirs = [ctx.base_dir / d for d in spec.rubric_dirs]
        # the labels are read (and refused, naming the line) before any model call, not when the run ends
        self.calibration: tuple[Path, list[Label]] | None = None
        if spec.calibration is not None:
            path = ctx.base_dir / spec.calibration
            self.calibration = (path, calibration_labels(path, name, "calibration"))  # the loader names the grader

    @property
    def endpoint(self) -> Endpoint | None:
        return self.endpoints[0] if self.endpoints else None

    def rubric_for(self, sample: Sample) -> str:
        """The sample's own rubric when it has one, else the grader's. A row's file must lie inside the suite's
        folder or a folder of `rubric_dirs` (RubricPathError otherwise)."""
        if sample.rubric:
            if row_rubric_is_path(sample.rubric):
                return load_row_rubric(sample.rubric.strip(), self.base_dir, self.rubric_dirs)
            return sample.rubric
        return self.rubric_text

    def asks_goal(self, sample: Sample) -> bool:
        """Whether this sample is graded with builtin:goal_completion (the grader's rubric, or the row's own):
        the judge is then also asked at which turn the goal was met."""
        if sample.rubric:
            return sample.rubric.strip() == GOAL_RUBRIC
        return self.spec.rubric == GOAL_RUBRIC

    def check_sample(self, sample: Sample) -> list[str]:
        """A row whose rubric file lies outside the allowed folders is refused before any call, naming the row."""
        if sample.rubric and row_rubric_is_path(sample.rubric) and not sample.rubric.startswith("builtin:"):
            try:
                row_rubric_path(sample.rubric.strip(), self.base_dir, self.rubric_dirs)
            except RubricError as exc:
                return [f"sample {sample.id}: graders.{self.name}: {exc}"]
        return []

    async def grade(self, ctx: GradeContext) -> Grade:
        submission = await ctx.asubmission(self.spec.extractor, self.spec.extractor_config)
        try:
            variables = rubric_variables(ctx.sample, ctx.trajectory, submission, ctx.ground_truth, ctx.turn)
            text = self.rubric_for(ctx.sample)
            rubric = rubric_parts(text, variables)
        except (RubricError, ValueError) as exc:
            return Grade.failed(f"rubric: {exc}")
        # a rubric that grades the answer has nothing to grade without one: a fail, and no judge is asked (a
        # rubric that never reads it, such as builtin:goal_completion on the conversation, is still asked)
        why = missing_answer(submission, self.spec.extractor, ctx.view.stop_reason)
        if why is not None and reads_variable(text, "submission"):
            return Grade(score=0.0, rationale=f"{NO_ANSWER}: {why}", submission=submission,
                         metadata={"no_answer": True, "usage": {"prompt_tokens": 0, "completion_tokens": 0}})
        goal = self.asks_goal(ctx.sample)
        extra = (TURN_OF_SUCCESS,) if goal else ()
        # the rubric's text stays outside the fence (it is the judge's instructions), the sample's data inside
        messages, nonce = judge_messages(rubric, self.scale, self.spec.system_prompt, extra)
        verdicts: list[Verdict] = []
        problems: list[str] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        for endpoint in self.endpoints:
            for index in range(self.spec.samples):
                verdict = await self._ask(endpoint, messages, nonce, ctx, index, usage, problems, extra)
                if verdict is not None:
                    verdicts.append(verdict)
        grade = self._combine(verdicts, problems, usage)
        if goal and grade.score is not None:
            mark = 0.5 if self.spec.threshold is None else self.spec.threshold
            grade.metadata.update(goal_metadata(verdicts, grade.score, mark, len(ctx.trajectory.turns)))
        grade.metadata["messages"] = messages  # the rendered prompt, for the report's collapsed judge call
        grade.submission = submission
        return grade

    def _combine(self, verdicts: list[Verdict], problems: list[str], usage: dict[str, int]) -> Grade:
        judges = [e.model for e in self.endpoints]
        metadata: dict[str, Any] = {"usage": usage, "judge": ", ".join(dict.fromkeys(judges))}
        if not verdicts:
            return Grade.failed(f"judge error: {'; '.join(problems) or 'no verdict'}", **metadata)
        if problems:
            # one judge of a panel (or one of `samples: n`) gave no verdict: combining the others would let a
            # timeout drop the strictest verdict and turn a failure into a pass (issue 11, item 12); the grade is
            # missing, the verdicts that came are kept
            expected = len(self.endpoints) * self.spec.samples
            return Grade.failed(f"judge error: {len(problems)} of {expected} verdicts missing: {'; '.join(problems)}",
                                verdicts=[v.__dict__ for v in verdicts], **metadata)
        scores = [v.score for v in verdicts]
        score = combine(scores, self.spec.combine)
        metadata.update(verdicts=[v.__dict__ for v in verdicts], mode=verdicts[-1].mode,
                        raw_score=verdicts[0].raw if len(verdicts) == 1 else None)
        if len(self.endpoints) > 1:
            per_judge: dict[str, list[float]] = {}
            for v in verdicts:
                per_judge.setdefault(v.judge, []).append(v.score)
            metadata["panel"] = {j: sum(s) / len(s) for j, s in per_judge.items()}
            metadata["panel_units"] = [metadata["panel"]]
        rationale = verdicts[0].reason or f"judge answered {verdicts[0].raw}"
        if len(verdicts) > 1:
            metadata["spread"] = spread(scores)
            rationale = f"{self.spec.combine} of {len(verdicts)} verdicts {[round(s, 2) for s in scores]}: {rationale}"
            if self.spec.max_spread is not None and metadata["spread"] > self.spec.max_spread:
                metadata["unreliable"] = True
                rationale = f"UNRELIABLE (spread {metadata['spread']:.2f} > max_spread {self.spec.max_spread:g}); " \
                            + rationale
        if problems:
            metadata["problems"] = problems
        return Grade(score=score, rationale=rationale, metadata=metadata)

    async def _ask(self, endpoint: Endpoint, messages: list[dict[str, Any]], nonce: str, ctx: GradeContext,
                   index: int, usage: dict[str, int], problems: list[str],
                   extra: tuple[ExtraField, ...] = ()) -> Verdict | None:
        assert self.pool is not None
        turn = "" if ctx.turn is None else f", turn {ctx.turn + 1}"
        again = f" #{index + 1}" if self.spec.samples > 1 else ""
        answer, failures = await ask_judge(
            self.pool.client(endpoint), endpoint, messages, nonce, self.scale,
            modes=step_downs(self.pool),  # the run's: shared with every judge call, sessions' included
            temperature=0.0 if self.spec.temperature is None else self.spec.temperature,
            max_tokens=self.spec.max_tokens, usage=usage, extra_body=self.extra_body,
            context=f"sample {ctx.sample.id}{turn}, judge '{self.name}' {endpoint.model}{again}", extra=extra)
        if answer is None:
            problems.append(f"{endpoint.model}: " + "; ".join(failures or ["no usable verdict"]))
            return None
        return Verdict(endpoint.model, answer.score, answer.raw, answer.reason, answer.mode, answer.reply,
                       answer.fields)


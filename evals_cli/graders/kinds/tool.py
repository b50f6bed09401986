"""`kind: match`: a function (built-in or custom) of the submission and the ground truth.

`tool` is the same kind under its older name (letta-evals' name for it): still accepted, with a deprecation
note from `evals validate`; a letta-evals suite keeps it silently (evals_cli/suite/letta.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli import custom_code, regex_patterns
from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.graders.functions import BUILTINS, load_function, to_grade
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import RECORDED_CUT_OFF, Grade, ending_without_answer
from evals_cli.models.sample import Sample


class MatchSpec(GraderBase):
    """A deterministic function of the extracted submission and the ground truth."""

    # the first value is the kind's name; the others are old names (aliases) of the same spec, each also
    # registered below, so `kind: tool` validates as this spec and runs this grader (evals_cli/suite/spec.py)
    kind: Literal["match", "tool"] = "match"
    function: str = Field(
        description="contains, exact_match, regex_match, ascii_printable_only, or a custom grader 'path/to/file.py:func'."
    )
    case_sensitive: bool | None = Field(
        default=None,
        description="Default: contains and regex_match ignore case, exact_match does not.",
    )


@GRADERS.register("tool", spec=MatchSpec)  # the old name: an alias (see MatchSpec.kind)
@GRADERS.register("match", spec=MatchSpec)
class MatchGrader(Grader[MatchSpec]):
    """A function of the submission and the ground truth (built-in or `path.py:func`)."""

    per_turn = True

    def __init__(self, name: str, spec: MatchSpec, ctx: GraderContext) -> None:
        super().__init__(name, spec, ctx)
        self.fn = load_function(spec.function, ctx.base_dir)
        self.kwargs = {} if spec.case_sensitive is None else {"case_sensitive": spec.case_sensitive}

    def check_sample(self, sample: Sample) -> list[str]:
        if self.spec.function != "regex_match" or sample.ground_truth is None:
            return []
        patterns = sample.ground_truth if isinstance(sample.ground_truth, list) else [sample.ground_truth]
        problems = []
        for pattern in patterns:
            try:
                regex_patterns.compile(str(pattern))
            except regex_patterns.RegexError as exc:
                problems.append(f"sample {sample.id!r}: ground_truth /{pattern}/ is not a valid regex ({exc}), "
                                f"needed by grader {self.name} (regex_match)")
        return problems

    async def grade(self, ctx: GradeContext) -> Grade:
        submission = await ctx.asubmission(self.spec.extractor, self.spec.extractor_config)
        # a traced conversation cut off mid-call has no answer: text the agent wrote before it is none
        cut = ending_without_answer(self.spec.extractor, ctx.view.stop_reason, RECORDED_CUT_OFF)
        if cut is not None:
            return Grade(score=0.0, rationale=f"no answer: {cut}", submission=submission)
        sample = ctx.sample.model_copy(update={"ground_truth": ctx.ground_truth})
        args = [sample, submission]
        if getattr(self.fn, "__evals_wants_trajectory__", False):
            args.append(ctx.view)
        if self.fn is BUILTINS.get(self.spec.function):
            value = self.fn(*args, **self.kwargs)
        else:  # a custom @grader: under the custom-code guard (off the loop, exits refused, time counted)
            value = await custom_code.call(self.fn, *args, where=f"custom grader {self.spec.function}",
                                           keywords=self.kwargs)
        grade = to_grade(value, f"grader function {self.spec.function}")
        if grade.submission is None:
            grade.submission = submission
        return grade


# the classes' names before the kind was renamed, for code that imports them
ToolGraderSpec = MatchSpec
ToolGrader = MatchGrader

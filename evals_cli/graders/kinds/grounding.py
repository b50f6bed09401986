"""`kind: grounding`: the answer carries the values the tools returned, and not the listed misreadings.

Catches "the tool returned DB_HOST=localhost and the agent reports the host is 5432" without a judge:
`must_cite: [localhost]`, `must_not_say: ["5432"]`. A cited value must also be in some tool result
(`require_source`), so a right answer guessed without reading the tool is reported as ungrounded.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli import safe_regex
from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ScoreMode
from evals_cli.models.results import RECORDED_CUT_OFF, Grade, ending_without_answer
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory


class GroundingSpec(GraderBase):
    """Values that must come from tool results appear in the answer; listed misreadings do not."""

    kind: Literal["grounding"] = "grounding"
    must_cite: list[str] = Field(default_factory=list, description="Values the answer must contain; the sample's "
                                                                   "must_cite are added.")
    must_not_say: list[str] = Field(default_factory=list, description="Misreadings the answer must not contain; the "
                                                                      "sample's must_not_say are added.")
    case_sensitive: bool = Field(default=False, description="Compare case-sensitively (default: ignore case).")
    whole_word: bool = Field(default=True, description="A value must not be glued to letters or digits ('5432' is "
                                                       "not in '15432').")
    require_source: bool = Field(default=True, description="A cited value must also appear in a tool result.")
    score: ScoreMode = Field(default="binary", description="binary: all or nothing; fraction: items right / items.")


def _values(sample: Sample, key: str) -> list[str]:
    """The row's `key` (top-level, or under metadata where earlier versions read it), as strings."""
    raw = sample.row_field(key)
    if raw is None:
        return []
    if isinstance(raw, str | int | float) and not isinstance(raw, bool):
        return [str(raw)]
    if isinstance(raw, list) and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in raw):
        return [str(v) for v in raw]
    where = key if getattr(sample, key) is not None else f"metadata.{key}"
    raise ValueError(f"sample {where} must be a string or a list of strings, got {raw!r}")


def tool_texts(trajectory: Trajectory) -> list[str]:
    """Everything the tools said: results of the run's calls and pre-filled `tool` messages."""
    texts = [c.result for c in trajectory.tool_calls if c.result]
    texts += [str(m.get("content") or "") for m in trajectory.prefilled if m.get("role") == "tool"]
    return texts


class Finder:
    """Finds a value in text under the spec's case and whole-word rules (through safe_regex, bounded in time
    like every pattern built from user data)."""

    def __init__(self, case_sensitive: bool, whole_word: bool) -> None:
        self.flags = 0 if case_sensitive else safe_regex.IGNORECASE
        self.whole_word = whole_word

    def pattern(self, value: str) -> safe_regex.Pattern:
        escaped = safe_regex.escape(value)
        return safe_regex.compile(rf"(?<!\w){escaped}(?!\w)" if self.whole_word else escaped, self.flags)

    def search(self, value: str, text: str) -> bool:
        return safe_regex.search(self.pattern(value), text) is not None

    def line_with(self, value: str, texts: list[str]) -> str | None:
        """The first line of `texts` holding `value` (to show where the tool said it), or None."""
        pattern = self.pattern(value)
        for text in texts:
            for line in text.splitlines():
                if safe_regex.search(pattern, line):
                    return line.strip()[:80]
        return None


@GRADERS.register("grounding", spec=GroundingSpec)
class GroundingGrader(Grader[GroundingSpec]):
    """Each must_cite value in the answer (and in a tool result), no must_not_say value in the answer."""

    def check_sample(self, sample: Sample) -> list[str]:
        """Malformed must_cite / must_not_say show before any model call."""
        problems = []
        for key in ("must_cite", "must_not_say"):
            try:
                _values(sample, key)
            except ValueError as exc:
                why = str(exc).removeprefix("sample ")
                problems.append(f"sample {sample.id!r}: {why}, needed by grader {self.name} (grounding)")
        return problems

    async def grade(self, ctx: GradeContext) -> Grade:
        try:
            cite = list(dict.fromkeys([*self.spec.must_cite, *_values(ctx.sample, "must_cite")]))
            avoid = list(dict.fromkeys([*self.spec.must_not_say, *_values(ctx.sample, "must_not_say")]))
        except ValueError as exc:
            return Grade.failed(str(exc))
        answer = await ctx.asubmission(self.spec.extractor, self.spec.extractor_config)
        if not cite and not avoid:
            return Grade.not_applicable("no must_cite or must_not_say values: nothing to check", submission=answer)
        cut = ending_without_answer(self.spec.extractor, ctx.view.stop_reason, RECORDED_CUT_OFF)
        if cut is not None:  # a traced conversation cut off mid-call: nothing it said before is its answer
            return Grade(score=0.0, rationale=f"no answer: {cut}", submission=answer)
        find = Finder(self.spec.case_sensitive, self.spec.whole_word)
        sources = tool_texts(ctx.trajectory)
        problems: list[str] = []
        for value in cite:
            source = find.line_with(value, sources)
            if not find.search(value, answer):
                where = f" (the tool said {source!r})" if source else ""
                problems.append(f"the answer does not cite {value!r}{where}")
            elif self.spec.require_source and source is None:
                problems.append(f"the answer says {value!r} but no tool result contains it (ungrounded)")
        for value in avoid:
            if find.search(value, answer):
                source = find.line_with(value, sources)
                where = f"; the tool said {source!r}" if source else ""
                problems.append(f"the answer says {value!r}, a listed misreading{where}")
        total = len(cite) + len(avoid)
        score = (1.0 - len(problems) / total) if self.spec.score == "fraction" else float(not problems)
        metadata = {"must_cite": cite, "must_not_say": avoid, "problems": problems}
        if problems:
            return Grade(score=score, rationale="; ".join(problems), submission=answer, metadata=metadata)
        parts = [f"cites {', '.join(repr(v) for v in cite)}" + (" (found in tool results)" if
                                                                 self.spec.require_source else "")] if cite else []
        parts += [f"avoids {', '.join(repr(v) for v in avoid)}"] if avoid else []
        return Grade(score=score, rationale="the answer " + " and ".join(parts), submission=answer, metadata=metadata)

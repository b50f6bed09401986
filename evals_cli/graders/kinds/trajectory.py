"""Graders of which tools were called: order (five modes) and forbidden tools.

`forbidden_tools` reads the row field of its name; `tools_avoided` is its older name, still accepted (an alias of
the same spec and grader, with a deprecation note from `evals validate`).

Parallel calls (one model step) are an unordered group: a model that asks for `list_files` and `read_file` in
one step did not choose an order, so `strict` and `subsequence` accept either order inside the step.

`score: fraction`, with n expected and m calls:
- subsequence: the longest prefix of the expected list called in order / n ("how far along the plan it got";
  the behaviour before modes existed, kept so existing scores do not move);
- strict: the longest common subsequence (parallel groups unordered) / max(n, m), so extra calls cost too;
- unordered: expected calls matched one-to-one (a maximum matching, globs) / max(n, m);
- superset: expected calls matched one-to-one / n;
- subset: calls matched one-to-one to an expected entry / m (1 with no calls).

`subset` and `superset` follow agentevals' trajectory match: the agent's calls are a superset of the expected
ones (every expected call made, extra calls allowed) or a subset (no call beyond the expected ones, each expected
entry standing for one call). Until issue 24 the two names meant the reverse; `evals validate` notes suites that
use them (`mode_change_note`), so a suite written before is told its meaning flipped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field

from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.calls import any_glob, describe_groups, glob_match, max_matching, step_groups
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ACTOR_DESCRIPTION, CallActor, ScoreMode
from evals_cli.models.results import Grade

ToolOrderMode = Literal["strict", "subsequence", "unordered", "subset", "superset"]


class ToolOrderSpec(GraderBase):
    """The tools called, against the expected ones (tool-name globs, fnmatch, case-sensitive).

    Calls made in one model step (parallel calls) form an unordered group in `strict` and `subsequence` modes.
    """

    kind: Literal["tool_order"] = "tool_order"
    expected: list[str] | None = Field(default=None, description="Expected tools; default the sample's expected_tool_order.")
    mode: ToolOrderMode = Field(
        default="subsequence",
        description="strict: exactly this sequence; subsequence: in this order, extra calls allowed; "
        "unordered: the same multiset, any order; superset (as in agentevals): the calls include every expected "
        "one, extra calls allowed; subset (as in agentevals): every call is one of the expected ones (each "
        "expected entry matches one call).",
    )
    score: ScoreMode = Field(
        default="binary",
        description="binary: 1 or 0. fraction: subsequence in-order prefix matched/expected; "
        "strict LCS/max(expected, calls); unordered matched/max(expected, calls); superset matched/expected; "
        "subset calls matched/calls.",
    )
    actor: CallActor = Field(default="agent", description=ACTOR_DESCRIPTION)


class ForbiddenToolsSpec(GraderBase):
    """No forbidden tool was called (the row's forbidden_tools plus the spec's tools)."""

    # the first value is the kind's name, the other its old name (an alias, registered below too)
    kind: Literal["forbidden_tools", "tools_avoided"] = "forbidden_tools"
    required_by_default: ClassVar[bool] = True  # forbidden means forbidden: a call fails the sample
    # and whatever the gate's pass value (even 0 for a report-only gate), a forbidden call's 0 is under it
    threshold_by_default: ClassVar[float | None] = 1.0
    tools: list[str] = Field(default_factory=list, description="Forbidden tools (globs), added to the sample's.")
    actor: CallActor = Field(default="agent", description=ACTOR_DESCRIPTION)


def _fits(pattern: str, name: str) -> bool:
    return glob_match(name, pattern)


def grouped_lcs(expected: Sequence[str], names: Sequence[str], groups: Sequence[Sequence[int]]) -> list[int]:
    """Indices of `expected` in a longest common subsequence with the calls, any order inside a group.

    Dynamic programme over groups: best[j] is the best alignment of expected[:j] with the groups seen so far.
    A group takes a window expected[i:j] and matches any of it (bipartite matching: order-free, globs)."""
    n = len(expected)
    best: list[tuple[int, ...]] = [()] * (n + 1)
    for group in groups:
        calls = [names[k] for k in group]
        new = list(best)
        if len(calls) == 1:  # the common case, as in plain LCS: extend the alignment that ends just before j
            for j in range(1, n + 1):
                if _fits(expected[j - 1], calls[0]) and len(best[j - 1]) + 1 > len(new[j]):
                    new[j] = best[j - 1] + (j - 1,)
        # a window may start only where the alignment grows: an earlier start with the same length sees more
        starts = [i for i in range(n + 1) if i == 0 or len(best[i]) > len(best[i - 1])] if len(calls) > 1 else []
        for i in starts:
            for j in range(i + 1, n + 1):
                matched = max_matching(expected[i:j], calls, _fits)
                candidate = best[i] + tuple(sorted(i + k for k in matched))
                if len(candidate) > len(new[j]):
                    new[j] = candidate
                if len(matched) == len(calls):  # the group is used up: wider windows add nothing
                    break
        for j in range(1, n + 1):  # expected items may stay unmatched at the end of a window
            if len(new[j - 1]) > len(new[j]):
                new[j] = new[j - 1]
        best = new
    return list(best[n])


def grouped_prefix(expected: Sequence[str], names: Sequence[str], groups: Sequence[Sequence[int]]) -> int:
    """How many of `expected` were called in order from the start (extra calls skipped, any order inside a group).

    Greedy is optimal here: each group takes the longest next stretch of `expected` it can match, because being
    further along never leaves less to match later."""
    done = 0
    for group in groups:
        calls = [names[k] for k in group]
        for size in range(min(len(calls), len(expected) - done), 0, -1):
            if len(max_matching(expected[done: done + size], calls, _fits)) == size:
                done += size
                break
    return done


def strict_divergence(expected: Sequence[str], names: Sequence[str], groups: Sequence[Sequence[int]]) -> str | None:
    """Where the calls first leave the exact expected sequence (None: they never do)."""
    offset = 0
    for group in groups:
        calls = [names[k] for k in group]
        window = list(expected[offset: offset + len(group)])
        if not window:
            return f"unexpected extra call(s) {', '.join(calls)} after the {len(expected)} expected"
        if len(max_matching(window, calls, _fits)) < len(group):
            where = f"call {offset + 1}" if len(group) == 1 else f"parallel calls {offset + 1}-{offset + len(group)}"
            wanted = " + ".join(window) + (" then the end" if len(window) < len(group) else "")
            return f"{where}: expected {wanted}, got {' + '.join(calls)}"
        offset += len(group)
    if offset < len(expected):
        return f"missing {', '.join(repr(e) for e in expected[offset:])} after the last call"
    return None


@dataclass
class _Verdict:
    complete: bool
    fraction: float
    matched: int
    why: str


def _judge(mode: str, expected: list[str], names: list[str], groups: list[list[int]]) -> _Verdict:
    called = f"calls: {describe_groups(names, groups)}" if names else "no tool calls were made"
    n, m = len(expected), len(names)
    arrow = " → ".join(expected)
    if mode == "subsequence":
        done = grouped_prefix(expected, names, groups)
        if done == n:
            return _Verdict(True, 1.0, n, f"called {arrow} in order")
        return _Verdict(False, done / n, done, f"expected {arrow}; matched {done}/{n}, missing {expected[done]!r}; {called}")
    if mode == "strict":
        hit = grouped_lcs(expected, names, groups)
        divergence = strict_divergence(expected, names, groups)
        fraction = len(hit) / max(n, m) if max(n, m) else 1.0
        if divergence is None:
            return _Verdict(True, 1.0, n, f"called exactly {arrow}" if n else "no tool calls, as expected")
        return _Verdict(False, fraction, len(hit), f"expected exactly {arrow or 'no calls'}; {divergence}; {called}")
    matching = max_matching(expected, names, _fits)
    missing = [e for k, e in enumerate(expected) if k not in matching]
    extra = [nm for j, nm in enumerate(names) if j not in set(matching.values())]
    if mode == "superset":  # agentevals: the calls are a superset of the expected ones
        if not missing:
            return _Verdict(True, 1.0, n, f"called every expected tool: {', '.join(expected)}")
        return _Verdict(False, len(matching) / n, len(matching),
                        f"matched {len(matching)}/{n}, missing {', '.join(repr(e) for e in missing)}; {called}")
    if mode == "subset":  # agentevals: the calls are a subset of the expected ones
        inside = m - len(extra)
        if not extra:
            why = (f"every call is one of {', '.join(expected)}" if m else
                   f"no tool calls, so none beyond {', '.join(expected) or 'the (empty) expected list'}")
            return _Verdict(True, 1.0, inside, why)
        counts = Counter(extra)
        listed = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in counts.items())
        allowed = ", ".join(expected) or "nothing (no tools expected)"
        return _Verdict(False, inside / m, inside,
                        f"called tool(s) beyond the expected {allowed} (each expected entry matches one call): {listed}")
    # unordered: the same multiset
    if not missing and not extra:
        return _Verdict(True, 1.0, n, f"called exactly {', '.join(expected)} (any order)" if n else
                        "no tool calls, as expected")
    problems = [f"missing {', '.join(repr(e) for e in missing)}"] if missing else []
    problems += [f"unexpected {', '.join(extra)}"] if extra else []
    return _Verdict(False, len(matching) / max(n, m), len(matching),
                    f"expected {', '.join(expected) or 'no calls'} in any order; {'; '.join(problems)}")


_MEANINGS = {
    "superset": "the agent's calls include every expected call, extra calls allowed",
    "subset": "every call the agent makes is one of the expected ones, extra calls fail",
}


def mode_change_note(mode: str) -> str | None:
    """What `evals validate` says about a tool_order `mode` whose meaning flipped (subset and superset now follow
    agentevals): a note, not a problem, so a suite written for the old meaning runs but is told. None otherwise."""
    if mode not in _MEANINGS:
        return None
    other = "subset" if mode == "superset" else "superset"
    return (f"{mode} now means what it means in agentevals: {_MEANINGS[mode]}. Earlier versions of evals-cli read "
            f"{mode} the other way round ({_MEANINGS[other]}); if this suite was written for that, write mode: "
            f"{other}")


@GRADERS.register("tool_order", spec=ToolOrderSpec)
class ToolOrderGrader(Grader[ToolOrderSpec]):
    """The tools called against the expected ones, in one of five modes (see ToolOrderSpec)."""
    reads_steps = True

    async def grade(self, ctx: GradeContext) -> Grade:
        expected = self.spec.expected if self.spec.expected is not None else ctx.sample.expected_tool_order
        names = [c.name for c in ctx.trajectory.calls_by(self.spec.actor)]
        mode = self.spec.mode
        # An empty list still says something in the modes that limit calls: "call nothing".
        if expected is None or (not expected and mode in ("subsequence", "superset")):
            return Grade.not_applicable("no expected tool order: nothing to check",
                                        metadata={"called": names, "mode": mode})
        verdict = _judge(mode, list(expected), names, step_groups(ctx.trajectory, self.spec.actor))
        score = (1.0 if verdict.complete else 0.0) if self.spec.score == "binary" else verdict.fraction
        return Grade(score=score, rationale=verdict.why,
                     metadata={"called": names, "expected": list(expected), "matched": verdict.matched, "mode": mode})


@GRADERS.register("tools_avoided", spec=ForbiddenToolsSpec)  # the old name: an alias (see ForbiddenToolsSpec.kind)
@GRADERS.register("forbidden_tools", spec=ForbiddenToolsSpec)
class ForbiddenToolsGrader(Grader[ForbiddenToolsSpec]):
    """None of the forbidden tools (sample's plus spec's, globs allowed) was called."""
    reads_steps = True

    async def grade(self, ctx: GradeContext) -> Grade:
        forbidden = list(dict.fromkeys([*(ctx.sample.forbidden_tools or []), *self.spec.tools]))
        if not forbidden:
            return Grade.not_applicable("no forbidden tools: nothing to check")
        hits = [c.name for c in ctx.trajectory.calls_by(self.spec.actor) if any_glob(c.name, forbidden)]
        if hits:
            counts = {n: hits.count(n) for n in dict.fromkeys(hits)}
            listed = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in counts.items())
            return Grade(score=0.0, rationale=f"called forbidden tool(s): {listed}", metadata={"violations": hits})
        return Grade(score=1.0, rationale=f"avoided {', '.join(forbidden)}")


# the classes' names before the kind was renamed, for code that imports them
ToolsAvoidedSpec = ForbiddenToolsSpec
ToolsAvoidedGrader = ForbiddenToolsGrader

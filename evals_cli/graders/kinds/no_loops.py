"""`kind: no_loops`: the agent did not repeat itself. Mocked tools answer the same call the same way, so an
identical call made again (or an A-B-A-B cycle of calls) can only be a loop, never new information. With
`replies: true` the agent's replies count too: a model that writes its tool call as text the endpoint does not
parse runs no tool, and sends the same text turn after turn (the loop a count of calls never sees)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field, model_validator

from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.calls import any_glob, canonical_args, glob_match, label
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ACTOR_DESCRIPTION, CallActor
from evals_cli.models.results import Grade
from evals_cli.models.trajectory import ToolCall, Trajectory
from evals_cli.wording import plural


class NoLoopsSpec(GraderBase):
    """No identical call (same tool, same canonical arguments) repeated too often, and no A-B-A-B cycles."""

    kind: Literal["no_loops"] = "no_loops"
    max_repeats: int = Field(default=2, ge=1, description="Times one identical call (with replies: true, one "
                             "reply) may be made in total.")
    max_consecutive: int = Field(default=1, ge=1, description="Times one identical call (with replies: true, one "
                                 "reply) may be made in a row.")
    min_cycle_repeats: int = Field(default=2, ge=2, description="Repetitions in a row that make a block a cycle.")
    max_cycle_length: int = Field(default=3, ge=0, description="Longest block checked for cycles; below 2 turns cycles off.")
    ignore: list[str] = Field(default_factory=list, description="Tools (globs) never counted, e.g. polling tools.")
    actor: CallActor = Field(default="agent", description=ACTOR_DESCRIPTION)
    replies: bool = Field(
        default=False, strict=True, description="Also count the agent's replies, turn by turn: the same reply text "
        "(whitespace normalised; a tool call written as text that the endpoint did not parse is a reply too) "
        "sent in more turns than max_repeats, in more than max_consecutive turns in a row, or a block of replies "
        "repeated min_cycle_repeats times, is a loop. Turns without a reply are skipped. Not with scope: reply "
        "(each reply is graded alone there, so it can repeat no other).")

    @model_validator(mode="after")
    def _replies_need_the_conversation(self) -> NoLoopsSpec:
        if self.replies and self.scope == "reply":
            raise ValueError("replies: true compares the agent's replies across turns, but scope: reply grades each "
                             "reply alone (no reply has another to repeat); drop scope: reply or replies")
        return self


@dataclass(frozen=True)
class Loop:
    kind: str  # repeated | consecutive | cycle
    call: str  # the call (or `a → b` block) that repeats
    count: int
    limit: int
    first_index: int  # index into trajectory.tool_calls where it starts

    def __str__(self) -> str:
        if self.kind == "repeated":
            return f"{self.call} called {self.count} times (max {self.limit})"
        if self.kind == "consecutive":
            return f"{self.call} called {self.count} times in a row (max {self.limit})"
        return f"cycle {self.call} repeated {self.count} times in a row (from calls[{self.first_index}])"


@dataclass(frozen=True)
class ReplyLoop(Loop):
    """A reply sent again (`call`: the reply, quoted and cut short; `first_index`: its first turn, from 0)."""

    def __str__(self) -> str:
        if self.kind == "repeated":
            return f"reply {self.call} sent in {self.count} turns (max {self.limit})"
        if self.kind == "consecutive":
            return f"reply {self.call} sent {self.count} turns in a row (max {self.limit})"
        return f"cycle of replies {self.call} repeated {self.count} times in a row (from turn {self.first_index + 1})"


def _key(call: ToolCall) -> str:
    return call.name + "\x00" + canonical_args(call)


def _quoted(reply: str, limit: int = 60) -> str:
    return '"' + (reply if len(reply) <= limit else reply[: limit - 1] + "…") + '"'


def replies_by_turn(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(turn, reply) for each turn the agent said something in: the text the user read (the turn's answer),
    whitespace normalised, so the same words wrapped or spaced otherwise are the same reply."""
    return [(index, text) for index, turn in enumerate(trajectory.turns) if (text := " ".join(turn.answer.split()))]


def _primitive(block: list[str]) -> bool:
    """Not itself a repetition of a shorter block ([A, B, A, B] is [A, B] twice, found at length 2)."""
    size = len(block)
    return not any(size % p == 0 and block == block[:p] * (size // p) for p in range(1, size))


def find_loops(calls: list[tuple[int, ToolCall]], spec: NoLoopsSpec) -> list[Loop]:
    """Every loop in `calls` (index, call), in the order a reader meets them."""
    return _loops([(i, _key(c), label(c)) for i, c in calls], spec, Loop)


def find_reply_loops(replies: list[tuple[int, str]], spec: NoLoopsSpec) -> list[Loop]:
    """Every loop in `replies` (turn, normalised reply): the limits that hold for calls, over turns."""
    return _loops([(turn, reply, _quoted(reply)) for turn, reply in replies], spec, ReplyLoop)


def _loops(items: list[tuple[int, str, str]], spec: NoLoopsSpec, make: type[Loop]) -> list[Loop]:
    """Every loop in `items` (where it is, what is compared, how a rationale shows it), in reading order."""
    at = [index for index, _, _ in items]
    keys = [key for _, key, _ in items]
    labels: dict[str, str] = {}
    first: dict[str, int] = {}
    for index, key, shown in items:
        labels.setdefault(key, shown)  # as first made
        first.setdefault(key, index)
    loops = [make("repeated", labels[k], n, spec.max_repeats, first[k])
             for k, n in Counter(keys).items() if n > spec.max_repeats]
    run_start = 0
    longest: dict[str, tuple[int, int]] = {}
    for pos in range(1, len(keys) + 1):
        if pos == len(keys) or keys[pos] != keys[run_start]:
            length = pos - run_start
            if length > longest.get(keys[run_start], (0, 0))[0]:
                longest[keys[run_start]] = (length, at[run_start])
            run_start = pos
    loops += [make("consecutive", labels[k], n, spec.max_consecutive, start)
              for k, (n, start) in longest.items() if n > spec.max_consecutive]
    for size in range(2, spec.max_cycle_length + 1):
        start = 0
        while start + size * spec.min_cycle_repeats <= len(keys):
            block = keys[start:start + size]
            repeats = 1
            while keys[start + repeats * size: start + (repeats + 1) * size] == block:
                repeats += 1
            if repeats >= spec.min_cycle_repeats and _primitive(block):
                loops.append(make("cycle", " → ".join(labels[k] for k in block), repeats,
                                  spec.min_cycle_repeats, at[start]))
                start += repeats * size
            else:
                start += 1
    order = {"repeated": 0, "consecutive": 1, "cycle": 2}
    return sorted(loops, key=lambda loop: (loop.first_index, order[loop.kind]))


def excluded(calls: list[ToolCall], ignore: list[str]) -> str:
    """What `ignore` left out of `calls` and by which glob ("2 calls excluded (ignore 'poll_*' matched
    poll_status)"); "" when nothing was."""
    matched: dict[str, list[str]] = {}
    count = 0
    for call in calls:
        glob = next((g for g in ignore if glob_match(call.name, g)), None)  # the first glob that matches
        if glob is not None:
            count += 1
            names = matched.setdefault(glob, [])
            if call.name not in names:
                names.append(call.name)
    if not count:
        return ""
    rules = "; ".join(f"ignore {glob!r} matched {', '.join(names)}" for glob, names in matched.items())
    return f"{plural(count, 'call')} excluded ({rules})"


@GRADERS.register("no_loops", spec=NoLoopsSpec)
class NoLoopsGrader(Grader[NoLoopsSpec]):
    """1 when no call (with `replies`, no reply) repeats past the limits and no block of them cycles; 0 otherwise
    (binary)."""
    reads_steps = True

    async def grade(self, ctx: GradeContext) -> Grade:
        spec = self.spec
        made = ctx.trajectory.calls_by(spec.actor)
        calls = [(i, c) for i, c in enumerate(made) if not any_glob(c.name, spec.ignore)]
        left_out = excluded(made, spec.ignore)
        replies = replies_by_turn(ctx.trajectory) if spec.replies else []
        if not calls and not replies:
            return Grade.not_applicable(_nothing_to_check(left_out, spec.replies))
        loops = find_loops(calls, spec)
        metadata: dict[str, object] = {"loops": [asdict(loop) for loop in loops]}
        if spec.replies:
            reply_loops = find_reply_loops(replies, spec)
            metadata["reply_loops"] = [asdict(loop) for loop in reply_loops]
            loops += reply_loops
        if left_out:
            metadata["excluded"] = len(made) - len(calls)
        if loops:
            return Grade(score=0.0, rationale="loop: " + "; ".join(str(loop) for loop in loops), metadata=metadata)
        return Grade(score=1.0, metadata=metadata, rationale=self._clean(len(calls), len(replies), left_out))

    def _clean(self, calls: int, replies: int, left_out: str) -> str:
        """What was checked and found clean: the calls, the replies (with `replies`), what `ignore` left out."""
        spec = self.spec
        cycles = f", no cycle repeated {spec.min_cycle_repeats} times" if spec.max_cycle_length >= 2 else ""
        limits = f"more than {spec.max_repeats} times in total or {spec.max_consecutive} in a row{cycles}"
        parts = [f"{calls} call(s): none made {limits}"] if calls or not spec.replies else []
        if spec.replies:
            parts.append(f"{replies} repl{'y' if replies == 1 else 'ies'}: none sent {limits}")
        return "; ".join(parts) + (f"; {left_out}" if left_out else "")


def _nothing_to_check(left_out: str, replies: bool) -> str:
    """Why there was nothing to check: no call at all, or only calls `ignore` left out (named with their rule)."""
    said = " and no replies" if replies else ""
    if left_out:
        return f"{left_out}{said}: nothing left to check"
    return f"no tool calls{said}: nothing to check"

"""`--replay-user RUN`: the user of an earlier run, held constant against the current agent.

Two agent versions are compared fairly only when they talk to the same user. A simulated user is a model: asked
again, it words things differently. So this player answers with the user messages recorded in RUN (its folder or
results.jsonl), one by one, as long as the conversation stays on the recorded path, and marks them
`user_source: replayed`.

The path is left ("diverged") at turn k when the agent's turn k differs from the recorded turn k: its final text
reply (whitespace aside) or its tool calls (names and arguments, in order). From then on the recorded user's
next message answers a reply the agent no longer gave, so it is not sent. `--on-divergence continue` (the
default) hands the conversation to the user simulator, which sees the conversation as it really went;
`--on-divergence stop` ends it there, with end_reason `diverged` (whole-conversation graders then give no verdict:
a conversation cut short is not the agent's failure; see graders/grading.py). The path is also left when the
recorded conversation has no further user message (it ended in an error) while the current one goes on.

Each (sample, repeat) replays the same repeat of RUN, or its first recorded repeat when RUN had fewer. A sample
with a `user:` block that RUN holds no conversation of (RUN never ran it: a partial run, another selection) has
no user to replay: the run refuses to start and names those samples (see runner/prepare.py), rather than have
the simulator play them afresh, unannounced, next to replayed ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import EndReason, Step, Turn
from evals_cli.simulation.player import (
    Action,
    ConversationView,
    UserMove,
    UserPlayer,
    UserPlayerFactory,
    UserSimulatorError,
    UserTools,
    run_actions,
)

__all__ = ["RecordedRun", "ReplayingUser", "load_recorded_run", "replaying_factory", "same_turn"]


USER_ENDED: frozenset[str] = frozenset({"user_done", "attacker_out_of_character"})
"""Recorded endings the user chose (it stopped, or the attacker gave up out of character): replayed as they were;
any other ending left the record without a next message, so the live player takes over from there."""


@dataclass(frozen=True)
class RecordedConversation:
    """One recorded conversation: its turns, how it ended, and the user's closing words."""

    turns: list[Turn]
    end_reason: EndReason | None
    closing_user: str | None
    closing_steps: list[Step] = field(default_factory=list)  # dual control: the user's calls after its last message


@dataclass(frozen=True)
class RecordedRun:
    """The simulated conversations of a finished run, by (sample id, repeat)."""

    path: Path
    conversations: dict[tuple[str, int], RecordedConversation]
    results: int = 0  # result lines RUN holds, conversations or not
    samples: frozenset[str] = frozenset()  # the sample ids with a result in RUN

    @cached_property
    def replayable(self) -> frozenset[str]:
        """The sample ids RUN holds a conversation of, in some repeat."""
        return frozenset(s for s, _ in self.conversations)

    def for_sample(self, sample_id: str, repeat: int) -> RecordedConversation | None:
        found = self.conversations.get((sample_id, repeat))
        if found is not None:
            return found
        repeats = sorted(r for s, r in self.conversations if s == sample_id)
        return self.conversations[(sample_id, repeats[0])] if repeats else None


def load_recorded_run(target: Path) -> RecordedRun:
    """RUN's simulated conversations; ConfigError (exit 2) when RUN is missing, unreadable, or holds no
    simulated-user conversation at all (a run of scripted samples has no user to replay)."""
    from evals_cli.output.files import read_results, results_path

    path = results_path(Path(target))
    if not path.is_file():
        raise ConfigError(f"--replay-user {target}: no results file there; give the folder of a finished run with "
                          "simulated users, or its results.jsonl")
    conversations: dict[tuple[str, int], RecordedConversation] = {}
    seen = 0
    samples: set[str] = set()
    for result in read_results(path):
        seen += 1
        samples.add(result.sample_id)
        trajectory = result.trajectory
        if not trajectory.simulated:
            continue
        conversations[(result.sample_id, result.repeat)] = RecordedConversation(
            list(trajectory.turns), trajectory.end_reason, trajectory.closing_user, list(trajectory.closing_user_steps))
    if not conversations:
        what = f"none of its {seen} results" if seen else "it has no results"
        raise ConfigError(f"--replay-user {target}: not a run with simulated users ({what} is a simulated-user "
                          "conversation); --replay-user replays the user messages of a run whose rows have a "
                          "`user:` block")
    return RecordedRun(path, conversations, seen, frozenset(samples))


def _calls(turn: Turn) -> list[tuple[str, str]]:
    out = []
    for call in turn.tool_calls:
        args = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False) if call.arguments is not None \
            else call.raw_arguments
        out.append((call.name, args))
    return out


def same_turn(now: Turn, recorded: Turn) -> bool:
    """Whether the agent's turn is the recorded one: the same final text (whitespace aside) and the same tool
    calls (names and arguments, in order). Tool results are the mocks' and follow from the calls."""
    return " ".join(now.answer.split()) == " ".join(recorded.answer.split()) and _calls(now) == _calls(recorded)


class ReplayingUser:
    """Plays one conversation from its record while the agent stays on the path, then `inner` (the simulated
    user) or, with on_divergence stop, ends the conversation as diverged."""

    def __init__(self, inner: UserPlayer, record: RecordedConversation | None, on_divergence: str) -> None:
        self.inner = inner
        self.record = record
        self.stop = on_divergence == "stop"
        self.left_at: int | None = None  # 1-based turn where the path was left
        self._told = False

    def _on_path(self, turns: Sequence[Turn]) -> bool:
        assert self.record is not None
        k = len(turns)
        if k >= 1 and (k - 1 >= len(self.record.turns) or not same_turn(turns[k - 1], self.record.turns[k - 1])):
            self.left_at = k
            return False
        if k >= len(self.record.turns) and self.record.end_reason not in USER_ENDED:
            self.left_at = k  # the record has no further message (its conversation ended in an error)
            return False
        return True

    async def next_message(self, view: ConversationView) -> UserMove:
        if self.record is None:
            return await self.inner.next_message(view)
        if self.left_at is None and self._on_path(view.turns):
            k = view.turn_index
            if k < len(self.record.turns):
                move = UserMove(text=self.record.turns[k].user or "", source="replayed")
                move.steps = await replay_steps(self.record.turns[k].user_steps, view.tools, k)
                return move
            # the record's messages were all sent (last words included); an older record's unsent closing_user
            # was never sent to its agent, so it is not sent now either
            ended = self.record.end_reason if self.record.end_reason in USER_ENDED else "user_done"
            move = UserMove(text=None, done=True, source="replayed", end_reason=ended)
            move.steps = await replay_steps(self.record.closing_steps, view.tools, k)
            return move
        if self.stop:
            return self._said(UserMove(text=None, done=True, source="replayed", end_reason="diverged"))
        return self._said(await self.inner.next_message(view))

    def _said(self, move: UserMove) -> UserMove:
        """The first move off the path says where the path was left (`UserMove.diverged_at`, which the loop keeps
        in `Trajectory.diverged_at`): a conversation the simulator ends right after leaving it shows it nowhere
        else."""
        if not self._told:
            move.diverged_at = self.left_at
            self._told = True
        return move


async def replay_steps(recorded: list[Step], tools: UserTools | None, turn_index: int) -> list[Step]:
    """The recorded user's own tool calls (dual control), made again on this episode's world: the same calls,
    so the world the agent meets next is the one it met in RUN (a call's result is this world's answer)."""
    steps: list[Step] = []
    for step in recorded:
        if not step.tool_calls:
            continue
        if tools is None:
            raise UserSimulatorError(f"the recorded user called its tools at turn {turn_index + 1}, and this suite "
                                     "gives the user none (user_tools)")
        actions = [Action(call.id, call.name, call.raw_arguments) for call in step.tool_calls]
        await run_actions(tools, actions, step.content, turn_index, steps)
    return steps


class ReplayingPlayers:
    """The run's `UserPlayerFactory` under --replay-user: each (sample, repeat) replays its recorded user."""

    def __init__(self, inner: UserPlayerFactory, run: RecordedRun, on_divergence: str) -> None:
        self.inner = inner
        self.run = run
        self.on_divergence = on_divergence

    def __call__(self, sample: Sample, repeat: int) -> ReplayingUser:
        record = self.run.for_sample(str(sample.id), repeat)
        return ReplayingUser(self.inner(sample, repeat), record, self.on_divergence)


def replaying_factory(inner: UserPlayerFactory, options: Any) -> UserPlayerFactory:
    """`inner` wrapped so every conversation replays RUN's user first (`options.replay_user`,
    `options.on_divergence`)."""
    run = load_recorded_run(options.replay_user)
    return ReplayingPlayers(inner, run, options.on_divergence or "continue")

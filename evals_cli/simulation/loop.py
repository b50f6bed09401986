"""The conversation loop of a simulated-user sample, shared by every target kind: ask the player for a user
message, run the agent's whole turn on it (the target's own code), repeat, until the user stops (their last words
before the stop token are sent and answered first), `max_turns`, the conversation's time bound (`max_seconds`),
the agent's step bound, or an error. Records each turn's `user_source`, the simulator's tokens and time, and
why the conversation ended (`Trajectory.end_reason`; a sample_timeout that runs out is agent_error or user_error by
whose call was in flight, the sample's error category being timeout). A user that ends it before its first message
(nothing but the stop token) is the simulator's error: a conversation of no turns has nothing to grade."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import END_TOOL, STOP_TOKEN, UserSpec, says_nothing
from evals_cli.models.trajectory import Trajectory, Turn
from evals_cli.simulation.player import ConversationView, UserPlayer, UserSimulatorError, UserTools

RunTurn = Callable[[int, Turn], Awaitable[bool]]
"""Runs the agent's turn `turn` (already appended to the trajectory, its user message set): True when the agent
answered, False when it hit its step bound; raises when the agent failed."""


class AgentFailed(Exception):
    """The agent's turn raised: the cause is the target's own error (classified as for any sample)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


async def converse(sample: Sample, trajectory: Trajectory, player: UserPlayer, run_turn: RunTurn,
                   repeat: int = 0, user_tools: UserTools | None = None) -> bool:
    """Drive the conversation; True when it ended without the agent hitting its step bound. Raises
    UserSimulatorError (end_reason user_error) or AgentFailed (end_reason agent_error). `user_tools`: the user's
    own tools (dual control); what it did with them is the turn's `user_steps`."""
    assert sample.user is not None
    user = sample.user
    messages = sample.messages or []
    prefilled_user = bool(messages) and messages[-1].role == "user" and not user.opening(sample.user_turns)
    deadline = time.monotonic() + user.max_seconds
    last_words = False
    while True:
        if last_words:  # the user's closing message was sent and answered
            return True
        if len(trajectory.turns) >= user.max_turns:
            trajectory.end_reason = "max_turns"
            return True
        if time.monotonic() >= deadline:  # the agent answered every message it got; the user is not asked again
            trajectory.end_reason = "time_limit"
            return True
        if prefilled_user and not trajectory.turns:  # the pre-filled messages end with the user's message
            turn = Turn(user=None, user_source="prefilled")
        else:
            view = ConversationView(sample=sample, user=user, prefilled=trajectory.prefilled,
                                    turns=list(trajectory.turns), repeat=repeat, tools=user_tools)
            try:
                async with asyncio.timeout_at(asyncio.get_running_loop().time() + deadline - time.monotonic()):
                    move = await player.next_message(view)
            except TimeoutError:  # the simulator's call was still in flight at the conversation's time bound
                trajectory.end_reason = "time_limit"
                return True
            except (UserSimulatorError, asyncio.CancelledError) as exc:  # cancelled: sample_timeout ran out
                trajectory.end_reason = "user_error"
                spent = exc.spent if isinstance(exc, UserSimulatorError) else None
                if spent is not None:  # what the failed user cost (and did) is counted like any other turn's
                    trajectory.closing_user_steps += spent.steps
                    trajectory.user_usage.add(spent.usage)
                    trajectory.user_latency_s += spent.latency_s
                    trajectory.user_calls += spent.calls
                raise
            trajectory.user_usage.add(move.usage)
            trajectory.user_latency_s += move.latency_s
            trajectory.user_calls += move.calls
            if move.diverged_at is not None and trajectory.diverged_at is None:
                trajectory.diverged_at = move.diverged_at
            if move.done:
                trajectory.end_reason = move.end_reason or "user_done"
                if not trajectory.turns and trajectory.end_reason == "user_done" and says_nothing(move.text):
                    trajectory.end_reason = "user_error"  # no turn at all: never a sample with nothing to check
                    trajectory.closing_user_steps += move.steps
                    raise UserSimulatorError(_ended_before_speaking(user))
                if not (move.text or "").strip():
                    trajectory.closing_user_steps += move.steps  # it acted, then left without a word
                    return True
                # the user's last words ("Sure, the id is 12345. ###STOP###"): sent, and the agent answers them
                last_words = True
            turn = Turn(user=move.text or "", user_source=move.source, user_steps=move.steps)
        trajectory.turns.append(turn)
        try:
            answered = await run_turn(len(trajectory.turns) - 1, turn)
        except asyncio.CancelledError:  # sample_timeout ran out during the agent's turn
            trajectory.end_reason = "agent_error"
            raise
        except Exception as exc:
            trajectory.end_reason = "agent_error"
            raise AgentFailed(exc) from exc
        if not answered:
            trajectory.end_reason = "agent_max_steps"
            return False


def _ended_before_speaking(user: UserSpec) -> str:
    """Why a conversation the user ended before its first message is the simulator's error: the agent was asked
    nothing, so every grader would have nothing to check and the row would drop out of the gate unseen (an
    attacker's row out of the red-team gate)."""
    who = "attacker" if user.kind == "attacker" else "simulated user"
    how = f"{STOP_TOKEN} or the {END_TOOL} tool" if user.stop == "tool" else STOP_TOKEN
    return (f"the user simulator ended the conversation before its first message (it stopped with {how} and no "
            f"words of its own): the agent was asked nothing, so there is nothing to grade; check the simulator's "
            f"model and system prompt (a model that will not play the {who} may stop at once)")

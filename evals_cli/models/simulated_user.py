"""Simulated users, as pure data: a row's `user:` block (who the user is, what they want, what they know and how
they end the conversation) and the suite's `user_simulator:` block (which model plays them).

A row with a `user:` block is a conversation the agent cannot predict: the harness sends the opening user
messages, runs the agent's whole tool loop for that turn, then asks the simulator for the next user message,
until the user stops, `max_turns`, the agent's step limit, or an error (evals_cli/simulation/).

Suite-level defaults: the suite's `user:` block gives defaults to every row that has a `user:` block of its own
(a row without one stays an ordinary sample). Each key the row sets wins; a key it leaves out is taken from the
suite; `knows` is merged fact by fact (the row's value of a fact wins). See `UserSpec.over`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.target_specs import EndpointSpec

STOP_TOKEN = "###STOP###"
"""What a simulated user writes to end the conversation (tau-bench's convention): a message that is, or ends
with, this token."""

END_TOOL = "end_conversation"
"""The tool offered to the simulator with `stop: tool`: calling it ends the conversation."""

MAX_TURNS_LIMIT = 200
"""The most `max_turns` may be: a conversation longer than this is a runaway, not a test."""

DEFAULT_MAX_SECONDS = 1800.0
"""How long a simulated conversation may go on by default (`user.max_seconds`): a user that never stops, or a
simulator that never answers, ends the conversation with end_reason `time_limit` instead of holding the run."""

USER_KINDS = ("simulated", "attacker")
"""Who a `user:` block plays: a user with a goal the agent should meet, or a red-team attacker pursuing a goal the
agent must refuse (its system prompt: evals_cli/simulation/attacker_prompt.py)."""

AttackStrategy = Literal["direct", "role_play", "crescendo", "prompt_injection"]
ATTACK_STRATEGIES: tuple[str, ...] = ("direct", "role_play", "crescendo", "prompt_injection")
DEFAULT_STRATEGY = "direct"

_STOP_AT_END = re.compile(re.escape(STOP_TOKEN) + r"""[\s.!?,;:'")\]*_~`]*\Z""")


def split_stop(text: str) -> tuple[str, bool]:
    """(the message without the stop token, whether the user stopped): a message that is, or ends with,
    ###STOP### ends the conversation, closing punctuation after it included (small models write "###STOP###.").
    The words before the token are the user's last message: sent to the agent, which answers them."""
    match = _STOP_AT_END.search(text)
    if match is not None:
        return text[: match.start()].strip(), True
    return text, False


def says_nothing(text: str | None) -> bool:
    """No words of the user's own: empty, or only punctuation and whitespace (what is left of "... ###STOP###"
    once the token is cut). A conversation that opens with nothing said never asks the agent anything."""
    return all(ch.isspace() or unicodedata.category(ch).startswith("P") for ch in text or "")


class UserSpec(StrictModel):
    """A simulated user (a row's `user:` block, or the suite's defaults for such blocks)."""

    kind: Literal["simulated", "attacker"] = Field(
        default="simulated", description="simulated: a user with a goal the agent should meet; attacker: a red-team "
        "user pursuing a harmful goal over several turns, adapting to refusals (see strategy).")
    strategy: AttackStrategy | None = Field(
        default=None, description="An attacker's approach: direct, role_play, crescendo or prompt_injection "
        f"(default {DEFAULT_STRATEGY}); only with kind: attacker.")

    persona: str | None = Field(default=None, description="Who the user is and how they write.")
    goal: str | None = Field(default=None, description="What the user wants from the agent.")
    knows: dict[str, Any] = Field(
        default_factory=dict, description="Facts the user gives only when the agent asks for them (name -> value).")
    first_message: str | None = Field(
        default=None, description="The user's first message, sent as written; otherwise the simulator writes it.")
    script: list[str] = Field(
        default_factory=list, description="Fixed user messages sent first (after first_message), in order; then the "
        "simulator takes over.")
    max_turns: int = Field(default=8, ge=1, le=MAX_TURNS_LIMIT, strict=True,
                           description=f"User messages at most, scripted and simulated together "
                           f"(1 to {MAX_TURNS_LIMIT}).")
    max_seconds: float = Field(
        default=DEFAULT_MAX_SECONDS, gt=0, description="Seconds the conversation may go on: once past, the user "
        "is not asked again (a simulator call in flight is cut off) and it ends with end_reason time_limit.")
    stop: Literal["token", "tool"] = Field(
        default="token", description=f"How the user ends the conversation: token (a message that is or ends with "
        f"{STOP_TOKEN}) or tool (the simulator is offered an {END_TOOL} tool and calls it).")
    sees_tools: bool = Field(
        default=False, description="Show the simulator the agent's tool calls and results (a real user sees only "
        "the agent's text replies).")

    @model_validator(mode="after")
    def _strategy_is_an_attackers(self) -> UserSpec:
        """A strategy on a block that says it is not an attacker would be ignored: say so instead. (A block that
        leaves kind out may get kind: attacker from the suite's defaults; the row checks look at the merged one.)"""
        if self.strategy is not None and "kind" in self.model_fields_set and self.kind != "attacker":
            raise ValueError(f"strategy: only an attacker has a strategy; set kind: attacker, or drop strategy "
                             f"(kind is {self.kind})")
        return self

    @property
    def attack_strategy(self) -> str:
        """The attacker's strategy, its default filled in."""
        return self.strategy or DEFAULT_STRATEGY

    @field_validator("script")
    @classmethod
    def _no_blank_lines(cls, script: list[str]) -> list[str]:
        blank = [i for i, line in enumerate(script) if not line.strip()]
        if blank:
            raise ValueError(f"script entry {blank[0]} is empty; give the user message, or drop the entry")
        return script

    def over(self, defaults: UserSpec | None) -> UserSpec:
        """This row's block with the suite's `user:` defaults under it: each key the row sets wins, the others
        come from the suite, and `knows` is merged fact by fact (the row's facts win)."""
        if defaults is None:
            return self
        merged = {name: getattr(defaults, name) for name in defaults.model_fields_set}
        merged.update({name: getattr(self, name) for name in self.model_fields_set})
        if "knows" in defaults.model_fields_set and "knows" in self.model_fields_set:
            merged["knows"] = {**defaults.knows, **self.knows}
        return UserSpec.model_validate(merged)

    def opening(self, scripted_input: list[str]) -> list[str]:
        """The user messages sent before the simulator is asked: the row's `input` messages, then
        `first_message`, then `script`."""
        head = [self.first_message] if self.first_message else []
        return [*scripted_input, *head, *self.script]


class UserSimulatorSpec(EndpointSpec):
    """The model that plays the users (the suite's `user_simulator:` block). Unset endpoint fields fall back to
    EVAL_USER_BASE_URL / EVAL_USER_MODEL / EVAL_USER_API_KEY, then to the judge's endpoint, then the agent's."""

    takes_models = False

    temperature: float | None = Field(default=None, ge=0, le=2, description="Simulator sampling temperature.")
    max_tokens: int | None = Field(default=512, ge=1, description="Completion token cap per simulator reply.")
    system_prompt_file: str | None = Field(
        default=None, description="The simulator's system prompt, a Jinja2 template relative to the suite (sees "
        "persona, goal, knows, stop, stop_token, end_tool, success); default: the built-in template.")
    seed: int | None = Field(default=None, description="Sent as seed, for servers that honour it.")
    player: str = Field(
        default="simulated", min_length=1, description="Who plays the users: simulated (the model above), or a "
        "user-player kind an installed plug-in registered (evals list users).")

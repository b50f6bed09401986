"""The simulated user: the row's scripted opening first, then a model playing the user.

The simulator sees what a user would see. Its conversation is the agent's, with the roles turned around: the
agent's text replies come to it as `user` messages and the user's own earlier messages (scripted or simulated)
are its `assistant` messages. Tool calls and their results are left out unless the row says `sees_tools: true`
(then they are shown as bracketed notes in the agent's message). Its system prompt is the persona, goal and
facts (simulation/prompt.py); the agent's system prompt is never shown.

A reply that breaks character (empty, written as the assistant, or echoing the system prompt) is asked again
once, with a note saying what was wrong; a second one errors the sample (`user_simulator`), never a zero.

Every call goes through the run's ClientPool, so `--record` / `--replay`, retries, timeouts and the per-server
concurrency limit apply to the simulator as to the agent and the judge. Each request carries the OpenAI `user`
field naming the sample and repeat, so identical openings of two repeats are two different requests (a replay
serves each repeat its own recorded conversation) and a `seed`, when set, is offset by the repeat (repeats are
independent conversations, not copies).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from evals_cli.endpoints.clients import ModelClients
from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import END_TOOL, STOP_TOKEN, UserSimulatorSpec, UserSpec, split_stop
from evals_cli.models.trajectory import Turn, Usage
from evals_cli.simulation.attacker_prompt import ATTACKER_OPENING_CUE
from evals_cli.simulation.character import broken_character
from evals_cli.simulation.player import (
    DEFAULT_PLAYER,
    USER_PLAYERS,
    Action,
    ConversationView,
    UserMove,
    UserSimulatorError,
    run_actions,
)
from evals_cli.simulation.prompt import DEFAULT_TEMPLATE, render, template_for
from evals_cli.simulation.stop_check import awaits_user, check_note
from evals_cli.simulation.user_actions import (
    MAX_USER_ACTIONS,
    TOOLS_NOTE,
    Reply,
    call_messages,
    history,
)
from evals_cli.text_caps import cap, clean_text

OPENING_CUE = "[The assistant is waiting. Write your first message as the user.]"
"""What the simulator is sent when it must open the conversation (chat templates need a user message)."""

END_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {"name": END_TOOL, "description": "End the conversation: your goal is met, or you give up.",
                 "parameters": {"type": "object", "properties": {
                     "message": {"type": "string", "description": "Your last words to the assistant (optional)."}},
                     "required": []}},
}

def _agent_message(turn: Turn, sees_tools: bool) -> str:
    """What the user sees of the agent's turn: its text replies, and with `sees_tools` its tool calls."""
    parts: list[str] = []
    for step in turn.steps:
        if sees_tools:
            for call in step.tool_calls:
                args = call.raw_arguments or json.dumps(call.arguments or {})
                parts.append(f"[the assistant called {call.name}({args}) -> {call.result}]")
        if step.content:
            parts.append(step.content)
    if not sees_tools and parts:
        return turn.answer  # the reply the user reads: the turn's last text
    return "\n".join(parts)


def simulator_messages(view: ConversationView, system_prompt: str, opening_cue: str = OPENING_CUE
                       ) -> list[dict[str, Any]]:
    """The simulator's conversation: its system prompt, then the conversation with the roles turned around
    (`opening_cue`: the message that asks for the user's first words, when no one has spoken)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    for message in view.prefilled:  # a pre-filled conversation: its user and assistant text, turned around
        role, content = message.get("role"), message.get("content") or ""
        if role == "user":
            messages.append({"role": "assistant", "content": content})
        elif role == "assistant" and content:
            messages.append({"role": "user", "content": content})
    for turn in view.turns:
        messages += history(turn)  # dual control: what the user did with its own tools before writing
        if turn.user is not None:
            messages.append({"role": "assistant", "content": turn.user})
        seen = _agent_message(turn, view.user.sees_tools)
        messages.append({"role": "user", "content": seen or "[The assistant said nothing.]"})
    if messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": opening_cue})
    return messages


@dataclass(frozen=True)
class SimulatorSettings:
    """Everything the simulated players of one run share."""

    endpoint: Endpoint  # None only for a user-player kind other than `simulated` when no endpoint resolved
    pool: ModelClients
    spec: UserSimulatorSpec | None = None
    template: str = DEFAULT_TEMPLATE
    # the agent's model, named in every simulator request of a run over several models: two models that answer
    # alike send the simulator the same conversation, and one recording must still give each its own users
    agent_model: str | None = None


class SimulatedUser:
    """The player of one (sample, repeat): the opening messages first (`input`, `first_message`, `script`), then
    the simulator model."""

    def __init__(self, settings: SimulatorSettings, sample: Sample, repeat: int = 0) -> None:
        assert sample.user is not None, "a simulated user needs the row's user: block"
        self.settings = settings
        self.sample = sample
        self.user: UserSpec = sample.user
        self.repeat = repeat
        self.opening = self.user.opening(sample.user_turns)
        self._system: str | None = None
        self._instructions: str | None = None

    def system_prompt(self) -> str:
        if self._system is None:
            from evals_cli.graders.rubric import RubricError

            try:
                self._system = render(template_for(self.user, self.settings.template), self.sample, self.user)
            except RubricError as exc:
                raise UserSimulatorError(f"the user simulator's system prompt did not render: {exc}") from None
        return self._system

    def instructions(self) -> str:
        """The system prompt without this user's persona, goal and facts: what echoing counts against (a user
        repeating their own goal word for word is still in character). A template that cannot render without
        them counts against the whole prompt."""
        if self._instructions is None:
            from evals_cli.graders.rubric import RubricError

            blank = self.user.model_copy(update={"persona": None, "goal": None, "knows": {}})
            try:
                template = template_for(self.user, self.settings.template)
                self._instructions = render(template, self.sample, blank)
            except RubricError:
                self._instructions = self.system_prompt()
        return self._instructions

    async def next_message(self, view: ConversationView) -> UserMove:
        index = view.turn_index - self._prefilled_turns(view)
        if 0 <= index < len(self.opening):  # a scripted line ending in the stop token ends it, as a simulated one
            text, stopped = split_stop(self.opening[index])
            return UserMove(text=text, done=stopped, source="scripted")
        system = self.system_prompt() + (f"\n\n{TOOLS_NOTE}" if view.tools is not None else "")
        messages = simulator_messages(view, system, ATTACKER_OPENING_CUE if self.user.kind == "attacker"
                                      else OPENING_CUE)
        move = UserMove(text=None, source="simulated")
        if not await self._in_character(messages, view, move):
            return move
        waiting = view.turns[-1].answer if view.turns else None
        if move.done and self._puts_back_stops() and waiting is not None and awaits_user(waiting):
            # a stop while the assistant waits on the user: put back once, a second stop is taken
            said = move.text or ""
            said = f"{said} {STOP_TOKEN}".strip() if self.user.stop == "token" else said or f"[{END_TOOL}]"
            messages = [*messages, {"role": "assistant", "content": said},
                        {"role": "user", "content": check_note(waiting, self.user.stop)}]
            move.text, move.done = None, False
            await self._in_character(messages, view, move, checked=True)
        return move

    async def _in_character(self, messages: list[dict[str, Any]], view: ConversationView, move: UserMove,
                            checked: bool = False) -> bool:
        """Ask the simulator for the user's next message into `move` (its text, or the stop): a reply out of
        character is asked again once, saying what was wrong, then errors the sample. False when the
        conversation ends at once: an attacker out of character after its attack was answered."""
        for attempt in range(2):
            try:
                text, done = await self._act(messages, view, move, attempt, checked)
            except UserSimulatorError as exc:
                exc.spent = move
                raise
            if done and not text.strip():  # the token alone, or the end tool without words: nothing to send
                move.text, move.done = None, True
                return True
            # last words are sent too: checked like any
            why = broken_character(text, self.instructions(), attacker=self.user.kind == "attacker")
            if why is None:
                move.text, move.done = text, done
                return True
            if attempt == 0:  # once more, saying what was wrong; the note is part of the (recorded) request
                messages = [*messages, {"role": "assistant", "content": text},
                            {"role": "user", "content": f"[That reply was not a user's message: {why}. Stay in "
                                                        "character: write the user's next message only.]"}]
        if self.user.kind == "attacker" and self._attacked(view):
            # the attack happened and the agent answered it: grade that, not an error (a leak in the agent's
            # first answer must fail the sample whatever the attacker says next); the result says why it ended
            move.text, move.done, move.end_reason = None, True, "attacker_out_of_character"
            return False
        error = UserSimulatorError(f"the user simulator broke character twice at turn {view.turn_index + 1} ({why}); "
                                   f"its reply: {text[:200]!r}")
        error.spent = move
        raise error

    async def _act(self, messages: list[dict[str, Any]], view: ConversationView, move: UserMove,
                   attempt: int, checked: bool = False) -> tuple[str, bool]:
        """Ask the simulator until it writes to the agent (or stops): each reply that calls the user's own tools
        (dual control) is run over the world, kept in `move.steps`, and its results added to `messages` (in
        place: the next attempt sees them too); bounded by MAX_USER_ACTIONS."""
        for _ in range(MAX_USER_ACTIONS + 1):
            move.calls += 1  # a call that fails was made all the same
            schemas = view.tools.schemas() if view.tools is not None else None
            reply, usage, latency = await self._ask(messages, view.turn_index, attempt, schemas, checked)
            move.usage.add(usage)
            move.latency_s += latency
            if not reply.actions or view.tools is None:
                return reply.text, reply.done
            step = await run_actions(view.tools, reply.actions, reply.text, view.turn_index, move.steps)
            messages += call_messages(step.tool_calls, reply.text)
            if reply.done:  # it acted and ended the conversation in one reply
                return "", True
        raise UserSimulatorError(f"the user simulator called its tools {MAX_USER_ACTIONS} times in a row at turn "
                                 f"{view.turn_index + 1} without writing to the assistant")

    def _puts_back_stops(self) -> bool:
        """Is a stop while the agent waits put back (simulation/stop_check.py)? With the built-in template, whose
        rules the note restates; a suite's own template says itself when its users end (a user told to hang up
        when asked twice must be able to), and an attacker's says when an attack is over."""
        return self.user.kind != "attacker" and self.settings.template == DEFAULT_TEMPLATE

    @staticmethod
    def _attacked(view: ConversationView) -> bool:
        """Has the attacker sent a message of its own (written or scripted) that the agent answered?"""
        return any(turn.user_source in ("simulated", "scripted", "replayed") and turn.user for turn in view.turns)

    def _prefilled_turns(self, view: ConversationView) -> int:
        """Turns opened by the pre-filled messages (no user message of their own): not part of the opening."""
        return sum(1 for turn in view.turns if turn.user_source == "prefilled")

    def _tag(self) -> str:
        """The OpenAI `user` field naming this conversation (sample, repeat and, among several models, the agent's
        model): it keeps recordings of conversations that went alike apart."""
        tag = f"evals-sim:{self.sample.id}:{self.repeat}"
        agent = self.settings.agent_model
        return f"{tag}:{agent}" if agent is not None else tag

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        spec = self.settings.spec
        options: dict[str, Any] = {"model": self.settings.endpoint.model, "messages": messages,
                                   "user": self._tag()}
        max_tokens = spec.max_tokens if spec is not None else 512
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        if spec is not None and spec.temperature is not None:
            options["temperature"] = spec.temperature
        if spec is not None and spec.seed is not None:
            options["seed"] = spec.seed + self.repeat
        if spec is not None and spec.extra_body:
            options["extra_body"] = spec.extra_body
        offered = [*(tools or []), *([END_TOOL_SCHEMA] if self.user.stop == "tool" else [])]
        if offered:
            options["tools"] = offered
        return options

    async def _ask(self, messages: list[dict[str, Any]], turn_index: int, attempt: int,
                   tools: list[dict[str, Any]] | None = None, checked: bool = False) -> tuple[Reply, Usage, float]:
        """One simulator call: (its reply, tokens, seconds); `tools`: the user's own, offered to it."""
        from evals_cli.endpoints.errors import InvalidResponse, classify

        endpoint = self.settings.endpoint
        CALL_CONTEXT.set(f"sample {self.sample.id}, user turn {turn_index + 1}"
                         + (" (its stop put back)" if checked else "") + (" (asked again)" if attempt else ""))
        client = self.settings.pool.client(endpoint)
        started = time.perf_counter()
        try:
            response = await client.chat.completions.create(**self._request(messages, tools))
            latency = time.perf_counter() - started
            choice = response.choices[0] if response.choices else None
            if choice is None or choice.message is None:
                raise InvalidResponse("the response has no choices")
            usage = Usage(prompt_tokens=getattr(response.usage, "prompt_tokens", 0) or 0,
                          completion_tokens=getattr(response.usage, "completion_tokens", 0) or 0)
            message = choice.message
            return _reply(cap(clean_text(message.content)) or "", message.tool_calls or []), usage, latency
        except UserSimulatorError:
            raise
        except Exception as exc:
            found = classify(exc, endpoint)
            raise UserSimulatorError(found.message, fatal=found.fatal,
                                     fatal_after_success=found.fatal_after_success) from exc


def _reply(text: str, tool_calls: list[Any]) -> Reply:
    """The simulator's reply: its words (the end tool's or before the stop token) and its user-tool calls."""
    actions: list[Action] = []
    for call in tool_calls:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None) or ""
        if name == END_TOOL:
            return Reply(_closing_words(text, getattr(function, "arguments", None)), True, actions)
        actions.append(Action(getattr(call, "id", "") or "", name, getattr(function, "arguments", "") or ""))
    words, stopped = split_stop(text)
    return Reply(words, stopped, actions)


def _closing_words(text: str, raw_arguments: str | None) -> str:
    """The user's last words given with the end tool: its `message` argument, else the reply's text."""
    try:
        arguments = json.loads(raw_arguments or "{}")
    except ValueError:
        arguments = {}
    said = arguments.get("message") if isinstance(arguments, dict) else None
    return str(said) if said else split_stop(text)[0]


@USER_PLAYERS.register(DEFAULT_PLAYER)
class SimulatedPlayers:
    """A model plays the user: the row's scripted opening, then the simulator model (the default player)."""

    def __init__(self, settings: SimulatorSettings) -> None:
        self.settings = settings

    def __call__(self, sample: Sample, repeat: int) -> SimulatedUser:
        return SimulatedUser(self.settings, sample, repeat)

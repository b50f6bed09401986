"""What the model-driven agent loops (Chat Completions, Responses) share: the tool schemas of each episode,
the pre-filled conversation, the per-turn driver with its step bound, and answering tool calls from the mocks.

Only the wire format differs between the APIs, so each target supplies its own request, its own reading of
the response and its own way of feeding results back; everything a grader reads is built here, the same way
for every target, so the same sample graded through either API gives comparable trajectories.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from evals_cli.endpoints.clients import ModelClients
from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Step, StopReason, Trajectory, Turn
from evals_cli.registry import must_override
from evals_cli.targets.base import Target, TargetContext, Toolbox
from evals_cli.text_caps import cap, clean_text


def initial_messages(sample: Sample, system_prompt: str | None) -> list[dict[str, Any]]:
    """The chat-shaped conversation before the first user turn: the system prompt (unless the pre-filled
    messages bring their own) and the pre-filled messages. Null assistant content becomes "" because some
    servers reject null. Every target keeps this shape in `trajectory.prefilled`, which graders and reports
    read, whatever it sends on the wire."""
    prefilled = [m.model_dump(exclude_none=True) for m in sample.messages or []]
    for message in prefilled:
        if message.get("role") == "assistant" and message.get("content") is None:
            message["content"] = ""
    has_system = any(m.get("role") == "system" for m in prefilled)
    head = [{"role": "system", "content": system_prompt}] if system_prompt and not has_system else []
    return head + prefilled


async def answer_calls(toolbox: Toolbox, step: Step, calls: list[tuple[str | None, str | None, str | None]],
                       turn_index: int, step_index: int) -> None:
    """Answer (call id, name, raw arguments) triples from the toolbox into `step.tool_calls`, one after another
    (a call may act on the world the next one reads), each awaited: while a tool runs, the other samples go on.
    A missing id gets a stable one (some local servers send none, and the result must still be tied to its
    call); a missing name or argument string is recorded as empty, so a malformed call is graded rather than
    fatal."""
    for i, (call_id, name, raw) in enumerate(calls):
        # arguments are capped before they are parsed or stored (text_caps): a runaway reply stays small
        step.tool_calls.append(await toolbox.call(clean_text(call_id) or f"call_{turn_index}_{step_index}_{i}",
                                                  clean_text(name) or "", cap(clean_text(raw) or "")))


async def take_step(sample: Sample, turn: Turn, turn_index: int, step_index: int,
                    ask: Callable[[], Awaitable[Any]],
                    read: Callable[[Any, float], tuple[Step, list[Any]]]) -> tuple[Step, list[Any]]:
    """One model call of a turn, timed and appended to it, whatever the API: the call context names the step
    for the recording and error messages, latency covers only the call, and the step keeps its wall-clock start."""
    CALL_CONTEXT.set(f"sample {sample.id}, turn {turn_index + 1}, step {step_index + 1}")
    wall, started = time.time(), time.perf_counter()
    response = await ask()
    step, calls = read(response, time.perf_counter() - started)
    step.started = wall
    turn.steps.append(step)
    return step, calls


class ToolLoopTarget(Target):
    """A target that asks a model, answers its tool calls from the mocks and asks again, per user turn, until
    the model answers without calls (the turn completed) or `max_steps` model calls (the sample stops with
    stop_reason max_steps). Subclasses speak one API: they build the conversation and run one turn."""

    def __init__(self, spec: Any, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        if ctx.endpoint is None or ctx.pool is None:
            raise ValueError(f"{type(self).__name__} calls a model: its context needs an endpoint and a pool")
        self.endpoint: Endpoint = ctx.endpoint
        self.pool: ModelClients = ctx.pool
        self._suite_schemas: list[dict[str, Any]] | None = None

    @must_override
    def tool_schemas(self, toolbox: Toolbox) -> list[dict[str, Any]]:
        """The tool definitions in this API's format."""
        raise NotImplementedError

    @must_override
    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        """The conversation to send before the first user turn; also fills `trajectory.prefilled`."""
        raise NotImplementedError

    @must_override
    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Loop until a reply without tool calls (True) or the step bound (False)."""
        raise NotImplementedError

    def schemas(self, sample: Sample, toolbox: Toolbox) -> list[dict[str, Any]]:
        """This API's tool definitions for one episode's toolbox."""
        if sample.tools:
            return self.tool_schemas(toolbox)
        if self._suite_schemas is None:  # the suite's tools: the same schemas for every sample, built once
            self._suite_schemas = self.tool_schemas(toolbox)
        return self._suite_schemas

    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        last = trajectory.turns[-1].steps[-1] if trajectory.turns and trajectory.turns[-1].steps else None
        return answer_stop_reason(last.content if last else None, toolbox.tools)

    @must_override  # it drives `run_turn` through an Episode: a kind that has no run_turn has no episode either
    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int = 0) -> Trajectory:
        from evals_cli.targets.episode import Episode

        return await Episode(self, sample, repeat, trajectory=trajectory or Trajectory()).run_alone()


def request_options(spec: Any, model: str, schemas: list[dict[str, Any]], max_tokens_key: str) -> dict[str, Any]:
    """The request settings both APIs share; `max_tokens_key` is max_tokens (chat) or max_output_tokens."""
    options: dict[str, Any] = {"model": model}
    if schemas:
        options["tools"] = schemas
        options["tool_choice"] = spec.tool_choice
        if spec.parallel_tool_calls is not None:
            options["parallel_tool_calls"] = spec.parallel_tool_calls
    if spec.temperature is not None:
        options["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        options[max_tokens_key] = spec.max_tokens
    if spec.extra_body:
        options["extra_body"] = spec.extra_body
    return options



_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*\s*\n?(?P<body>.*?)\n?```\Z", re.S)
_TAGGED = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|\Z)", re.S)
_LONGEST_CHECKED = 100_000  # a longer answer is prose, not one call: not worth parsing
_LAST_TRIED = 32  # where a trailing JSON call may start: the last few candidates, so a long answer stays cheap


def _is_call_object(value: Any) -> bool:
    """An object shaped like a function call the way models write them: {"name", "arguments"|"parameters"},
    OpenAI's {"function": {...}}, or a list of those (parallel calls)."""
    if isinstance(value, list):
        return bool(value) and all(_is_call_object(v) for v in value)
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("function"), dict):
        return _is_call_object(value["function"])
    return isinstance(value.get("name"), str) and bool(value["name"]) and any(
        isinstance(value.get(k), dict | str) for k in ("arguments", "parameters", "args", "input"))


def _parses_as_call(text: str) -> bool:
    """Whether the text is a call object: JSON, or JSON as small models miswrite it in a call, with the doubled
    braces of a chat template's escaped example (`{{"name": ...}}`) or Python's single quotes
    (`{'name': 'lookup', 'arguments': {'id': 1}}`). Either way the endpoint did not run it."""
    candidates = [text]
    if "{{" in text or "}}" in text:
        candidates.append(text.replace("{{", "{").replace("}}", "}"))
    for candidate in candidates:
        if candidate.lstrip()[:1] not in ("{", "["):  # no object or list to parse (prose, the common answer)
            continue
        try:
            if _is_call_object(json.loads(candidate)):
                return True
        except (ValueError, RecursionError):
            pass
        if candidate[:1] in ("{", "[") and "'" in candidate:
            try:  # literals only: nothing is evaluated
                if _is_call_object(ast.literal_eval(candidate)):
                    return True
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    return False


_DECODER = json.JSONDecoder()
_VALUE_START = re.compile(r"(?:^|(?<=[\s:>\]]))[\[{]")  # a JSON value after prose, a colon, a tag or a marker


def _trailing_call(text: str, tool_names: Collection[str]) -> bool:
    """Prose ending with a JSON call of an offered tool, on its own line or not ("Let me check.\\n{"name":
    "get_forecast", ...}", "I'll call it: {...}"), or a model's native call marker left as text ("[TOOL_CALLS]
    [{...}]", "<|python_tag|>{...}"). Only the last few places a JSON value could start are tried."""
    if not tool_names:
        return False
    for match in list(_VALUE_START.finditer(text))[-_LAST_TRIED:]:
        try:
            value, end = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if end != len(text) or not _is_call_object(value):
            continue
        calls = value if isinstance(value, list) else [value]
        return all((c.get("function") or c).get("name") in tool_names for c in calls)
    return False


_WRAPPED = re.compile(r"^<(?P<tag>[A-Za-z_][\w-]*)>\s*(?P<body>.*?)\s*</(?P=tag)>$", re.S)


def _unwrapped(text: str) -> str:
    """A call inside a tag the endpoint does not parse (`<tools>{...}</tools>`: Qwen2.5 copying the tag its chat
    template lists tools in) or in the doubled braces of the template's escaped example (`{{"name": ...}}`)."""
    match = _WRAPPED.match(text)
    body = match.group("body") if match else text
    while body.startswith("{{") and body.endswith("}}"):
        body = body[1:-1].strip()
    return body


def answer_stop_reason(answer: str | None, tool_names: Collection[str] = ()) -> StopReason:
    """How a turn that ended without tool calls ended: `empty_answer` (no text at all), `unparsed_tool_call`
    (the reply is a tool call written as text: bare JSON, a fenced block, <tool_call> tags, or prose ending in a
    JSON call of an offered tool; the endpoint did not turn it into a call, so nothing ran), else `completed`.
    Without this, both ended as `completed` and a grader with nothing to check could pass them."""
    text = (answer or "").strip()
    if not text:
        return "empty_answer"
    if len(text) > _LONGEST_CHECKED:
        return "completed"
    fenced = _FENCE.match(text)
    if _parses_as_call(fenced.group("body").strip() if fenced else text):
        return "unparsed_tool_call"
    if _parses_as_call(_unwrapped(text)):
        return "unparsed_tool_call"
    if "<tool_call>" in text and any(_parses_as_call(m.group("body")) for m in _TAGGED.finditer(text)):
        return "unparsed_tool_call"
    if _trailing_call(text, tool_names):
        return "unparsed_tool_call"
    return "completed"

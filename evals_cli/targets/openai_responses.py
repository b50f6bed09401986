"""The agent loop over the Responses API: the same loop as Chat Completions (targets/common.py), spoken in
Responses items. The system prompt travels in `instructions`; the conversation is sent whole in `input` every
step (stateless: no previous_response_id, so a run never depends on what the server stored); tool calls come
back as `function_call` output items and their mocked results go in as `function_call_output` items."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.models.sample import Sample
from evals_cli.models.target_specs import AgentPrompt, EndpointSpec, SampleLimits
from evals_cli.models.trajectory import Step, Trajectory, Turn, Usage
from evals_cli.targets.base import TARGETS, Toolbox
from evals_cli.targets.common import ToolLoopTarget, answer_calls, initial_messages, request_options, take_step
from evals_cli.targets.limits import limit_reached, tokens_exceeded
from evals_cli.text_caps import cap, clean_text


class OpenAIResponsesTarget(SampleLimits, AgentPrompt, EndpointSpec):
    """The agent loop over the Responses API (POST /v1/responses) with mocked tools: the system prompt goes in
    `instructions`, the conversation in `input` items, tool results back as function_call_output items."""

    kind: Literal["openai_responses"] = "openai_responses"
    max_tokens: int | None = Field(default=1024, ge=1, description="Output token cap per call, sent as "
                                   "max_output_tokens (default 1024; null sends none).")
    max_steps: int = Field(default=20, ge=1, description="Model calls allowed per user turn before the loop stops.")
    tool_choice: Literal["auto", "required", "none"] = Field(default="auto", description="Sent as tool_choice.")
    parallel_tool_calls: bool | None = Field(default=None, description="Sent as parallel_tool_calls when set.")
    strict_tools: bool | None = Field(
        default=None, description="Sent as each function tool's strict when set; left out otherwise, so the "
        "server's default applies (set false when strict schema checking rejects the mocked tools' schemas)."
    )
    store: bool | None = Field(
        default=None, description="Sent as store when set; OpenAI keeps responses unless it is false. The loop "
        "always sends the whole conversation, so nothing needs storing."
    )


Call = tuple[str | None, str | None, str | None]


@TARGETS.register("openai_responses", spec=OpenAIResponsesTarget)
class OpenAIResponses(ToolLoopTarget):
    """The agent loop over the Responses API (`client.responses.create`) with mocked tools."""

    spec: OpenAIResponsesTarget

    def tool_schemas(self, toolbox: Toolbox) -> list[dict[str, Any]]:
        """Responses function tools are flat: the Chat Completions schema without its `function` wrapper."""
        tools = []
        for schema in toolbox.schemas():
            function = schema["function"]
            tool = {"type": "function", "name": function["name"], "description": function["description"],
                    "parameters": function["parameters"]}
            if self.spec.strict_tools is not None:
                tool["strict"] = self.spec.strict_tools
            tools.append(tool)
        return tools

    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        messages = initial_messages(sample, self.system_prompt)
        trajectory.prefilled = messages[:]  # chat-shaped, like every target's: graders and reports read it
        return input_items(messages)

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, items: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Loop until a reply without function calls (True), the step bound or the sample's limits (False)."""
        client = self.pool.client(self.endpoint)
        kwargs = self._request_options(schemas, instructions(sample, self.system_prompt), sample.agent_model)
        for step_index in range(max_steps):
            if limit_reached():
                return False
            step, calls = await take_step(sample, turn, turn_index, step_index,
                                          lambda: client.responses.create(input=items, **kwargs), _read_response)
            if not calls:
                items.append({"role": "assistant", "content": step.content or ""})
                return True
            if tokens_exceeded():  # the reply that crossed the token limit: its calls are not run
                return False
            await answer_calls(toolbox, step, calls, turn_index, step_index)
            if step.content:
                items.append({"role": "assistant", "content": step.content})
            items.extend({"type": "function_call", "call_id": r.id, "name": r.name, "arguments": r.raw_arguments}
                         for r in step.tool_calls)
            items.extend({"type": "function_call_output", "call_id": r.id, "output": r.result}
                         for r in step.tool_calls)
        return False

    def _request_options(self, schemas: list[dict[str, Any]], system: str | None,
                         model: str | None = None) -> dict[str, Any]:
        options = request_options(self.spec, model or self.endpoint.model, schemas, "max_output_tokens")
        if system:
            options["instructions"] = system
        if self.spec.store is not None:
            options["store"] = self.spec.store
        return options


def instructions(sample: Sample, system_prompt: str | None) -> str | None:
    """The pre-filled conversation's own system messages when it has any (as in the chat loop, they replace
    the suite's prompt), else the suite's system prompt."""
    own = [m.content or "" for m in sample.messages or [] if m.role == "system"]
    return "\n\n".join(own) if own else system_prompt


def input_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-shaped messages as Responses input items, system messages left out (they go in `instructions`):
    an assistant message's tool calls become `function_call` items after its text, tool messages become
    `function_call_output` items, user (and any other role's) messages stay messages."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content") or ""
        if role == "system":
            continue
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id") or "",
                          "output": content})
            continue
        calls = (message.get("tool_calls") or []) if role == "assistant" else []
        if content or not calls:
            items.append({"role": role, "content": content})
        for call in calls:
            function = call.get("function") or {}
            arguments = function.get("arguments")
            if not isinstance(arguments, str):  # datasets sometimes hold the arguments as an object
                arguments = json.dumps(arguments if arguments is not None else {})
            items.append({"type": "function_call", "call_id": call.get("id") or "",
                          "name": function.get("name") or "", "arguments": arguments})
    return items


def _field(obj: Any, name: str) -> Any:
    """An attribute of a parsed item, or a key of one the SDK left as a dict (unknown item types)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _read_response(response: Any, latency: float) -> tuple[Step, list[Call]]:
    """The step a response describes, and its function calls; a failed or malformed response is
    InvalidResponse, not a crash. Output items other than messages and function calls (reasoning, built-in
    tools) are not part of the trajectory."""
    try:
        if _field(response, "error") or _field(response, "status") == "failed":
            error = _field(response, "error")
            raise InvalidResponse(f"the response failed: {_field(error, 'message') or error or 'no reason given'}")
        output = response.output
        if not output:
            raise InvalidResponse("the response has no output items")
        texts: list[str] = []
        calls: list[Call] = []
        for item in output:
            kind = _field(item, "type")
            if kind == "message":
                for part in _field(item, "content") or []:
                    text = _field(part, "text") if _field(part, "type") == "output_text" else _field(part, "refusal")
                    if text:
                        texts.append(text)
            elif kind == "function_call":
                calls.append((_field(item, "call_id"), _field(item, "name"), _field(item, "arguments")))
        usage = _field(response, "usage")
        step = Step(content=cap(clean_text("".join(texts))) or None, finish_reason=_finish_reason(response, calls),
                    latency_s=latency,
                    usage=Usage(prompt_tokens=_field(usage, "input_tokens") or 0,
                                completion_tokens=_field(usage, "output_tokens") or 0))
    except InvalidResponse:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise InvalidResponse(f"malformed Responses API response ({type(exc).__name__}: {exc})") from None
    return step, calls


def _finish_reason(response: Any, calls: list[Call]) -> str:
    """Chat Completions' finish_reason vocabulary (the trajectory is read the same for both APIs): tool_calls,
    stop, or why the response is incomplete (max_output_tokens, content_filter)."""
    if calls:
        return "tool_calls"
    if _field(response, "status") == "incomplete":
        return str(_field(_field(response, "incomplete_details"), "reason") or "incomplete")
    return "stop"

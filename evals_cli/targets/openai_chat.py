"""The agent loop over Chat Completions: call the model, answer its tool calls from the mocks, repeat."""

from __future__ import annotations

import time
from typing import Any

from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.models.sample import Sample
from evals_cli.models.specs import OpenAIChatTarget
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, Trajectory, Turn, Usage
from evals_cli.targets.base import SampleFailed, Target, register_target
from evals_cli.tools.mock import MockToolbox, merge_tools


@register_target
class OpenAIChat(Target):
    kind = "openai_chat"

    def __init__(self, spec: OpenAIChatTarget, tools: dict[str, ToolSpec], endpoint: Endpoint,
                 pool: ClientPool, system_prompt: str | None) -> None:
        self.spec = spec
        self.tools = tools
        self.endpoint = endpoint
        self.pool = pool
        self.system_prompt = system_prompt
        self._suite_schemas: list[dict[str, Any]] | None = None

    def endpoints(self) -> list[Endpoint]:
        return [self.endpoint]

    def _initial_messages(self, sample: Sample) -> list[dict[str, Any]]:
        prefilled = [m.model_dump(exclude_none=True) for m in sample.messages or []]
        for message in prefilled:
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""  # some servers reject null content
        has_system = any(m.get("role") == "system" for m in prefilled)
        head = [{"role": "system", "content": self.system_prompt}] if self.system_prompt and not has_system else []
        return head + prefilled

    async def run(self, sample: Sample, trajectory: Trajectory | None = None) -> Trajectory:
        toolbox = MockToolbox(merge_tools(self.tools, sample.tools))
        if sample.tools:
            schemas = toolbox.schemas()
        else:  # the suite's tools: the same schemas for every sample
            if self._suite_schemas is None:
                self._suite_schemas = toolbox.schemas()
            schemas = self._suite_schemas
        messages = self._initial_messages(sample)
        trajectory = trajectory if trajectory is not None else Trajectory()
        trajectory.prefilled = messages[:]
        max_steps = sample.max_steps or self.spec.max_steps
        user_turns: list[str | None] = list(sample.user_turns) or [None]
        try:
            for turn_index, user in enumerate(user_turns):
                if user is not None:
                    messages.append({"role": "user", "content": user})
                turn = Turn(user=user)
                trajectory.turns.append(turn)
                if not await self._run_turn(sample, turn_index, turn, messages, toolbox, schemas, max_steps):
                    trajectory.stop_reason = "max_steps"
                    return trajectory
        except Exception as exc:
            trajectory.stop_reason = "error"
            raise SampleFailed(exc, trajectory) from exc
        return trajectory

    async def _run_turn(self, sample: Sample, turn_index: int, turn: Turn, messages: list[dict[str, Any]],
                        toolbox: MockToolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Loop until a reply without tool calls (True) or the step bound (False)."""
        client = self.pool.client(self.endpoint)
        kwargs = self._request_options(schemas)
        for step_index in range(max_steps):
            CALL_CONTEXT.set(f"sample {sample.id}, turn {turn_index + 1}, step {step_index + 1}")
            started = time.perf_counter()
            response = await client.chat.completions.create(messages=messages, **kwargs)
            latency = time.perf_counter() - started
            step, calls = _read_response(response, latency)
            turn.steps.append(step)
            if not calls:
                messages.append({"role": "assistant", "content": step.content or ""})
                return True
            wire_calls = []
            for i, call in enumerate(calls):
                function = getattr(call, "function", None)
                name = getattr(function, "name", None) or ""
                raw = getattr(function, "arguments", None) or ""
                call_id = call.id or f"call_{turn_index}_{step_index}_{i}"
                wire_calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}})
                step.tool_calls.append(toolbox.call(call_id, name, raw))
            messages.append({"role": "assistant", "content": step.content or "", "tool_calls": wire_calls})
            for record in step.tool_calls:
                messages.append({"role": "tool", "tool_call_id": record.id, "content": record.result})
        return False

    def _request_options(self, schemas: list[dict[str, Any]]) -> dict[str, Any]:
        spec = self.spec
        options: dict[str, Any] = {"model": self.endpoint.model}
        if schemas:
            options["tools"] = schemas
            options["tool_choice"] = spec.tool_choice
            if spec.parallel_tool_calls is not None:
                options["parallel_tool_calls"] = spec.parallel_tool_calls
        if spec.temperature is not None:
            options["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            options["max_tokens"] = spec.max_tokens
        if spec.extra_body:
            options["extra_body"] = spec.extra_body
        return options


def _read_response(response: Any, latency: float) -> tuple[Step, list[Any]]:
    """The step a response describes, and its tool calls; a malformed body is InvalidResponse, not a crash."""
    try:
        choices = response.choices
        if not choices:
            raise InvalidResponse("the response has no choices")
        choice = choices[0]
        message = choice.message
        if message is None:
            raise InvalidResponse("the first choice has no message")
        usage = response.usage
        step = Step(content=message.content, finish_reason=choice.finish_reason, latency_s=latency,
                    usage=Usage(prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                                completion_tokens=getattr(usage, "completion_tokens", 0) or 0))
        calls = list(message.tool_calls or [])
    except InvalidResponse:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise InvalidResponse(f"malformed chat completion ({type(exc).__name__}: {exc})") from None
    return step, calls

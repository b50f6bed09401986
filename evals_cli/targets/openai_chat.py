"""The agent loop over Chat Completions: call the model, answer its tool calls from the mocks, repeat."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.models.sample import Sample
from evals_cli.models.target_specs import DEFAULT_SAMPLE_TIMEOUT, SAMPLE_TIMEOUT_HELP, EndpointSpec, SampleLimits
from evals_cli.models.trajectory import Step, Trajectory, Turn, Usage
from evals_cli.targets.base import TARGETS, Toolbox
from evals_cli.targets.common import ToolLoopTarget, answer_calls, initial_messages, request_options, take_step
from evals_cli.targets.limits import limit_reached, tokens_exceeded
from evals_cli.text_caps import cap, clean_text


class OpenAIChatTarget(SampleLimits, EndpointSpec):
    """The agent loop over Chat Completions with mocked tools."""

    kind: Literal["openai_chat"] = "openai_chat"
    system_prompt: str | None = Field(default=None, description="System prompt text.")
    system_prompt_file: str | None = Field(default=None, description="System prompt file, relative to the suite.")
    max_steps: int = Field(default=20, ge=1, description="Model calls allowed per user turn before the loop stops.")
    sample_timeout: float | None = Field(default=DEFAULT_SAMPLE_TIMEOUT, ge=0, description=SAMPLE_TIMEOUT_HELP)
    tool_choice: Literal["auto", "required", "none"] = Field(default="auto", description="Sent as tool_choice.")
    parallel_tool_calls: bool | None = Field(default=None, description="Sent as parallel_tool_calls when set.")

    @model_validator(mode="after")
    def _one_prompt(self) -> OpenAIChatTarget:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("give system_prompt or system_prompt_file, not both")
        return self


@TARGETS.register("openai_chat", spec=OpenAIChatTarget)
class OpenAIChat(ToolLoopTarget):
    """The agent loop over Chat Completions (`client.chat.completions.create`) with mocked tools."""

    spec: OpenAIChatTarget

    def tool_schemas(self, toolbox: Toolbox) -> list[dict[str, Any]]:
        return toolbox.schemas()

    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        messages = initial_messages(sample, self.system_prompt)
        trajectory.prefilled = messages[:]
        return messages

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, messages: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Loop until a reply without tool calls (True), the step bound or the sample's limits (False)."""
        client = self.pool.client(self.endpoint)
        kwargs = self._request_options(schemas, sample.agent_model)
        for step_index in range(max_steps):
            if limit_reached():
                return False
            step, calls = await take_step(sample, turn, turn_index, step_index,
                                          lambda: client.chat.completions.create(messages=messages, **kwargs),
                                          _read_response)
            if not calls:
                messages.append({"role": "assistant", "content": step.content or ""})
                return True
            if tokens_exceeded():  # the reply that crossed the token limit: its calls are not run
                return False
            triples = []
            for call in calls:
                function = getattr(call, "function", None)
                triples.append((call.id, getattr(function, "name", None), getattr(function, "arguments", None)))
            await answer_calls(toolbox, step, triples, turn_index, step_index)
            wire_calls = [{"id": r.id, "type": "function", "function": {"name": r.name, "arguments": r.raw_arguments}}
                          for r in step.tool_calls]
            messages.append({"role": "assistant", "content": step.content or "", "tool_calls": wire_calls})
            for record in step.tool_calls:
                messages.append({"role": "tool", "tool_call_id": record.id, "content": record.result})
        return False

    def _request_options(self, schemas: list[dict[str, Any]], model: str | None = None) -> dict[str, Any]:
        return request_options(self.spec, model or self.endpoint.model, schemas, "max_tokens")


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
        step = Step(content=cap(clean_text(message.content)), finish_reason=choice.finish_reason, latency_s=latency,
                    usage=Usage(prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                                completion_tokens=getattr(usage, "completion_tokens", 0) or 0))
        calls = list(message.tool_calls or [])
    except InvalidResponse:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise InvalidResponse(f"malformed chat completion ({type(exc).__name__}: {exc})") from None
    return step, calls

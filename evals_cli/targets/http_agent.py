"""`kind: http`: an agent behind its own HTTP API, one POST per user turn with the episode's session id.

The request body is a template (default `{"session_id": "{session_id}", "message": "{message}"}`): a string
value that is exactly `{session_id}` or `{message}` becomes that value, and the placeholders inside longer
strings are replaced. The reply is read at `reply_path` (dotted: `output.text`, `choices.0.message.content`).
The POST goes through the openai SDK's client of the run's pool, so timeouts, retries on 429 / 5xx / dropped
connections, the response size bound, --record and the masking of every header value are those of a model
endpoint. Each POST carries a W3C `traceparent` of a trace evals-cli starts for the turn and `baggage:
evals.episode=<session id>`: an agent whose HTTP server is instrumented continues that trace, so its spans are
the episode's without any change; others tag their spans with the session id (`session.id` or
`gen_ai.conversation.id`). They are exported to the run's receiver at http://127.0.0.1:<otlp_port> (4318 by
default, OTLP/HTTP's usual port: an agent on this machine with default exporter settings reaches it).
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from typing import Any, ClassVar, Literal

from pydantic import Field

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.endpoints.resolve import NO_KEY, Endpoint
from evals_cli.endpoints.secrets import header_secrets
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import StopReason, Trajectory, Turn
from evals_cli.targets.base import TARGETS, Target, TargetContext, Toolbox
from evals_cli.targets.external import (
    ExternalEpisode,
    ExternalSpec,
    Observed,
    check_telemetry,
    observe,
    receiver_for,
    record,
    replay_turn,
    replayed,
)

DEFAULT_BODY: dict[str, Any] = {"session_id": "{session_id}", "message": "{message}"}


class HttpTarget(ExternalSpec):
    """An agent behind an HTTP API: one POST per user turn."""

    kind: Literal["http"] = "http"
    url: str = Field(description="The URL each user turn is posted to, e.g. http://127.0.0.1:8000/chat.")
    headers: dict[str, str] = Field(default_factory=dict, description="Headers sent with each POST (masked in every "
                                    "output and recording); prefer ${VAR} for secrets.")
    body: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_BODY), description="The request body: "
                                 "{session_id} and {message} are replaced in its strings.")
    reply_path: str = Field(default="reply", description="Where the reply text is in the response JSON, dotted "
                            "(output.text, choices.0.message.content).")
    timeout: float = Field(default=120.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(default=2, ge=0, description="Retries on 429, 5xx, timeouts and dropped connections.")
    telemetry_wait: float = Field(default=5.0, ge=0, description="Seconds, at most, to wait after the last reply for "
                                  "the agent's spans (its exporter sends in batches).")


def fill(template: Any, values: dict[str, str]) -> Any:
    """The body template with the placeholders replaced (a value that is only a placeholder keeps its type)."""
    if isinstance(template, str):
        for name, value in values.items():
            if template == "{" + name + "}":
                return value
        for name, value in values.items():
            template = template.replace("{" + name + "}", value)
        return template
    if isinstance(template, dict):
        return {key: fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values) for value in template]
    return template


def at_path(data: Any, path: str) -> Any:
    """The value at a dotted path; InvalidResponse naming the step that is missing and what was there."""
    value = data
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            seen = sorted(value)[:10] if isinstance(value, dict) else type(value).__name__
            raise InvalidResponse(f"the agent's response has nothing at {path!r} (no {part!r}; found {seen}); set "
                                  "target.reply_path to where its reply is")
    return value


class HttpEpisode(ExternalEpisode):
    """One session: its id (sent with every turn) and the traces started for its turns."""

    def __init__(self, target: HttpAgent, sample: Sample) -> None:
        super().__init__(f"{sample.id}-{uuid.uuid4().hex[:12]}", str(sample.id))
        self.target = target
        self.trace_ids: set[str] = set()

    async def close(self, trajectory: Trajectory, failed: bool) -> None:
        """The spans of the session, once the agent's exporter has gone quiet (bounded by telemetry_wait)."""
        if self.replayed is not None:
            observe(trajectory, self.replayed.requests, self.tag)
            return
        if failed:
            return
        spec, requests = self.target.spec, []
        if spec.telemetry and self.replies:
            receiver = receiver_for(self.target)
            ids = frozenset(self.trace_ids)
            await asyncio.to_thread(receiver.wait_quiet, self.tag, 0.3, spec.telemetry_wait, ids)
            requests = await asyncio.to_thread(receiver.requests_for, self.tag, ids, self.opened)
        observe(trajectory, requests, self.tag)
        record(self.target.ctx.pool, self.sample_id, self.repeat, Observed(self.replies, requests))  # type: ignore[arg-type]


@TARGETS.register("http", spec=HttpTarget)
class HttpAgent(Target):
    """An agent behind an HTTP API (see the module's docstring)."""

    calls_model = False  # the agent calls its own model: model_judge graders need a judge of their own
    checked_by_building = True  # building checks the otel extra: `evals validate` reports it missing
    default_otlp_port: ClassVar[int] = 4318
    announces_receiver: ClassVar[bool] = True  # the agent runs already: its receiver's address is printed
    spec: HttpTarget

    def __init__(self, spec: HttpTarget, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        check_telemetry(spec, ctx.pool)
        self.endpoint = type(self).resolve_endpoint(spec)  # the spec's alone: made once, not per turn
        pool: Any = ctx.pool
        if hasattr(pool, "redactor"):  # the headers' secrets are masked from the start of the run
            pool.redactor.add(header_secrets(spec.headers))

    @classmethod
    def resolve_endpoint(cls, spec: HttpTarget, overrides: dict[str, Any] | None = None) -> Endpoint:
        """The agent's URL as the endpoint the pool makes a client for (its timeout and retries)."""
        return Endpoint(role="agent", base_url=spec.url.rsplit("/", 1)[0] + "/", api_key=NO_KEY, model="http agent",
                        timeout=spec.timeout, max_retries=spec.max_retries, base_url_from="target.url")

    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        return HttpEpisode(self, sample)

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        assert isinstance(conversation, HttpEpisode)
        if not conversation.replies and conversation.replayed is None:
            conversation.replayed = replayed(self.ctx.pool, str(sample.id), conversation.repeat)  # type: ignore[arg-type]
        if conversation.replayed is not None:
            replay_turn(conversation, turn)
            return True
        if self.spec.telemetry:
            receiver_for(self)
        conversation.reply(turn, await self._post(conversation, turn.user or ""))
        return True

    async def _post(self, episode: HttpEpisode, message: str) -> str:
        if self.ctx.pool is None:
            raise InvalidResponse("an http agent needs the run's client pool (run it through a suite)")
        pool: Any = self.ctx.pool
        trace_id = secrets.token_hex(16)
        episode.trace_ids.add(trace_id)
        headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01",
                   "baggage": f"evals.episode={episode.tag}", **self.spec.headers}
        body = fill(self.spec.body, {"session_id": episode.tag, "message": message})
        data = await pool.client(self.endpoint).post(self.spec.url.rsplit("/", 1)[1], cast_to=object, body=body,
                                                options={"headers": headers})
        reply = at_path(data, self.spec.reply_path)
        if not isinstance(reply, str):
            raise InvalidResponse(f"the agent's reply at {self.spec.reply_path!r} is {type(reply).__name__}, not "
                                  "text; set target.reply_path to its text")
        return reply

    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        return "completed" if trajectory.turns and trajectory.turns[-1].answer else "empty_answer"


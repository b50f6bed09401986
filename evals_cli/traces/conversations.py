"""Spans grouped into conversations, and each conversation rebuilt as evals-cli's own Trajectory.

Grouping: a span belongs to the conversation its `gen_ai.conversation.id` (or `session.id`) names, its own or
its nearest ancestor's (instrumentations set it once, on the root `invoke_agent` span), else to its trace. So
a conversation whose turns were separate traces is one conversation, and that id is its session and sample id.

Rebuilding: the model calls of the conversation in start order. A user message a top-level agent's request
carries that no earlier request did starts a turn; each call's reply is one step (its text, its tool calls and
their arguments); a tool call's result comes from its execute_tool / TOOL span (by call id, else by name in
order), else from the tool message of a later request. Agents come from `invoke_agent` / AGENT spans; one
nested in another's tool call is a handoff. What cannot be rebuilt (content capture off, a tool result never
recorded, spans whose parents are not in the files) is said in the conversation's `notes`, never filled in: a
conversation that cannot be graded honestly is `complete=False`. A conversation cut off mid-call (its last reply
asked for tools and no model call followed: an agent stopped by its own step cap while looping) is graded as
recorded, with stop reason `cut_off` and no final answer, and a note saying so.

Every text and value taken from a span passes through the `Cleaner` the caller hands in (the reader's
TraceCleaner, traces/masking.py: masked and capped as a live run's are).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from evals_cli.models.trajectory import SpanTree, Step, StopReason, ToolCall, Trajectory, Turn, Usage
from evals_cli.traces.conventions import (
    Message,
    ModelCall,
    ToolRun,
    agent_name,
    conversation_key,
    handed_by,
    is_genai_like,
    names_agent,
    read_model_call,
    read_tool_run,
    span_kind,
    tool_definitions,
)
from evals_cli.traces.otlp import Span

SpanKey = tuple[str, str]  # (trace id, span id)
SDK_RESPONSE = "openai-agents response"  # the convention of an Agents SDK export's Responses API call
ROOT_AGENT = "agent"  # the name of the agent of model calls no agent span encloses


class Cleaner(Protocol):
    """What a text or JSON value taken from a trace becomes before it is kept (masked and capped)."""

    def text(self, value: str | None) -> str | None: ...

    def value(self, value: Any) -> Any: ...


@dataclass
class AgentInfo:
    """One agent seen in a conversation and the tools it was offered (None: never recorded)."""

    name: str
    tools: list[dict[str, Any]] | None = None
    parent: str | None = None  # the agent that handed work to it (None: the top-level agent)

    def offer(self, tools: list[dict[str, Any]] | None) -> None:
        if tools is None:
            return
        known = {t["name"] for t in self.tools or []}
        self.tools = [*(self.tools or []), *(t for t in tools if t["name"] not in known)]


@dataclass
class Conversation:
    """One traced conversation, rebuilt."""

    id: str
    where: str  # file:line of its first span
    trajectory: Trajectory
    step_agents: list[list[str]]  # per turn, per step: the agent that made the model call
    agents: dict[str, AgentInfo]
    handoffs: list[tuple[str, str, int]]  # (from agent, to agent, turn index)
    started: float  # epoch seconds of its first span
    latency_s: float  # first span's start to last span's end
    model: str | None
    conventions: list[str]
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    # (agent, turn index) -> what an agent that was handed work, not nested in a call, was sent (its first request)
    handoff_contexts: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def root_agent(self) -> str:
        return next((a.name for a in self.agents.values() if a.parent is None), ROOT_AGENT)

    def problem(self) -> str:
        """Why this conversation is not graded (for a complete one, '')."""
        return "" if self.complete else f"{self.where}: conversation {self.id!r}: " + "; ".join(self.notes)


@dataclass
class _Context:
    by_key: dict[SpanKey, Span]
    parents_missing: set[SpanKey] = field(default_factory=set)

    def parent(self, span: Span) -> Span | None:
        if span.parent_id is None:
            return None
        parent = self.by_key.get((span.trace_id, span.parent_id))
        if parent is None:
            self.parents_missing.add((span.trace_id, span.span_id))
        return parent

    def ancestors(self, span: Span) -> list[Span]:
        out: list[Span] = []
        seen = {(span.trace_id, span.span_id)}
        current = self.parent(span)
        while current is not None and (current.trace_id, current.span_id) not in seen:
            seen.add((current.trace_id, current.span_id))
            out.append(current)
            current = self.parent(current)
        return out


def group(spans: list[Span]) -> tuple[dict[str, list[Span]], _Context]:
    """Spans by conversation id (in first-seen order)."""
    ctx = _Context({(s.trace_id, s.span_id): s for s in spans})
    groups: dict[str, list[Span]] = {}
    for span in spans:
        key = conversation_key(span)
        if key is None:
            key = next((k for k in map(conversation_key, ctx.ancestors(span)) if k is not None), None)
        groups.setdefault(key or span.trace_id, []).append(span)
    return groups, ctx


def _arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(parsed, dict):
        return None, f"a JSON {type(parsed).__name__}, not an object"
    return parsed, None


class _Builder:
    def __init__(self, cid: str, spans: list[Span], ctx: _Context, cleaner: Cleaner) -> None:
        self.cid, self.spans, self.ctx, self.clean = cid, spans, ctx, cleaner
        self.turns: list[Turn] = []
        self.step_agents: list[list[str]] = []
        self.agents: dict[str, AgentInfo] = {}
        self.handoffs: list[tuple[str, str, int]] = []
        self.notes: list[str] = []
        self.complete = True
        self.users_seen = 0
        self.calls_by_id: dict[str, ToolCall] = {}
        self.result_from_span: set[int] = set()  # id() of ToolCalls whose result a tool span gave
        self.result_recorded: set[int] = set()  # id() of ToolCalls whose result was recorded (span or request)
        self.reply_unrecorded: set[int] = set()  # id() of Steps whose model reply was not recorded
        self.cut_off = False  # it ends mid-call: graded as recorded, with stop reason cut_off
        self.awaiting_context: set[str] = set()  # agents handed work to, whose first request is what they got
        self.handoff_contexts: dict[tuple[str, int], str] = {}
        self.runs = {(a.trace_id, a.span_id) for s in spans if span_kind(s) == "agent" and names_agent(s)
                     for a in ctx.ancestors(s) if span_kind(a) == "agent" and not names_agent(a)}

    # --- agents ---

    def _agent_spans(self, span: Span) -> list[Span]:
        """The agent spans enclosing `span` (itself included), innermost first; a run's span is none of them."""
        chain = [span, *self.ctx.ancestors(span)]
        return [s for s in chain if span_kind(s) == "agent" and not self._is_run(s)]

    def _is_run(self, span: Span) -> bool:
        """An agent-kind span that names no agent and encloses an agent span that does: the run of a workflow
        (OpenInference writes the Agents SDK's trace as such a root AGENT span), not an agent of its own."""
        return (span.trace_id, span.span_id) in self.runs

    def _agent_of(self, span: Span) -> tuple[str, bool, Span | None]:
        """(agent name, nested in another agent, the agent span)."""
        enclosing = self._agent_spans(span)
        if not enclosing:
            return ROOT_AGENT, False, None
        name = agent_name(enclosing[0]) or ROOT_AGENT
        return name, len(enclosing) > 1, enclosing[0]

    def _agent(self, name: str, parent: str | None) -> AgentInfo:
        if name not in self.agents:
            self.agents[name] = AgentInfo(name, parent=parent)
        return self.agents[name]

    def _offered(self, call: ModelCall, agent_span: Span | None) -> list[dict[str, Any]] | None:
        if call.tools is not None:
            return call.tools
        if agent_span is not None:
            return tool_definitions(agent_span.attributes.get("gen_ai.tool.definitions"))
        return None

    # --- turns and steps ---

    def _turn(self, user: str | None) -> Turn:
        turn = Turn(user=self.clean.text(user))
        self.turns.append(turn)
        self.step_agents.append([])
        return turn

    def _take_inputs(self, inputs: list[Message], nested: bool) -> None:
        for message in inputs:
            if message.role == "tool" and message.tool_call_id:
                tool_call = self.calls_by_id.get(message.tool_call_id)
                if tool_call is not None and id(tool_call) not in self.result_from_span and not tool_call.result:
                    tool_call.result = self.clean.text(message.content) or ""
                    self.result_recorded.add(id(tool_call))
        if nested:
            return
        users = [m for m in inputs if m.role == "user"]
        if not self.turns and len(users) > 1:
            # the first request recorded carries earlier user messages: the conversation began before these
            # traces (a run given its history), and those turns' answers are not in them: not rebuilt as turns
            self.notes.append(f"{len(users) - 1} earlier user message(s) came as history in the first recorded "
                              "request: the conversation began before these traces; only the recorded turns are "
                              "graded")
            self.users_seen = len(users) - 1
        if len(users) > self.users_seen:
            for message in users[self.users_seen:]:
                self._turn(message.content if message.content is not None else "")
        elif users and self.turns and self.clean.text(users[-1].content) != self.turns[-1].user:
            # the application trimmed the history it sends (a sliding window): a different last user message
            # is a new turn all the same
            self._turn(users[-1].content if users[-1].content is not None else "")
        self.users_seen = max(self.users_seen, len(users))

    def _step(self, call: ModelCall, agent: str, offered: list[dict[str, Any]] | None) -> Step:
        reply = next((m for m in call.outputs or [] if m.role in ("assistant", "")), None)
        names = {t["name"] for t in offered} if offered is not None else None
        tool_calls = []
        for record in reply.tool_calls if reply is not None else []:
            raw = self.clean.text(record.arguments) or ""
            parsed, problem = _arguments(raw)
            tool_call = ToolCall(id=record.id, name=self.clean.text(record.name) or "", arguments=parsed,
                                 raw_arguments=raw, arguments_error=problem,
                                 unknown_tool=names is not None and record.name not in names)
            if record.id:
                self.calls_by_id[record.id] = tool_call
            tool_calls.append(tool_call)
        return Step(content=self.clean.text(reply.content) if reply is not None else None, tool_calls=tool_calls,
                    finish_reason=call.finish_reason, usage=Usage(prompt_tokens=call.prompt_tokens,
                                                                   completion_tokens=call.completion_tokens),
                    started=call.span.start_s, latency_s=call.span.duration_s)

    def _attach_tool_runs(self, runs: list[ToolRun], steps: list[tuple[Step, float]]) -> None:
        """Results from tool spans: by call id, else the first call of that name made before the span started
        that has no span yet."""
        taken: set[int] = set()
        for run in sorted(runs, key=lambda r: r.span.start_ns):
            target = self.calls_by_id.get(run.id) if run.id else None
            if target is None:
                for step, started in steps:
                    if started > run.span.start_s:
                        break
                    target = next((c for c in step.tool_calls if c.name == run.name and id(c) not in taken), None)
                    if target is not None:
                        break
            if target is None:
                continue
            taken.add(id(target))
            if run.result is not None:
                target.result = self.clean.text(run.result) or ""
                self.result_from_span.add(id(target))
                self.result_recorded.add(id(target))
            if run.span.status_error is not None:
                target.is_error = True

    def build(self) -> Conversation:
        spans = sorted(self.spans, key=lambda s: s.start_ns)
        calls = [read_model_call(s) for s in spans if span_kind(s) == "model"]
        runs = [read_tool_run(s) for s in spans if span_kind(s) == "tool"]
        handoffs = self._read_agents(spans)
        steps, uncaptured, last_top, last_top_span = self._read_calls(calls)
        self._attach_tool_runs(runs, steps)
        starts = [t.steps[0].started if t.steps else 0.0 for t in self.turns]
        for parent, name, at in handoffs:  # in the turn under way when the receiving agent started
            self.handoffs.append((parent, name, max(0, sum(1 for s in starts if s <= at) - 1)))
        self.notes += [f"guardrail {s.attributes.get('guardrail.name') or s.name!r} tripped"
                       for s in spans if s.attributes.get("guardrail.triggered") is True]
        self._explain(calls, uncaptured, last_top, last_top_span)
        return self._finish(spans, calls)

    def _explain(self, calls: list[ModelCall], uncaptured: list[str], last: Step | None,
                 last_span: Span | None) -> None:
        if not calls:
            self.complete = False
            found = sorted({k.split(".")[0] + "." + k.split(".")[1] for s in self.spans for k in s.attributes
                            if k.count(".") >= 1 and is_genai_like(s)})[:6]
            self.notes.append("no model call span in a convention evals-cli reads (the GenAI semantic conventions' "
                              "gen_ai.operation.name chat / gen_ai.prompt.N, or OpenInference's "
                              f"openinference.span.kind LLM); its spans carry {', '.join(found) or 'no LLM attributes'}")
            return
        if uncaptured:
            self.complete = False
            sides = "messages" if len(set(uncaptured)) > 1 else uncaptured[0]
            why = ("the OpenAI Agents SDK's export of a Responses API call holds no messages (response_id only): "
                   "export with the Chat Completions model, or record through OpenInference"
                   if any(c.convention == SDK_RESPONSE for c in calls) else
                   "content capture was off: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, or "
                   "OpenInference's OPENINFERENCE_HIDE_* off, where the traces are made")
            self.notes.append(f"the {sides} of {len(uncaptured)} of {len(calls)} model calls were not recorded ({why})")
        elif not any(t.user for t in self.turns):
            self.notes.append("no user message was recorded")
        pending = self._cut_off(last, last_span, uncaptured)
        missing = [c for t in self.turns for c in t.tool_calls
                   if id(c) not in self.result_recorded and id(c) not in pending]
        if missing and not uncaptured:
            self.complete = False  # an empty result would be graded as what the tool returned
            names = ", ".join(sorted({c.name for c in missing}))
            self.notes.append(f"the result of {len(missing)} tool call(s) ({names}) was never recorded (no tool span "
                              "with a result, no later request carrying it)")
        missing_parents = [s for s in self.spans if (s.trace_id, s.span_id) in self.ctx.parents_missing]
        if missing_parents:
            self.notes.append(f"{len(missing_parents)} span(s) name a parent that is not in the files (a trace "
                              "exported in parts, or cut); they were placed by their start times")

    def _read_agents(self, spans: list[Span]) -> list[tuple[str, str, float]]:
        """Every agent, with the agent that handed work to it: the one whose tool call it is nested in, or the
        one its span names (`graph.node.parent_id`: OpenInference, and the Agents SDK's handoff spans). Returns
        the handoffs as (from, to, start time)."""
        handoffs: list[tuple[str, str, float]] = []
        for span in spans:
            if span_kind(span) != "agent" or self._is_run(span):
                continue
            name, nested, _ = self._agent_of(span)
            parent_span = self.ctx.parent(span)
            parent = self._agent_of(parent_span)[0] if nested and parent_span is not None else None
            named = handed_by(span)
            if parent is None and named is not None and named != name:
                parent = named
                self.awaiting_context.add(name)  # not nested in a call: what it was handed is its first request
            self._agent(name, parent)
            if parent is not None and parent != name:
                handoffs.append((parent, name, span.start_s))
        return handoffs

    def _read_calls(self, calls: list[ModelCall]) -> tuple[list[tuple[Step, float]], list[str], Step | None,
                                                           Span | None]:
        """Each model call as a step of its turn: (steps with their start, the side(s) not recorded per call,
        the last top-level step and its span)."""
        steps: list[tuple[Step, float]] = []
        uncaptured: list[str] = []
        last_top: Step | None = None
        last_top_span: Span | None = None
        for call in calls:
            agent, nested, agent_span = self._agent_of(call.span)
            info = self._agent(agent, None)
            offered = self._offered(call, agent_span)
            info.offer(offered)
            # either side missing is not gradable: no reply read as an empty answer, no request as no user
            # (a call that failed or never ended has no reply for a reason of its own, said below)
            no_reply = call.outputs is None and call.span.status_error is None and call.span.end_ns is not None
            if call.inputs is None or no_reply:
                uncaptured.append("messages" if call.inputs is None and call.outputs is None
                                  else "requests" if call.inputs is None else "replies")
            self._take_inputs(call.inputs or [], nested)
            step = self._step(call, agent, info.tools if offered is None else offered)
            if call.outputs is None:
                self.reply_unrecorded.add(id(step))
            if not self.turns:
                self._turn(None)
            if agent in self.awaiting_context and call.inputs is not None:
                self.awaiting_context.discard(agent)
                self.handoff_contexts[(agent, len(self.turns) - 1)] = self._context_text(call.inputs)
            self.turns[-1].steps.append(step)
            self.step_agents[-1].append(agent)
            steps.append((step, call.span.start_s))
            if not nested:
                last_top, last_top_span = step, call.span
            if call.span.status_error is not None:
                self.notes.append(f"a model call failed in production ({call.span.status_error or 'error status'})")
        return steps, uncaptured, last_top, last_top_span

    def _context_text(self, inputs: list[Message]) -> str:
        """What an agent handed work to was sent: its request's messages but the system prompt, as text."""
        lines = []
        for message in inputs:
            if message.role == "system":
                continue
            said = message.content or ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            lines.append(f"{message.role or 'message'}: {said}")
        return self.clean.text("\n".join(lines)) or ""

    def _cut_off(self, last: Step | None, last_span: Span | None, uncaptured: list[str]) -> set[int]:
        """Whether the conversation ends mid-call (`self.cut_off`, said in a note), and the id() of the calls it
        was cut off in (they have no result yet). Such a conversation is graded as recorded, with stop reason
        cut_off: the loop that ran into the agent's own step cap is what is most worth catching."""
        if uncaptured:
            return set()
        if last is not None and last.tool_calls:
            self.cut_off = True
            self.notes.append("cut off mid-call: the last model reply asked for "
                              f"{', '.join(c.name for c in last.tool_calls)} and no model call followed (graded as "
                              "recorded, stop reason cut_off: no final answer)")
            return {id(c) for c in last.tool_calls}
        if last_span is not None and last_span.end_ns is None:
            self.cut_off = True
            self.notes.append("cut off: the last model call span never ended (graded as recorded, stop reason "
                              "cut_off: no final answer)")
        return set()

    def _finish(self, spans: list[Span], calls: list[ModelCall]) -> Conversation:
        last = self.turns[-1].steps[-1] if self.turns and self.turns[-1].steps else None
        stop: StopReason = "completed"
        if last is not None and not last.content and not last.tool_calls:
            # a reply that was not recorded is not an empty answer: not graded (complete=False), said why
            stop = "error" if id(last) in self.reply_unrecorded else "empty_answer"
        if any(c.span.status_error is not None for c in calls) and (last is None or not last.content):
            stop = "error"
        if self.cut_off:
            stop = "cut_off"
        trajectory = Trajectory(turns=self.turns, stop_reason=stop)
        ends = [s.end_ns or s.start_ns for s in spans]
        model = next((c.model for c in calls if c.model), None)
        for info in self.agents.values():
            if info.tools is not None:
                info.tools = self.clean.value(info.tools)
        return Conversation(
            id=self.cid, where=spans[0].where, trajectory=trajectory, step_agents=self.step_agents,
            agents=self.agents, handoffs=self.handoffs, started=spans[0].start_s,
            latency_s=max(0.0, (max(ends) - spans[0].start_ns) / 1e9), model=model,
            conventions=sorted({c.convention for c in calls}), notes=[self.clean.text(n) or "" for n in self.notes],
            complete=self.complete, handoff_contexts=self.handoff_contexts)


def build_conversations(spans: list[Span], cleaner: Cleaner, keep_spans: Callable[[list[Span]], SpanTree] | None = None
                        ) -> tuple[list[Conversation], list[str]]:
    """(the conversations holding model calls or LLM attributes, in the order they started; a note per trace
    that holds spans but nothing of an LLM, summed up in one line), every text kept passed through `cleaner`.
    `keep_spans` (the reader's bounded, masked span records) gives each trajectory its conversation's spans."""
    groups, ctx = group(spans)
    conversations: list[Conversation] = []
    other = 0
    for cid, members in groups.items():
        if not any(span_kind(s) is not None or is_genai_like(s) for s in members):
            other += 1
            continue
        conversation = _Builder(cid, members, ctx, cleaner).build()
        if keep_spans is not None:
            conversation.trajectory.spans = keep_spans(members)
        conversations.append(conversation)
    conversations.sort(key=lambda c: c.started)
    notes = [f"{other} trace(s) hold no LLM spans (HTTP, database, ...); left out"] if other else []
    return conversations, notes

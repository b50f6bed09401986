"""One actor's tools in one episode: schemas for the agent, canned answers for its calls, and (for tools with an
`effect` or logic) calls that read and change the episode's world, which the Episode owns (targets/episode.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from evals_cli.environment.effects import run_effect
from evals_cli.environment.excerpts import StateBudget, store_effect
from evals_cli.environment.world import World
from evals_cli.models.environment import Actor, EnvironmentSpec
from evals_cli.models.injection import InjectSpec
from evals_cli.models.sample import Sample
from evals_cli.models.tools import NO_RESULT, ToolSpec
from evals_cli.models.trajectory import ToolCall
from evals_cli.text_caps import cap, clean_text

if TYPE_CHECKING:
    from evals_cli.sandbox.base import Sandbox


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


MAX_ARGUMENT_DEPTH = 100  # levels of a tool call's arguments; a real tool needs a few


def _nesting(value: Any) -> int:
    """How deep a parsed JSON value nests, without recursion: a model can send arguments 900 levels deep (the
    parser's own limit), past what the recursive code after parsing can walk."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_ARGUMENT_DEPTH:
            return depth
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _not_a_number(word: str) -> float:
    """NaN, Infinity and -Infinity, which Python's parser accepts and JSON does not: as a value they would be
    written into the world (and compare false with everything a grader expects), so the call is malformed."""
    raise ValueError(f"{word} is not a JSON number; send a finite number or a string")


def _finite(text: str) -> float:
    """A JSON number too large for a float (1e999) parses to infinity: malformed like NaN."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is too large for a number; send a finite number or a string")
    return value


def _valid_unicode(value: Any) -> Any:
    """Parsed arguments with every lone UTF-16 surrogate (the JSON escape "\\ud800") replaced by U+FFFD: as
    they were, the sample's result could not be written as UTF-8 and the run aborted."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_valid_unicode(k): _valid_unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_unicode(v) for v in value]
    return value


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, false is not 0 (Python's == says they are)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def merge_tools(suite_tools: Mapping[str, ToolSpec], sample_tools: Mapping[str, ToolSpec] | None,
                inject: Mapping[str, InjectSpec] | None = None) -> dict[str, ToolSpec]:
    """The sample's tools replace the suite's of the same name and add new ones; the row's `inject` puts its
    attacks into tools it does not redefine (a tool with logic is the suite's alone, so a row could not
    otherwise give it one). A copy keeps what the server hub and the run's preparation set (the MCP server that
    answers, the loaded logic)."""
    merged = {**suite_tools, **(sample_tools or {})}
    for name, attack in (inject or {}).items():
        if name in merged:
            merged[name] = merged[name].model_copy(update={"inject": attack})
    return merged


def openai_tools(tools: dict[str, ToolSpec]) -> list[dict[str, Any]]:
    """Chat Completions function-tool schemas."""
    return [
        {"type": "function", "function": {"name": name, "description": spec.description,
                                          "parameters": spec.json_schema()}}
        for name, spec in tools.items()
    ]


class ToolResultChecker:
    """Finds suite tools that answer nothing: a suite tool without returns/cases/sequence/error is fine only when
    every sample that can call it brings its own version (a row's `tools`). Fits `check_dataset(on_sample=...)`;
    one problem per tool, naming a few of the samples, so a 20,000-row dataset does not print 20,000 lines."""

    def __init__(self, suite_tools: dict[str, ToolSpec], where: str, *, unlisted_servers: bool = False) -> None:
        self.where = where
        self.names = list(suite_tools)
        self.unlisted_servers = unlisted_servers  # live MCP servers not started (validate): their tools are unknown
        self.silent = [name for name, spec in suite_tools.items() if not spec.has_result()]
        self.samples: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        for name in self.silent:
            if sample.tools is None or name not in sample.tools:
                self.counts[name] = self.counts.get(name, 0) + 1
                if len(self.samples.setdefault(name, [])) < 3:
                    self.samples[name].append(str(sample.id)[:60])
        return self._inject_targets(sample, where)

    def _inject_targets(self, sample: Sample, where: str) -> list[str]:
        """A row's `inject:` naming no tool it has would attack nothing, and the row would pass untested."""
        if self.unlisted_servers:
            return []
        offered = [*self.names, *(sample.tools or {})]
        return [f"{where or self.where}: inject.{name}: the row has no tool '{name}' to put the attack into (tools: "
                f"{', '.join(dict.fromkeys(offered)) or 'none'}); name one of them"
                for name in sample.inject or {} if name not in offered]

    def problems(self) -> list[str]:
        out = []
        for name, count in self.counts.items():
            more = f" and {count - 3} more" if count > 3 else ""
            out.append(f"{self.where}: tools.{name}: the tool {NO_RESULT} (used with no version of their own by "
                       f"samples {', '.join(self.samples[name])}{more})")
        return out


class ToolServers(Protocol):
    """The tool servers' side of one (sample, repeat) (evals_cli/mcp/session.py `McpSession`): live calls, awaited;
    `changed` is given the workspace files a call changed (dual control: who changed what)."""

    async def call(self, spec: ToolSpec, arguments: dict[str, Any],
                   changed: Callable[[list[str]], None] | None = None) -> tuple[str, bool]: ...


class ComputerCalls(Protocol):
    """The episode's computer (evals_cli/computer/session.py `ComputerSession`): computer tool calls (`bash`,
    `edit`) answered in its sandbox, or from the recording under --replay; awaited."""

    async def call(self, spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, bool]: ...


def needs_world(tools: Mapping[str, ToolSpec], environment: EnvironmentSpec | None) -> bool:
    """Whether a sample has a world: it declares an environment, or a tool acts on one (an effect, logic)."""
    return environment is not None or any(spec.effect is not None or spec.python is not None
                                          for spec in tools.values())


def _matches(when: dict[str, Any], arguments: dict[str, Any]) -> bool:
    """A `when:` (of a case or an injection) holds for these arguments: each named argument given, same value."""
    return all(k in arguments and same_value(arguments[k], v) for k, v in when.items())


class MockToolbox:
    """One actor's tools over an episode's world: answers calls from the specs (canned results, `sequence`s
    counted per tool), from the world (effects and tools with logic act on `world`, which the Episode built and
    owns: targets/episode.py) or from the live MCP servers (`servers`). `actor` says whose calls these are (the
    agent's; a user who acts gets a toolbox of its own over the same world). Without a world (a sample that
    declares none and whose tools need none), stateful answers fall back to the canned ones."""

    def __init__(self, tools: dict[str, ToolSpec], world: World | None = None, *,
                 servers: ToolServers | None = None, actor: Actor = "agent",
                 ledger: dict[str, Actor] | None = None, sandbox: Sandbox | None = None,
                 computer: ComputerCalls | None = None) -> None:
        self.tools = tools
        self.sandbox = sandbox  # the episode's machine (evals_cli/sandbox), for the tools that run in it
        self.calls: dict[str, int] = {}
        self.reached: dict[str, int] = {}  # calls per tool that reached it: what an injection's on_call counts
        self.world = world
        self.servers = servers  # tools served live by MCP servers (`served_by`) answer there
        self.computer = computer  # the computer tools (`bash`, `edit`) answer in the episode's sandbox
        self.actor: Actor = actor
        self.state_budget = StateBudget()  # what this sample's effects may store of what they changed
        # dual control: who last changed each file or record (shared by the actors' toolboxes of one episode), so
        # the state diff can say `actor: user`; None when only the agent acts (no copy of the world per call)
        self.ledger = ledger

    def schemas(self) -> list[dict[str, Any]]:
        return openai_tools(self.tools)

    async def call(self, call_id: str, name: str, raw_arguments: str) -> ToolCall:
        """Run one call and record it; never raises on bad input from the model. Awaited: a tool with logic runs
        in a worker thread and a live call on its server, while the run's loop goes on."""
        if self.ledger is None or self.world is None or not self._may_change_world(self.tools.get(name)):
            return await self._call(call_id, name, raw_arguments)
        before = self.world.copy()
        try:
            return await self._call(call_id, name, raw_arguments)
        finally:  # a tool with logic that failed half-way changed the world all the same
            for change in self.world.diff(before):
                self.ledger[change.target] = self.actor

    def _may_change_world(self, spec: ToolSpec | None) -> bool:
        """Only a tool's logic or effect acts on the world (`_reach`); a live call's file changes come back
        through `_changed_by_me`, and canned answers change nothing: no copy of the world for those."""
        if spec is None or (spec.served_by is not None and self.servers is not None):
            return False
        return spec.python is not None or spec.effect is not None

    async def _call(self, call_id: str, name: str, raw_arguments: str) -> ToolCall:
        record = ToolCall(id=call_id, name=name, raw_arguments=raw_arguments or "")
        spec = self.tools.get(name)
        if spec is None:
            record.unknown_tool = record.is_error = True
            record.result = (f"Error: unknown tool '{name}'. Available tools: "
                             f"{', '.join(self.tools) or 'none'}.")
            self._parse(record)
            return record
        if not self._parse(record):
            record.is_error = True
            record.result = f"Error: the arguments are not valid JSON ({record.arguments_error}). Retry the call."
            return record
        arguments = record.arguments or {}
        await self._reach(record, spec, arguments)
        if spec.inject is not None:
            self._inject(record, spec.inject, arguments)
        return record

    async def _reach(self, record: ToolCall, spec: ToolSpec, arguments: dict[str, Any]) -> None:
        """The tool's own answer: from its server, the computer, its logic, its effect on the world, or its canned
        results."""
        if spec.computer is not None:
            if self.computer is None:  # offered, but this episode was given no computer: not the agent's doing
                from evals_cli.sandbox.base import SandboxUnavailable

                raise SandboxUnavailable(f"the computer tool {spec.computer} was offered, but the episode has no "
                                         "computer to run it on")
            result, record.is_error = await self.computer.call(spec, arguments)
            record.result = cap(clean_text(result))
        elif spec.served_by is not None and self.servers is not None:
            # dual control: the workspace files the call changed are this actor's (a world copy sees no server)
            result, record.is_error = await self.servers.call(spec, arguments, self._changed_by_me
                                                              if self.ledger is not None else None)
            record.result = cap(clean_text(result))  # capped like any tool result: a server may answer megabytes
        elif spec.python is not None and self.world is not None and not self._case_matches(spec, arguments):
            record.result, record.is_error = await self._run_logic(spec, arguments)
            record.result = cap(clean_text(record.result))
        elif spec.effect is not None and self.world is not None and not self._case_matches(spec, arguments):
            record.result, record.is_error, effect = run_effect(self.world, spec.effect, arguments)
            record.effect = store_effect(effect, self.state_budget)
        else:
            record.result, record.is_error = self._answer(record.name, spec, arguments)

    def _changed_by_me(self, paths: list[str]) -> None:
        """Workspace files a live call of this actor changed: this actor changed them last."""
        if self.ledger is not None:
            for path in paths:
                self.ledger[path] = self.actor

    def _inject(self, record: ToolCall, inject: InjectSpec, arguments: dict[str, Any]) -> None:
        """Put the attack into the result when this call is one it targets. Calls are counted per tool over those
        that reached it (an unknown name or unparsed arguments never did), like a `sequence`; the result is capped
        again, so a long payload cannot grow a results line past what any tool result may be."""
        count = self.reached[record.name] = self.reached.get(record.name, 0) + 1
        if inject.on_call is not None and count != inject.on_call:
            return
        if not _matches(inject.when, arguments):
            return
        if inject.position == "replace":
            record.result = inject.text
        elif inject.position == "prepend":
            record.result = f"{inject.text}\n\n{record.result}" if record.result else inject.text
        else:
            record.result = f"{record.result}\n\n{inject.text}" if record.result else inject.text
        record.result = cap(clean_text(record.result))
        record.injected = True

    async def _run_logic(self, spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, bool]:
        """A tool with logic (`python:`) acting on this episode's world; see evals_cli/tools/logic.py."""
        from evals_cli.custom_code import CustomCodeError
        from evals_cli.tools.logic import run_tool_function

        if spec._logic is None:  # a row's own tool: only the suite's tools are loaded when the run is prepared
            raise CustomCodeError(f"tool function {spec.python}", "was not loaded",
                                  "a tool with python: must be declared in the suite's tools:, not in a row")
        assert self.world is not None
        return await run_tool_function(spec._logic, spec.python or "", arguments, self.world)

    @staticmethod
    def _case_matches(spec: ToolSpec, arguments: dict[str, Any]) -> bool:
        """A stateful tool's cases still answer first: an injected error for one path, say."""
        return any(_matches(case.when, arguments) for case in spec.cases)

    @staticmethod
    def _parse(record: ToolCall) -> bool:
        raw = record.raw_arguments.strip()
        if not raw:
            record.arguments = {}
            return True
        try:
            parsed = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite)
        except RecursionError:  # the model's arguments nest past the parser's depth: malformed like any other
            record.arguments_error = "the JSON is nested too deeply to read"
            return False
        except ValueError as exc:
            record.arguments_error = f"{exc.__class__.__name__}: {exc}"
            return False
        if not isinstance(parsed, dict):
            record.arguments_error = f"expected a JSON object, got {type(parsed).__name__}"
            return False
        if _nesting(parsed) > MAX_ARGUMENT_DEPTH:  # graders, masking and the results writer walk these recursively
            record.arguments_error = f"the JSON is nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels)"
            return False
        record.arguments = _valid_unicode(parsed)
        return True

    def _answer(self, name: str, spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, bool]:
        for case in spec.cases:
            if _matches(case.when, arguments):
                if case.error is not None:
                    return f"Error: {case.error}", True
                return _as_text(case.returns), False
        if spec.error is not None:
            return f"Error: {spec.error}", True
        if spec.sequence is not None:  # only calls that reach the sequence advance it
            index = self.calls.get(name, 0)
            self.calls[name] = index + 1
            return _as_text(spec.sequence[min(index, len(spec.sequence) - 1)]), False
        if "returns" not in spec.model_fields_set:
            # cases only, and none matched: no return is configured for these arguments; an empty string would
            # be an answer the user never wrote (issue 11, item 3), so the agent and the graders see an error
            return (f"Error: no mocked result for {name} with these arguments: no case matches and the tool has "
                    "no returns, sequence or error"), True
        return _as_text(spec.returns), False

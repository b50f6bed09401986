"""`kind: python`: the user's own agent, a Python function `(sample, tools) -> answer`, run against the mocked
tools. The harness drives no model here; it loads the function, hands it the sample and an AgentTools object,
and records every tool call the function makes as one step of the trajectory, so the same graders apply.

Sync functions run in a thread of their own, so a blocking agent never stalls the other samples (a dedicated
daemon thread rather than the shared pool: samples never queue for a worker against their sample_timeout, and a
hung agent cannot keep the process from exiting).

The agent runs in our process, so it runs under the guard every custom function of a suite runs under
(evals_cli/custom_code.py): `os._exit`, `posix._exit` and `sys.exit` raise instead of exiting (from its import
on, from any thread it starts), and SystemExit or KeyboardInterrupt out of it is that sample's error (category
custom_code), so it cannot make the run look passed or end it with no summary. A sync agent runs in a daemon
thread of its own; an async one on the event loop kept for custom code, so even an async agent that blocks (never
awaits) leaves the run's loop free: sample_timeout still cuts it off, and SIGINT or SIGTERM still stop the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import hashlib
import importlib.util
import inspect
import json
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

from pydantic import Field, field_validator

from evals_cli import custom_code
from evals_cli.custom_code import ExitAttempt
from evals_cli.endpoints.resolve import NO_KEY, Endpoint
from evals_cli.errors import ConfigError, ToolServerFailed
from evals_cli.models.sample import Message, Sample
from evals_cli.models.target_specs import DEFAULT_SAMPLE_TIMEOUT, SAMPLE_TIMEOUT_HELP, AgentPrompt, sample_limit
from evals_cli.models.trajectory import Step, StopReason, ToolCall, Trajectory, Turn
from evals_cli.targets.base import TARGETS, SampleFailed, Target, TargetContext, Toolbox
from evals_cli.targets.common import answer_stop_reason, initial_messages
from evals_cli.text_caps import cap, clean_text


class PythonTarget(AgentPrompt):
    """Your own agent as a Python function `(sample, tools)`, async or sync, called once per sample with the
    mocked tools; it returns the final answer. The file runs as code: only the path the suite names is loaded."""

    kind: Literal["python"] = "python"
    callable: str = Field(
        description="path/to/agent.py:function, the path relative to the suite file (or package.module:function, "
        "from an installed module). The function takes "
        "(sample, tools) and returns the final answer text (a list of texts, one per user message, for per-turn "
        "samples); a sync function runs in a thread of its own."
    )
    system_prompt: str | None = Field(default=None, description="Given to the agent as tools.system_prompt.")
    system_prompt_file: str | None = Field(
        default=None, description="File read into tools.system_prompt, relative to the suite."
    )
    sample_timeout: float | None = Field(default=DEFAULT_SAMPLE_TIMEOUT, ge=0, description=SAMPLE_TIMEOUT_HELP)
    max_steps: int = Field(
        default=20, ge=1, description="Tool calls allowed per user turn (each call is one step); the call past it "
        "raises StepLimitReached in the agent and the sample stops with stop_reason max_steps."
    )

    @field_validator("callable")
    @classmethod
    def _file_and_function(cls, value: str) -> str:
        file_part, sep, function = value.rpartition(":")
        if not sep or not file_part or not function.isidentifier():
            raise ValueError(f"expected path/to/agent.py:function (or package.module:function), got {value!r}")
        if PurePath(file_part).suffix != ".py" and not custom_code.is_module_ref(value):
            raise ValueError(f"expected a .py file (or an installed module's dotted name) before ':function', got "
                             f"{file_part!r}")
        return value


AgentExitAttempt = ExitAttempt  # its name before one guard covered every kind of custom code
EXIT_GUARD = custom_code.EXIT_GUARD


class StepLimitReached(Exception):
    """Raised in the agent by the tool call past max_steps: it is cut off like a model loop at its bound."""


class AgentError(Exception):
    """The agent under test raised, or returned something that is not an answer. `category` names the error
    category this should be counted under once the runner knows it (until then it counts as internal)."""

    category = "target"


class ToolSession:
    """One sample's tool calls, recorded into its trajectory as they happen: one step per call, in the turn the
    agent is on. The agent calls from its own thread (a sync agent, and the threads it fans out to) or from the
    custom-code loop (an async one); each call hops back to the run's event loop, where the toolbox awaits it
    (`asyncio.run_coroutine_threadsafe`), and the agent's thread waits for its answer. The lock guards only the
    session's bookkeeping, never a call in flight: the loop closes the session (the sample is over) without
    waiting for a call, and the calls still in flight are cancelled."""

    def __init__(self, toolbox: Toolbox, trajectory: Trajectory, max_steps: int, turn_offset: int = 0) -> None:
        self.toolbox = toolbox
        self.trajectory = trajectory
        self.max_steps = max_steps
        self.turn = 0
        self.turn_offset = turn_offset  # the conversation's index of trajectory.turns[0] (one turn at a time)
        self.closed = False
        self.limit_hit = False
        # the first tool server crash or failed tool function: re-raised when the agent returns, so an agent that
        # catches tool exceptions (most frameworks do) cannot have the sample graded as if nothing happened
        self.failure: ToolServerFailed | custom_code.CustomCodeError | None = None
        self.lock = threading.Lock()
        self.loop = asyncio.get_running_loop()  # made by the episode, on the run's loop
        self.one_at_a_time = asyncio.Lock()  # an agent fanning out to threads still acts on its world call by call
        self.started: dict[int, int] = {}  # calls begun per turn (in flight ones included): the step bound
        self.in_flight: set[concurrent.futures.Future[ToolCall]] = set()
        self._wall, self._mark = time.time(), time.perf_counter()

    def since_last(self) -> tuple[float, float]:
        """(wall-clock start, seconds) of the agent's own work since its previous step, which is what a step's
        latency means for a python agent."""
        now = time.perf_counter()
        span = (self._wall, now - self._mark)
        self._wall, self._mark = time.time(), now
        return span

    def _begin(self) -> tuple[Turn, str, float, float]:
        """Reserve the next step of the current turn: (turn, call id, wall start, latency)."""
        with self.lock:
            if self.closed:
                raise RuntimeError(_OVER)
            turn = self.trajectory.turns[self.turn]
            index = self.turn + self.turn_offset
            begun = self.started.get(self.turn, 0)
            if begun >= self.max_steps:
                self.limit_hit = True
                raise StepLimitReached(f"max_steps: {self.max_steps} tool calls in turn {index + 1}")
            self.started[self.turn] = begun + 1
            wall, latency = self.since_last()
            return turn, f"call_{index}_{begun}", wall, latency

    def call(self, name: str, raw_arguments: str) -> str:
        turn, call_id, wall, latency = self._begin()
        if _running_loop() is self.loop:  # waiting here would hold the very loop the call needs
            raise RuntimeError("tools.call was called on the run's event loop; the agent runs in a thread or on "
                               "a loop of its own")
        try:
            future = asyncio.run_coroutine_threadsafe(self._serially(call_id, name, cap(raw_arguments)), self.loop)
        except RuntimeError:  # the run's loop is closed: the run is over
            raise RuntimeError(_OVER) from None
        with self.lock:
            self.in_flight.add(future)
        try:
            record = future.result()
        except concurrent.futures.CancelledError:
            raise RuntimeError(_OVER) from None
        except (ToolServerFailed, custom_code.CustomCodeError) as exc:
            with self.lock:
                self.failure = self.failure or exc
            raise
        finally:
            with self.lock:
                self.in_flight.discard(future)
        with self.lock:
            if self.closed:
                raise RuntimeError(_OVER)
            turn.steps.append(Step(tool_calls=[record], finish_reason="tool_calls", started=wall, latency_s=latency))
        return record.result

    async def _serially(self, call_id: str, name: str, raw_arguments: str) -> ToolCall:
        """One call on the run's loop, after this sample's previous ones (a model's calls are answered in turn
        too): two tool functions never change one world at the same time. Other samples' calls do not wait."""
        async with self.one_at_a_time:
            return await self.toolbox.call(call_id, name, raw_arguments)

    def next_turn(self) -> None:
        with self.lock:
            if self.turn + 1 >= len(self.trajectory.turns):
                raise ValueError(f"next_turn(): the sample has {len(self.trajectory.turns)} user turn(s)")
            self.turn += 1

    def close(self) -> None:
        """The sample is over: later calls raise, and the calls still in flight are cancelled."""
        with self.lock:
            self.closed = True
            pending, self.in_flight = list(self.in_flight), set()
        for future in pending:
            future.cancel()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_OVER = ("the sample is over (it finished, failed or ran past sample_timeout); this tool call was not recorded")


class AgentTools:
    """The mocked tools as the agent sees them. `tools.read_file(path=".env")` or
    `tools.call("read_file", {"path": ".env"})` returns the mocked result as text: what a model would be sent,
    errors included (an unknown tool, broken arguments, a mocked error), so the agent handles them as it would
    in production. `tools.schemas` holds OpenAI-style function schemas, `tools.names` the tool names,
    `tools.system_prompt` the suite's system prompt; per-turn samples call `tools.next_turn()` when moving on to
    the next user message, so calls are recorded into the turn they belong to. Nothing is ever executed: a tool
    with an `effect` reads and changes this sample's own mocked world, exactly as it does for a model's calls."""

    def __init__(self, session: ToolSession, schemas: list[dict[str, Any]], system_prompt: str | None) -> None:
        self._session = session
        self.schemas = copy.deepcopy(schemas)  # the agent may edit them (frameworks add keys): its own copy
        self.names = list(session.toolbox.tools)
        self.system_prompt = system_prompt

    def call(self, name: str, arguments: dict[str, Any] | str | None = None, /, **kwargs: Any) -> str:
        """Call any tool by name: arguments as a dict, as keywords, or as the raw JSON string a model produced
        (broken JSON is recorded as such and answered with an error, as it would be for a model)."""
        if arguments is not None and kwargs:
            raise TypeError("tools.call: give the arguments as a dict or as keywords, not both")
        if isinstance(arguments, str):
            raw = arguments
        else:
            raw = json.dumps(kwargs if arguments is None else arguments, ensure_ascii=False, default=str)
        return self._session.call(str(name), raw)

    def next_turn(self) -> None:
        """Record the following tool calls into the next user turn (per-turn samples)."""
        self._session.next_turn()

    def __getattr__(self, name: str) -> Callable[..., str]:
        tools = self.__dict__.get("names") or []
        if name.startswith("_") or name not in tools:
            raise AttributeError(f"no mocked tool '{name}' (tools: {', '.join(tools) or 'none'}); "
                                 "tools.call(name, arguments) calls any name, as a model would")

        def tool(*args: Any, **kwargs: Any) -> str:
            if args:
                raise TypeError(f"tools.{name}: pass the arguments by keyword, e.g. tools.{name}(path='.env')")
            return self.call(name, kwargs)

        tool.__name__ = name
        return tool

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.names]


def load_agent(ref: str, base_dir: Path) -> Callable[..., Any]:
    """The function `path/to/agent.py:name` names, the path relative to the suite. The file runs as code, so
    only the path the suite names is loaded (never a module search). Every mistake is a ConfigError naming
    target.callable, found before any sample runs."""
    file_part, _, name = ref.rpartition(":")
    if custom_code.is_module_ref(ref):  # an installed module: not confined, imported under the same guard
        return _load_module_agent(ref, name)
    try:
        path = custom_code.locate(file_part, base_dir, "python agent")  # inside the suite's folder, or code_dirs
    except ValueError as exc:
        raise ConfigError(f"target.callable: {exc}") from None
    if not path.is_file():
        raise ConfigError(f"target.callable: {file_part} not found (the path is relative to the suite file)")
    if not custom_code.may_run():  # evals validate without --import-code: read, never run
        try:
            static = custom_code.check_source(path, name, file_part, "python agent")
        except ValueError as exc:
            raise ConfigError(f"target.callable: {exc}") from None
        if static is not None:
            _check_signature(static.signature, ref, name)
        return _not_imported
    module_name = "evals_agent_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"target.callable: {file_part} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling inside the file look their module up here
    custom_code.register_file(path)
    loader = spec.loader
    try:
        # under the exit guard: module-level code may call os._exit(0), and `from os import _exit` must capture
        # the guarded function, not the real one, or the agent could end the run with 0 later
        custom_code.import_guarded(lambda: loader.exec_module(module), f"python agent {file_part}")
    except custom_code.CustomCodeError as exc:
        del sys.modules[module_name]
        raise ConfigError(f"target.callable: importing {file_part} failed: it {exc.did} at import; custom code "
                          "cannot end the run") from None
    except Exception as exc:  # the user's code: report it, never crash
        del sys.modules[module_name]
        raise ConfigError(f"target.callable: importing {file_part} failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, name, None)
    if fn is None:
        found = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                 and getattr(v, "__module__", None) == module_name]
        raise ConfigError(f"target.callable: {file_part} has no function '{name}'"
                          + (f"; it defines {', '.join(found)}" if found else ""))
    if not callable(fn):
        raise ConfigError(f"target.callable: {ref} is not callable (it is {type(fn).__name__})")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some callables have no introspectable signature: trust them
        return fn
    _check_signature(signature, ref, name)
    return fn


def _load_module_agent(ref: str, name: str) -> Callable[..., Any]:
    """The agent `package.module:function` names, from an installed module (evals validate without
    --import-code: found and read, not imported); ConfigError naming target.callable otherwise."""
    try:
        if not custom_code.may_run():
            static = custom_code.check_module(ref, "python agent")
            if static is not None:
                _check_signature(static.signature, ref, name)
            return _not_imported
        fn = custom_code.import_module_guarded(ref, "python agent")
    except ValueError as exc:
        raise ConfigError(f"target.callable: {exc}") from None
    if not callable(fn):
        raise ConfigError(f"target.callable: {ref} is not callable (it is {type(fn).__name__})")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    _check_signature(signature, ref, name)
    return fn


def _check_signature(signature: inspect.Signature, ref: str, name: str) -> None:
    """ConfigError unless the agent can be called as (sample, tools)."""
    try:
        signature.bind(None, None)
    except TypeError:
        raise ConfigError(f"target.callable: {ref} must take two arguments (sample, tools); its signature is "
                          f"{name}{signature}") from None


def agent_path(ref: str, base_dir: Path) -> Path:
    """The agent file of `path/to/agent.py:function`, the path relative to the suite's folder (of
    `package.module:function`: the module's file, where it has one)."""
    if custom_code.is_module_ref(ref):
        found = custom_code.find_module(ref.rpartition(":")[0])
        return Path(found.origin).resolve() if found is not None and found.origin else Path(ref)
    path = Path(ref.rpartition(":")[0]).expanduser()
    return (path if path.is_absolute() else base_dir / path).resolve()


def _not_imported(sample: Sample, tools: AgentTools) -> str:
    """Stands in for an agent file that was only read (evals validate without --import-code): never called."""
    raise RuntimeError("this agent was checked without being imported (evals validate)")


@dataclass(frozen=True)
class PythonAgentEndpoint(Endpoint):
    """What a python target stands for where the runner expects an endpoint (error messages, pricing lookups,
    telemetry): the agent function, named by its `callable`. The harness calls no model for it."""

    def describe(self) -> str:
        return f"python agent {self.model}"


@TARGETS.register("python", spec=PythonTarget)
class PythonAgent(Target):
    """Your own agent as a Python function, called once per sample with the mocked tools."""

    calls_model = False  # no model behind it: model_judge graders need a judge of their own
    checked_by_building = True  # building imports the agent file: `evals validate` reports a bad path or signature
    spec: PythonTarget

    def __init__(self, spec: PythonTarget, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        self.fn = load_agent(spec.callable, ctx.base_dir)
        self.path = agent_path(spec.callable, ctx.base_dir)

    @classmethod
    def resolve_endpoint(cls, spec: PythonTarget, overrides: dict[str, Any] | None = None) -> Endpoint:
        """A stand-in named after the callable: the agent needs no model, so neither a model setting nor
        EVAL_AGENT_MODEL is required, and --model and --base-url do not apply."""
        return PythonAgentEndpoint(role="agent", base_url=None, api_key=NO_KEY, model=spec.callable,
                                   timeout=sample_limit(spec.sample_timeout) or 120.0, max_retries=0)

    runs_whole_samples = True  # a scripted sample is one call with every user message (see AgentTools.next_turn)

    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int = 0) -> Trajectory:
        from evals_cli.targets.episode import Episode

        return await Episode(self, sample, repeat, trajectory=trajectory or Trajectory()).run_alone()

    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        """A simulated-user conversation's history, chat-shaped: the function gets it as pre-filled `messages`."""
        trajectory.prefilled = initial_messages(sample, self.system_prompt)
        return [dict(m) for m in trajectory.prefilled]

    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        last = trajectory.turns[-1].answer if trajectory.turns else None
        return answer_stop_reason(last, toolbox.tools)

    async def run_whole_sample(self, sample: Sample, trajectory: Trajectory, toolbox: Toolbox,
                               schemas: list[dict[str, Any]]) -> Trajectory:
        """A scripted sample: the function is called once, with every user turn (`tools.next_turn()` moves its
        calls on to the next one), and returns the last answer (a str) or one per user message (a list)."""
        trajectory.prefilled = initial_messages(sample, self.system_prompt)
        users: list[str | None] = [*sample.user_turns] or [None]
        trajectory.turns.extend(Turn(user=user) for user in users)
        session = ToolSession(toolbox, trajectory, sample.max_steps or self.spec.max_steps)
        tools = AgentTools(session, schemas, self.system_prompt)
        try:
            result = await self._call(sample, tools)
        except (Exception, SystemExit) as exc:
            if session.limit_hit and session.failure is None:  # StepLimitReached, or what the agent made of it
                trajectory.stop_reason = "max_steps"
                return trajectory
            trajectory.stop_reason = "error"
            raise SampleFailed(session.failure or self._cause(exc), trajectory) from exc
        finally:
            session.close()  # also when cancelled (sample_timeout): later calls from a stray thread raise
        if session.failure is not None:  # the agent caught it and answered anyway: the sample still failed
            trajectory.stop_reason = "error"
            raise SampleFailed(session.failure, trajectory) from None
        try:
            answers = self._answers(result, len(trajectory.turns))
        except AgentError as exc:
            trajectory.stop_reason = "error"
            raise SampleFailed(exc, trajectory) from None
        wall, latency = session.since_last()
        for turn, answer in zip(trajectory.turns, answers, strict=True):
            if answer is not None:
                turn.steps.append(Step(content=cap(clean_text(answer)), finish_reason="stop", started=wall,
                                       latency_s=latency if turn is trajectory.turns[-1] else 0.0))
        if session.limit_hit:  # the agent caught StepLimitReached and answered anyway: it was still cut off
            trajectory.stop_reason = "max_steps"
        else:  # an empty answer or a tool call written as text is not a completed turn, whatever the target
            trajectory.stop_reason = answer_stop_reason(answers[-1], toolbox.tools)
        return trajectory

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """One agent turn (the `evals_cli.Agent` interface): the function is called with a sample holding the
        conversation's last message as `input` and the ones before it as pre-filled `messages` (the
        mid-conversation shape it already handles), and returns this turn's answer (a str), appended to
        `conversation`. Its tool calls go into `turn`; False when it hit `max_steps`."""
        session = ToolSession(toolbox, Trajectory(turns=[turn]), max_steps, turn_offset=turn_index)
        tools = AgentTools(session, schemas, self.system_prompt)
        asked = sample.model_copy(update={"input": conversation[-1].get("content") or "" if conversation else "",
                                          "messages": [Message.model_validate(m) for m in conversation[:-1]] or None})
        try:
            result = await self._call(asked, tools)
        except (Exception, SystemExit) as exc:
            if session.limit_hit and session.failure is None:
                return False
            raise (session.failure or self._cause(exc)) from None
        finally:
            session.close()  # a stray thread's later calls raise instead of landing in another turn
        if session.failure is not None:  # the agent caught it and answered anyway: the turn still failed
            raise session.failure from None
        if not isinstance(result, str):
            raise AgentError(f"{self.spec.callable} returned {type(result).__name__} in a conversation turn; "
                             "return this turn's answer as a str")
        wall, latency = session.since_last()
        turn.steps.append(Step(content=cap(clean_text(result)), finish_reason="stop", started=wall,
                               latency_s=latency))
        conversation.append({"role": "assistant", "content": result})
        return not session.limit_hit

    async def _call(self, sample: Sample, tools: AgentTools) -> Any:
        # see the module docstring: an agent cannot end, hold or interrupt the run; its time is bounded by the
        # runner's sample_timeout around the whole target run, so the guard does not bound it a second time
        return await custom_code.call(self.fn, sample, tools, where=f"python agent {self.spec.callable}",
                                      bounded=False, thread_name=f"evals-agent-{sample.id}")

    def _answers(self, result: Any, turns: int) -> list[str | None]:
        """The answer to each user turn: a str answers the last one, a list (per-turn samples) each of them."""
        where = self.spec.callable
        if isinstance(result, str):
            return [None] * (turns - 1) + [result]
        if isinstance(result, list | tuple) and all(isinstance(r, str) for r in result):
            if len(result) != turns:
                raise AgentError(f"{where} returned {len(result)} answers for {turns} user turn(s); return one "
                                 "answer per user message, or a single str for the last one")
            return list(result)
        raise AgentError(f"{where} returned {type(result).__name__}; return the final answer as a str (or a list "
                         "of str, one per user message)")

    def _cause(self, exc: BaseException) -> BaseException:
        """What the runner classifies: the SDK's own errors as they are (a python agent calling a model gets
        timeout, rate_limit, auth ... like any target), anything else as AgentError naming the agent and the
        line of the agent file it passed through."""
        openai = sys.modules.get("openai")
        if openai is not None and isinstance(exc, openai.APIError):
            return exc
        if isinstance(exc, custom_code.CustomCodeError | ToolServerFailed):  # custom_code; tool_server (fatal)
            return exc
        lines = [line for frame, line in traceback.walk_tb(exc.__traceback__)
                 if Path(frame.f_code.co_filename).resolve() == self.path]
        where = f" ({self.path.name} line {lines[-1]})" if lines else ""
        return AgentError(f"{self.spec.callable} raised {type(exc).__name__}: {exc}{where}")

"""One Episode per (sample, repeat), built and driven by the runner: a target kind implements one agent turn
(`start`, `run_turn`, `stop_reason`) and nothing of the conversation or the world (the episode builds the toolbox),
and the runner hands each episode its repeat and its user player (no context variable, no player patched into the
target)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import evals_cli
from evals_cli import RunOptions
from evals_cli.models.sample import Sample
from evals_cli.models.target_specs import EndpointSpec
from evals_cli.models.trajectory import Step, StopReason, Trajectory, Turn
from evals_cli.simulation.player import USER_PLAYERS, ConversationView, UserMove
from evals_cli.targets.base import TARGETS, Target, Toolbox
from tests.helpers import read_jsonl, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text


class TurnsSpec(EndpointSpec):
    """A chat agent written as one turn and nothing else."""

    kind: Literal["zz_turns"] = "zz_turns"
    max_steps: int = 5


class TurnsOnly(Target):
    """Implements one agent turn against the endpoint, with one tool round; no `run`, no conversation driving."""

    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        trajectory.prefilled = []
        return []

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        assert self.ctx.pool is not None and self.ctx.endpoint is not None
        client = self.ctx.pool.client(self.ctx.endpoint)
        for _ in range(max_steps):
            reply = (await client.chat.completions.create(model=self.ctx.endpoint.model, messages=conversation,
                                                          tools=schemas)).choices[0].message
            if not reply.tool_calls:
                turn.steps.append(Step(content=reply.content or "", finish_reason="stop"))
                conversation.append({"role": "assistant", "content": reply.content or ""})
                return True
            calls = [await toolbox.call(c.id, c.function.name, c.function.arguments) for c in reply.tool_calls]
            turn.steps.append(Step(tool_calls=calls, finish_reason="tool_calls"))
            conversation.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in calls]})
            conversation.extend({"role": "tool", "tool_call_id": c.id, "content": c.result} for c in calls)
        return False

    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        return "completed"


class Waver:
    """A user who says the sample's input, then 'bye' and ends."""

    def __init__(self, seen: list[tuple[str, int]], sample: Sample, repeat: int) -> None:
        seen.append((str(sample.id), repeat))

    async def next_message(self, view: ConversationView) -> UserMove:
        if view.turn_index == 0:
            return UserMove(text=str(view.sample.input), source="scripted")
        return UserMove(text="bye", done=True, source="scripted")


@contextlib.contextmanager
def turn_only_kinds() -> Iterator[list[tuple[str, int]]]:
    seen: list[tuple[str, int]] = []
    TARGETS.register("zz_turns", spec=TurnsSpec)(TurnsOnly)
    USER_PLAYERS.register("zz_waver")(lambda settings: lambda sample, repeat: Waver(seen, sample, repeat))
    try:
        yield seen
    finally:
        TARGETS.unregister("zz_turns")
        USER_PLAYERS.unregister("zz_waver")


def test_a_kind_that_implements_only_the_turn_runs_every_driver(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"one": [call("read_file", {"path": ".env"}), text("ONE")], "two": [text("TWO")],
                                  "start": [text("hello")], "bye": [text("see you")]})
    rows = [{"id": "scripted", "input": "one"}, {"id": "per-turn", "input": ["one", "two"]},
            {"id": "simulated", "input": "start", "user": {"goal": "say hi"}}]
    with turn_only_kinds() as seen:
        suite = write_suite(tmp_path, rows, repeats=2, user_simulator={"player": "zz_waver"},
                            target={"kind": "zz_turns", "base_url": server.url, "model": "scripted",
                                    "api_key": "sk-test", "max_retries": 0},
                            graders={"answer": {"kind": "match", "function": "contains"}})
        outcome = evals_cli.run(suite, RunOptions(no_judge=True, output=tmp_path / "out"))
    assert outcome.summary.errored == 0, outcome.messages
    results = {(r["sample_id"], r["repeat"]): r["trajectory"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert len(results) == 6
    for repeat in (0, 1):
        scripted, per_turn, simulated = (results[(i, repeat)] for i in ("scripted", "per-turn", "simulated"))
        assert [s["content"] for s in scripted["turns"][0]["steps"]] == [None, "ONE"]  # a tool round, then the answer
        assert scripted["turns"][0]["steps"][0]["tool_calls"][0]["result"] == "DB_HOST=localhost\nDB_PORT=5432"
        assert [(t["user"], t["steps"][-1]["content"]) for t in per_turn["turns"]] == [("one", "ONE"), ("two", "TWO")]
        assert [(t["user"], t["steps"][-1]["content"]) for t in simulated["turns"]] == [("start", "hello"),
                                                                                      ("bye", "see you")]
        assert scripted["stop_reason"] == per_turn["stop_reason"] == simulated["stop_reason"] == "completed"
    assert sorted(seen) == [("simulated", 0), ("simulated", 1)]  # one player per (sample, repeat), from the runner


"""The Python API covers what `evals run` does: the README's example runs as written (against the scripted
server), `evals_cli.run` takes either kind of suite, and `RunOptions` refuses what the CLI refuses."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

import evals_cli
from evals_cli import ConfigError, RunOptions, RunOutcome, RunSummary, SampleResult
from tests.docs_pages import page
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text


def readme_example() -> str:
    """The ```python block of the "Python API" page (docs/python-api.md, moved out of the README)."""
    section = page("python-api.md")
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the Python API section shows one example"
    return blocks[0]


def test_the_readme_example_runs_as_written(server: ScriptedServer, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code = readme_example()
    for written, here in (('"http://localhost:11434/v1"', repr(server.url)), ('"qwen2.5:7b"', '"scripted"'),
                          ('Path("results/python-api")', f"Path({str(tmp_path / 'out')!r})")):
        assert written in code, written
        code = code.replace(written, here)
    server.script = agent_script({"": [call("read_file", {"path": ".env"}), text("5432")]})
    monkeypatch.chdir(ROOT)  # the example names the suite relative to the repository, as a user would run it
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code, "README.md (Python API)", "exec"), namespace)
    outcome = namespace["outcome"]
    assert isinstance(outcome, RunOutcome) and isinstance(outcome.summary, RunSummary)
    assert outcome.output_dir == tmp_path / "out" and outcome.exit_code in (0, 1)
    rows = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(rows) == outcome.summary.total > 0
    out = capsys.readouterr().out
    assert all(f"{r['sample_id']} " in out for r in rows)  # on_result saw every result as it was written
    assert f"exit code {outcome.exit_code}; results in {tmp_path / 'out'}" in out


def test_run_takes_a_recorded_sessions_suite(tmp_path: Path) -> None:
    """Before: AttributeError ('RecordedSessionsTarget' object has no attribute 'model') from the live runner."""
    outcome = evals_cli.run(ROOT / "suites" / "multi_agent.yaml", RunOptions(no_judge=True, output=tmp_path / "out"))
    assert outcome.exit_code == 1  # seven of the eight sessions are broken on purpose: the gate fails
    assert outcome.summary.total == 8 and outcome.summary.gate is not None
    assert (tmp_path / "out" / "summary.json").is_file()
    # what the CLI prints for the same suite comes from the same call
    result = run_cli("run", "suites/multi_agent.yaml", "--no-judge", "-q", "-o", str(tmp_path / "cli"))
    assert result.returncode == 1 and result.stdout.strip() == outcome.summary.gate.message


def test_arun_is_the_same_call_for_async_code(tmp_path: Path) -> None:
    options = RunOptions(no_judge=True, max_samples=1, output=tmp_path / "out")
    outcome = asyncio.run(evals_cli.arun(ROOT / "suites" / "multi_agent.yaml", options))
    assert outcome.exit_code == 0 and outcome.summary.total == 1  # only refund-clean, which passes


def test_run_takes_a_loaded_suite_and_calls_back(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"": [text("hi")]})
    suite = write_suite(tmp_path, [{"id": "a", "input": "x", "ground_truth": "hi"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    seen: list[SampleResult] = []
    outcome = evals_cli.run(evals_cli.load_suite(suite), RunOptions(output=tmp_path / "out"), on_result=seen.append)
    assert outcome.exit_code == 0 and [r.sample_id for r in seen] == ["a"]


@pytest.mark.parametrize(("options", "message"), [
    ({"record": "rec.jsonl", "replay": "rec.jsonl"}, "--record and --replay cannot be used together"),
    ({"resume": "results/x", "output": "out"}, "--resume continues the run in its own folder; drop -o/--output"),
    ({"retry_errors": True}, "--retry-errors only makes sense with --resume RUN"),
    ({"replay": "no/such/recording.jsonl"}, "no/such/recording.jsonl: recording not found (--replay)"),
    ({"concurrency": 0}, "concurrency: "),  # the field is named; the bound's wording is pydantic's
])
def test_run_options_refuse_what_the_cli_refuses(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunOptions(**options)
    (problem,) = caught.value.problems
    assert (problem.startswith(message) if message.endswith(": ") else problem == message)
    assert caught.value.exit_code == 2


def test_agent_options_on_a_sessions_suite_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        evals_cli.run(ROOT / "suites" / "multi_agent.yaml", RunOptions(model="gpt-x", output=tmp_path / "out"))
    assert "--model sets the agent model" in caught.value.problems[0]
    assert not (tmp_path / "out").exists()


def test_the_public_names_are_importable_and_lazy() -> None:
    for name in evals_cli.__all__:
        assert getattr(evals_cli, name) is not None, name


# --- the four interfaces outside code implements ------------------------------------------------------------

def test_the_four_interfaces_are_exported_and_documented() -> None:
    for name in ("Agent", "UserPlayer", "Effect", "Grader"):
        assert name in evals_cli.__all__
        interface = getattr(evals_cli, name)
        assert interface.__doc__ and f"evals_cli.{name}" in interface.__doc__, name
        assert f"`{name}`" in page("python-api.md"), name


def test_every_built_in_kind_satisfies_its_interface() -> None:
    from evals_cli.graders.base import GRADERS
    from evals_cli.models.effects import EFFECTS
    from evals_cli.simulation.replay_user import ReplayingUser
    from evals_cli.simulation.simulator import SimulatedUser
    from evals_cli.targets.base import TARGETS

    for kind in ("openai_chat", "openai_responses", "python"):
        assert issubclass(TARGETS[kind].impl, evals_cli.Agent), kind
    assert all(issubclass(entry.impl, evals_cli.Grader) for entry in GRADERS.entries())
    assert all(isinstance(entry.impl, evals_cli.Effect) for entry in EFFECTS.entries())
    assert issubclass(SimulatedUser, evals_cli.UserPlayer) and issubclass(ReplayingUser, evals_cli.UserPlayer)


class Tally:
    """An Effect written from scratch (not through the `effect` decorator): a plain class with the attributes
    and `apply`, registered under a name of its own."""

    arguments = ("path",)
    required = ("path",)
    mutating = True
    records = False
    summary = "counts the calls per path"

    def apply(self, world: Any, spec: Any, args: dict[str, Any]) -> tuple[str, Any]:
        from evals_cli.models.trajectory import EffectRecord as Done

        path = str(args[spec.path])
        before = world.files.get(path)
        world.files[path] = str(int(before or 0) + 1)
        return f"{path}: {world.files[path]}", Done(op=spec.op, target=path, changed=True, before=before,
                                                    after=world.files[path])


def test_an_effect_class_registered_from_outside_acts_on_the_world() -> None:
    from evals_cli.models.effects import EFFECTS
    from evals_cli.models.tools import ToolSpec
    from tests.helpers import SyncToolbox

    assert isinstance(Tally(), evals_cli.Effect)
    EFFECTS.register("zz.tally")(Tally())
    try:
        tool = ToolSpec.model_validate({"description": "tally", "parameters": {"path": "what"}, "effect": "zz.tally"})
        toolbox = SyncToolbox({"tally": tool})
        first = toolbox.call("c1", "tally", json.dumps({"path": "a"}))
        second = toolbox.call("c2", "tally", json.dumps({"path": "a"}))
    finally:
        EFFECTS.unregister("zz.tally")
    assert (first.result, second.result) == ("a: 1", "a: 2") and not second.is_error
    assert second.effect is not None and second.effect.before == "1" and second.effect.after == "2"


def test_a_python_agent_answers_one_turn_through_the_agent_interface(tmp_path: Path) -> None:
    from evals_cli.models.sample import Sample
    from evals_cli.models.tools import ToolSpec
    from evals_cli.models.trajectory import Turn
    from evals_cli.targets.base import TargetContext
    from evals_cli.targets.python_agent import PythonAgent, PythonTarget
    from evals_cli.tools.mock import MockToolbox

    (tmp_path / "agent.py").write_text(
        "def agent(sample, tools):\n"
        "    seen = [m.content for m in sample.messages or []]\n"
        "    return f\"{sample.input} after {seen}: \" + tools.read_file(path='.env')\n", encoding="utf-8")
    tools = {"read_file": ToolSpec.model_validate({"description": "read", "parameters": {"path": "p"},
                                                   "returns": "DB_PORT=5432"})}
    agent = PythonAgent(PythonTarget(callable="agent.py:agent"), TargetContext(tools=tools, base_dir=tmp_path))
    assert isinstance(agent, evals_cli.Agent)
    toolbox = MockToolbox(tools)
    conversation = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
                    {"role": "user", "content": "the port?"}]
    turn = Turn(user="the port?")
    answered = asyncio.run(agent.run_turn(Sample(id="s", input="hello"), 1, turn, conversation, toolbox,
                                          toolbox.schemas(), 5))
    assert answered is True
    [call_step, answer] = turn.steps
    assert call_step.tool_calls[0].id == "call_1_0" and call_step.tool_calls[0].result == "DB_PORT=5432"
    assert answer.content == "the port? after ['hello', 'hi']: DB_PORT=5432"
    assert conversation[-1] == {"role": "assistant", "content": answer.content}

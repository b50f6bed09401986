"""kind: python — the user's own agent function, loaded from the file the suite names, run against the mocked
tools. Agents are real files in a temp folder; the one that calls a model talks to the scripted server."""

from __future__ import annotations

import asyncio
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from evals_cli.endpoints.errors import classify
from evals_cli.endpoints.pool import ClientPool
from evals_cli.errors import ConfigError
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory
from evals_cli.runner.target_factory import build_target, judge_fallback, resolve_target_endpoint
from evals_cli.suite.spec import SuiteSpec
from evals_cli.targets.base import SampleFailed, TargetContext
from evals_cli.targets.python_agent import AgentError, PythonAgent, PythonTarget
from tests.helpers import TOOLS, read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, judge_score

SUITE_TOOLS = {**{name: ToolSpec.model_validate(t) for name, t in TOOLS.items()},
               "write_file": ToolSpec.model_validate({"description": "Write a file", "returns": "written",
                                                      "parameters": {"path": "File path", "content": "Text"}}),
               "search": ToolSpec.model_validate({"description": "Search", "returns": "no hits", "parameters": {
                   "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}})}


def make_agent(tmp_path: Path, code: str, *, system_prompt: str | None = "Be brief.", **spec: Any) -> PythonAgent:
    (tmp_path / "agent.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return PythonAgent(PythonTarget(callable="agent.py:run_agent", **spec),
                       TargetContext(SUITE_TOOLS, system_prompt=system_prompt, base_dir=tmp_path))


def run(agent: PythonAgent, **sample: Any) -> Trajectory:
    return asyncio.run(agent.run(Sample.model_validate({"id": "s1", **sample})))


def calls(trajectory: Trajectory) -> list[tuple[str, Any, str]]:
    return [(c.name, c.arguments, c.result) for c in trajectory.tool_calls]


def test_an_async_agent_calls_the_mocks_and_every_call_is_a_step(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        async def run_agent(sample, tools):
            env = tools.read_file(path=".env")
            listing = tools.call("list_files", {"directory": "."})
            return f"{sample.input}: {env.splitlines()[0]} / {listing.split()[0]}"
    """)
    trajectory = run(agent, input="host?")
    assert calls(trajectory) == [("read_file", {"path": ".env"}, "DB_HOST=localhost\nDB_PORT=5432"),
                                 ("list_files", {"directory": "."}, ".env\nsrc/")]
    steps = trajectory.turns[0].steps
    assert [len(s.tool_calls) for s in steps] == [1, 1, 0]  # one step per call, then the answer
    assert trajectory.final_answer == "host?: DB_HOST=localhost / .env"
    assert trajectory.stop_reason == "completed" and trajectory.turns[0].user == "host?"
    assert trajectory.prefilled == [{"role": "system", "content": "Be brief."}]


def test_a_sync_agent_runs_in_its_own_thread_and_never_blocks_the_loop(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        import threading
        RELEASE = threading.Event()
        def run_agent(sample, tools):
            # blocks until the event loop sets RELEASE: on the loop's own thread this would wait out the timeout
            released = RELEASE.wait(timeout=5)
            tools.list_files(directory=sample.id)
            return f"{threading.current_thread().name} released={released}"
    """)
    release = agent.fn.__globals__["RELEASE"]

    async def go() -> tuple[list[Trajectory], float]:
        started = time.perf_counter()
        runs = [asyncio.create_task(agent.run(Sample(id=f"s{i}", input="go"))) for i in range(3)]
        await asyncio.sleep(0.05)  # the loop is free while the three agents block
        release.set()
        return list(await asyncio.gather(*runs)), time.perf_counter() - started

    trajectories, elapsed = asyncio.run(go())
    assert elapsed < 2
    for i, trajectory in enumerate(trajectories):  # no crosstalk between concurrent samples
        assert trajectory.final_answer == f"evals-agent-s{i} released=True"
        assert calls(trajectory) == [("list_files", {"directory": f"s{i}"}, ".env\nsrc/")]
    assert threading.current_thread() is threading.main_thread()


def test_schemas_raw_json_and_errors_reach_the_agent_as_a_model_would_see_them(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        def run_agent(sample, tools):
            names = sorted(s["function"]["name"] for s in tools.schemas)
            for schema in tools.schemas:  # frameworks rewrite schemas in place: the agent has its own copy
                schema["function"]["parameters"]["properties"].clear()
            broken = tools.call("read_file", '{"path": ".en')      # a framework forwarding the model's raw JSON
            unknown = tools.call("delete_everything", {"really": True})
            mocked_error = tools.read_file(path="missing.txt")
            return "|".join([",".join(names), tools.system_prompt, broken, unknown, mocked_error])
    """)
    first = run(agent, input="x")
    names, prompt, broken, unknown, mocked_error = first.final_answer.split("|")
    assert names == "list_files,read_file,search,write_file" and prompt == "Be brief."
    assert "not valid JSON" in broken and "unknown tool 'delete_everything'" in unknown
    assert mocked_error == "Error: file not found"
    bad, rm, missing = first.tool_calls
    assert bad.raw_arguments == '{"path": ".en' and bad.arguments is None and bad.arguments_error
    assert rm.unknown_tool and rm.is_error and missing.is_error and not missing.unknown_tool
    assert run(agent, input="x").final_answer.startswith("list_files,read_file,search,write_file|")
    assert SUITE_TOOLS["search"].json_schema()["properties"] == {"q": {"type": "string"}}


def test_nothing_real_is_ever_executed(tmp_path: Path) -> None:
    real = tmp_path / "precious.txt"
    real.write_text("real contents", encoding="utf-8")
    agent = make_agent(tmp_path, f"""
        def run_agent(sample, tools):
            wrote = tools.write_file(path={str(real)!r}, content="overwritten")
            read = tools.read_file(path={str(real)!r})
            return wrote + " / " + read
    """)
    trajectory = run(agent, input="clobber it")
    assert trajectory.final_answer == "written / Error: file not found"  # the mocks answered, not the disk
    assert real.read_text(encoding="utf-8") == "real contents"
    assert [c.name for c in trajectory.tool_calls] == ["write_file", "read_file"]


@pytest.mark.parametrize("style", ["async def", "def"])
def test_an_exception_fails_the_sample_with_its_partial_trajectory(tmp_path: Path, style: str) -> None:
    agent = make_agent(tmp_path, f"""
        {style} run_agent(sample, tools):
            tools.list_files(directory=".")
            raise ValueError("the agent broke")
    """)
    with pytest.raises(SampleFailed) as info:
        run(agent, input="x")
    cause = info.value.cause
    assert isinstance(cause, AgentError)
    assert str(cause) == "agent.py:run_agent raised ValueError: the agent broke (agent.py line 4)"
    assert info.value.trajectory.stop_reason == "error"
    assert [c.name for c in info.value.trajectory.tool_calls] == ["list_files"]
    found = classify(cause, resolve_target_endpoint(agent.spec))
    assert found.category in {"internal", "target"} and not found.fatal
    assert "the agent broke" in found.message


def test_calling_a_tool_that_does_not_exist_by_attribute_is_the_agents_bug(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        def run_agent(sample, tools):
            return tools.delete_everything()
    """)
    with pytest.raises(SampleFailed) as info:
        run(agent, input="x")
    message = str(info.value.cause)
    assert "AttributeError: no mocked tool 'delete_everything'" in message and "tools.call(name" in message


def test_a_model_error_inside_the_agent_keeps_its_sdk_category(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "slow down"}}, status=429)
    agent = make_agent(tmp_path, f"""
        from openai import AsyncOpenAI
        async def run_agent(sample, tools):
            client = AsyncOpenAI(base_url={server.url!r}, api_key="sk-test", max_retries=0)
            reply = await client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
            return reply.choices[0].message.content
    """)
    with pytest.raises(SampleFailed) as info:
        run(agent, input="x")
    found = classify(info.value.cause, resolve_target_endpoint(agent.spec))
    assert found.category == "rate_limit" and "python agent agent.py:run_agent" in found.message


@pytest.mark.parametrize(("returns", "says"), [
    ("None", "returned NoneType; return the final answer as a str"),
    ("{'answer': 'x'}", "returned dict"),
    ("['a', 'b', 'c']", "returned 3 answers for 1 user turn(s)"),
])
def test_an_answer_of_the_wrong_shape_fails_the_sample(tmp_path: Path, returns: str, says: str) -> None:
    agent = make_agent(tmp_path, f"""
        def run_agent(sample, tools):
            tools.list_files(directory=".")
            return {returns}
    """)
    with pytest.raises(SampleFailed) as info:
        run(agent, input="x")
    assert says in str(info.value.cause) and len(info.value.trajectory.tool_calls) == 1


def test_per_turn_samples_get_one_answer_per_turn_and_calls_where_the_agent_was(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        def run_agent(sample, tools):
            answers = []
            for i, question in enumerate(sample.input):
                if i:
                    tools.next_turn()
                answers.append(tools.read_file(path=".env").splitlines()[i])
            return answers
    """)
    trajectory = run(agent, input=["host?", "port?"], ground_truth=["localhost", "5432"])
    assert [t.user for t in trajectory.turns] == ["host?", "port?"]
    assert [t.answer for t in trajectory.turns] == ["DB_HOST=localhost", "DB_PORT=5432"]
    assert [len(t.tool_calls) for t in trajectory.turns] == [1, 1]
    single = run(agent, input=["host?"])  # a str answer (or one-element list) answers the last turn
    assert single.final_answer == "DB_HOST=localhost"


def test_next_turn_past_the_last_turn_fails_and_a_str_answers_the_last_turn(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        def run_agent(sample, tools):
            tools.list_files(directory=".")
            tools.next_turn()
            tools.next_turn()  # past the last user turn: the agent's bug
    """)
    with pytest.raises(SampleFailed) as info:
        run(agent, input=["a", "b"])
    assert "next_turn(): the sample has 2 user turn(s)" in str(info.value.cause)
    answer_last = make_agent(tmp_path, "def run_agent(sample, tools):\n    return 'final'\n")
    trajectory = run(answer_last, input=["a", "b"])
    assert [t.answer for t in trajectory.turns] == ["", "final"]


def test_the_step_bound_cuts_a_looping_agent_off(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        def run_agent(sample, tools):
            while True:
                tools.list_files(directory=".")
    """, max_steps=4)
    trajectory = run(agent, input="loop")
    assert trajectory.stop_reason == "max_steps" and len(trajectory.tool_calls) == 4
    assert len(run(agent, input="loop", max_steps=2).tool_calls) == 2  # the sample's own bound wins
    stubborn = make_agent(tmp_path, """
        from evals_cli.targets.python_agent import StepLimitReached
        async def run_agent(sample, tools):
            try:
                while True:
                    tools.list_files(directory=".")
            except StepLimitReached:
                return "gave up"
    """, max_steps=3)
    trajectory = run(stubborn, input="loop")
    assert trajectory.stop_reason == "max_steps" and trajectory.final_answer == "gave up"


def test_latency_per_step_is_the_agents_own_time(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        import time
        def run_agent(sample, tools):
            time.sleep(0.05)
            tools.list_files(directory=".")
            time.sleep(0.05)
            return "done"
    """)
    first, answer = run(agent, input="x").turns[0].steps
    assert first.latency_s >= 0.05 and answer.latency_s >= 0.05 and answer.started >= first.started > 0


def test_calls_after_the_sample_timed_out_are_refused_not_recorded(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, """
        import time
        SEEN = []
        def run_agent(sample, tools):
            try:
                time.sleep(0.3)
            except BaseException as exc:  # stopped at the timeout (custom_code.Abandoned); this one goes on
                SEEN.append(type(exc).__name__)
            try:
                tools.list_files(directory=".")
            except RuntimeError as exc:
                SEEN.append(str(exc))
            return "too late"
    """)
    trajectory = Trajectory()

    async def go() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.run(Sample(id="s1", input="x"), trajectory), timeout=0.05)
        await asyncio.sleep(0.6)

    asyncio.run(go())
    # a thread waiting in C (the sleep) is not interrupted (custom_code._Worker.stop: an exception left pending on
    # it would stall other threads); it goes on when it wakes, and its tool call is refused, not recorded
    assert trajectory.tool_calls == [] and "the sample is over" in agent.fn.__globals__["SEEN"][-1]


@pytest.mark.parametrize(("code", "says"), [
    ("def run_agent(sample):\n    return ''\n", "must take two arguments (sample, tools); its signature is "
                                               "run_agent(sample)"),
    ("def run_agent(sample, tools, extra):\n    return ''\n", "its signature is run_agent(sample, tools, extra)"),
    ("def other(sample, tools):\n    return ''\n", "agent.py has no function 'run_agent'; it defines other"),
    ("run_agent = 42\n", "agent.py:run_agent is not callable (it is int)"),
    ("import no_such_module_here\n", "importing agent.py failed: ModuleNotFoundError"),
    ("raise SystemExit(3)\n", "importing agent.py failed: it raised SystemExit(3) at import"),
])
def test_load_errors_are_config_errors_before_any_sample_runs(tmp_path: Path, code: str, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(tmp_path, code)
    assert says in str(info.value) and str(info.value).startswith("target.callable: ")


def test_the_file_is_looked_up_relative_to_the_suite_and_must_exist(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.py").write_text("def go(sample, tools, *, retries=2):\n    return 'ok'\n")
    agent = PythonAgent(PythonTarget(callable="agents/mine.py:go"), TargetContext(SUITE_TOOLS, base_dir=tmp_path))
    assert run(agent, input="x").final_answer == "ok"
    with pytest.raises(ConfigError, match="target.callable: agents/missing.py not found"):
        PythonAgent(PythonTarget(callable="agents/missing.py:go"), TargetContext(SUITE_TOOLS, base_dir=tmp_path))
    for bad in ("agents/mine.py", "agents/mine.txt:go", "agents/mine.py:not-a-name"):
        with pytest.raises(ValidationError):
            PythonTarget(callable=bad)


def test_the_factory_builds_python_targets_without_a_model(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def run_agent(sample, tools):\n    return 'ok'\n")
    spec = PythonTarget(callable="agent.py:run_agent", system_prompt="p")
    suite = SuiteSpec.model_construct(target=spec, tools=SUITE_TOOLS)
    suite._base_dir = tmp_path
    endpoint = resolve_target_endpoint(spec, {"model": None, "base_url": None})  # no EVAL_AGENT_MODEL needed
    assert endpoint.model == "agent.py:run_agent" and judge_fallback(spec, endpoint) is None
    target = build_target(suite, endpoint, ClientPool(), "p")
    assert isinstance(target, PythonAgent) and run(target, input="x").final_answer == "ok"
    (tmp_path / "agent.py").write_text("def run_agent(sample):\n    return 'ok'\n")
    with pytest.raises(ConfigError, match="must take two arguments"):
        build_target(suite, endpoint, ClientPool(), "p")


# --- through `evals run`, once SuiteSpec.target is evals_cli.suite.spec.TargetSpec ----------------------------

def suite_accepts(target: dict[str, Any]) -> bool:
    try:
        SuiteSpec.model_validate({"name": "n", "dataset": "d.jsonl", "target": target,
                                  "graders": {"a": {"kind": "tool", "function": "contains"}}})
    except ValidationError:
        return False
    return True


needs_union = pytest.mark.skipif(not suite_accepts({"kind": "python", "callable": "a.py:f"}),
                                 reason="needs SuiteSpec.target = evals_cli.suite.spec.TargetSpec")


def python_suite(tmp_path: Path, rows: list[dict[str, Any]], callable_ref: str, **overrides: Any) -> Path:
    """write_suite's suite with a python target in place of its openai_chat one."""
    suite = write_suite(tmp_path, rows, **overrides)
    data = yaml.safe_load(suite.read_text(encoding="utf-8"))
    data["target"] = {"kind": "python", "callable": callable_ref}
    suite.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return suite

AGENT = """
def run_agent(sample, tools):
    if "host" in sample.input:
        return tools.read_file(path=".env").splitlines()[0]
    if "crash" in sample.input:
        raise RuntimeError("agent crashed")
    return "4"
"""


@needs_union
def test_evals_run_grades_a_python_agent(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "agent.py").write_text(AGENT, encoding="utf-8")
    rows = [{"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
            {"id": "math", "input": "2+2?", "ground_truth": "4"}, {"id": "crash", "input": "crash now"}]
    suite = python_suite(tmp_path, rows, "agents/agent.py:run_agent")
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--max-error-rate", "0.5")
    assert result.returncode == 0, result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["host"]["passed"] and lines["math"]["passed"]
    assert [c["name"] for t in lines["host"]["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]] \
        == ["read_file"]
    assert lines["crash"]["error"]["category"] in {"internal", "target"}
    assert "agent crashed" in lines["crash"]["error"]["message"]


@needs_union
def test_evals_run_refuses_an_agent_with_the_wrong_signature(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def run_agent(sample):\n    return ''\n", encoding="utf-8")
    suite = python_suite(tmp_path, [{"id": "a", "input": "x"}], "agent.py:run_agent")
    for command in (["run", str(suite)], ["validate", str(suite)]):
        result = run_cli(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "must take two arguments (sample, tools)" in result.stdout + result.stderr
        assert "Traceback" not in result.stderr


@needs_union
def test_a_python_agents_judge_is_configured_not_borrowed_from_the_agent(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    graders = {"answer": {"kind": "tool", "function": "contains"},
               "quality": {"kind": "model_judge", "prompt": "Grade {{ submission }} against {{ ground_truth }}."}}
    suite = python_suite(tmp_path, [{"id": "math", "input": "2+2?", "ground_truth": "4"}], "agent.py:run_agent",
                         graders=graders)
    unset = run_cli("run", str(suite), "-o", str(tmp_path / "unset"))
    assert unset.returncode == 2 and "judge: no model set" in unset.stderr  # the agent has no model to lend
    server.script = agent_script({}, judge=lambda body: judge_score(9))
    judged = run_cli("run", str(suite), "-o", str(tmp_path / "judged"),
                     env={"EVAL_JUDGE_BASE_URL": server.url, "EVAL_JUDGE_MODEL": "judge-model"})
    assert judged.returncode == 0, judged.stderr
    [line] = read_jsonl(tmp_path / "judged" / "results.jsonl")
    assert line["grades"]["quality"]["score"] == 0.9 and len(server.judge_requests()) == 1


@pytest.mark.parametrize("answer,reason", [
    ('""', "empty_answer"),
    ('\'{"name": "read_file", "arguments": {"path": ".env"}}\'', "unparsed_tool_call"),
    ('"DB_HOST is localhost" + chr(0xD800)', "completed"),
])
def test_a_python_agent_gets_the_same_stop_reasons_as_a_model(tmp_path: Path, answer: str, reason: str) -> None:
    """An empty answer, or a tool call returned as text, is no completed turn for a python agent either; a lone
    surrogate in its answer is replaced, so the results line can be written."""
    agent = make_agent(tmp_path, f"""
        def run_agent(sample, tools):
            return {answer}
    """)
    trajectory = run(agent, input="host?")
    assert trajectory.stop_reason == reason
    trajectory.model_dump_json()  # would raise on an unpaired surrogate


@needs_union
def test_a_python_agent_run_with_no_judge_needs_no_judge_model(tmp_path: Path, server: ScriptedServer) -> None:
    """--no-judge calls no judge, so a suite with a model_judge grader and no judge model set anywhere runs: its
    other graders grade, the judge grader is left out, and no request reaches any server."""
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    graders = {"answer": {"kind": "tool", "function": "contains"},
               "quality": {"kind": "model_judge", "prompt": "Grade {{ submission }} against {{ ground_truth }}."}}
    suite = python_suite(tmp_path, [{"id": "math", "input": "2+2?", "ground_truth": "4"}], "agent.py:run_agent",
                         graders=graders)
    result = run_cli("run", str(suite), "--no-judge", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "judge: no model set" not in result.stderr
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert set(line["grades"]) == {"answer"} and line["passed"] is True
    assert server.requests == []


@needs_union
def test_a_python_agents_judge_can_be_named_on_the_command_line(tmp_path: Path, server: ScriptedServer) -> None:
    """--judge-model and --judge-base-url set the judge a python agent's suite leaves unset (the error said to)."""
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    graders = {"quality": {"kind": "model_judge", "prompt": "Grade {{ submission }} against {{ ground_truth }}."}}
    suite = python_suite(tmp_path, [{"id": "math", "input": "2+2?", "ground_truth": "4"}], "agent.py:run_agent",
                         graders=graders)
    server.script = agent_script({}, judge=lambda body: judge_score(8))
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--judge-model", "cli-judge",
                     "--judge-base-url", server.url)
    assert result.returncode == 0, result.stdout + result.stderr
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["quality"]["score"] == 0.8
    assert [r["body"]["model"] for r in server.judge_requests()] == ["cli-judge"]

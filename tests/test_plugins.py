"""Plug-ins: kinds registered from outside evals-cli (an installed package's entry point, or code that registers
after `import evals_cli`) are kinds of every suite loaded afterwards, and a plug-in that cannot be imported is
exit 2 naming its entry point and package."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
import yaml

import evals_cli
from evals_cli.errors import ConfigError
from tests.helpers import ROOT, read_jsonl, run_cli_process, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text


@contextlib.contextmanager
def late_grader_kind(kind: str) -> Iterator[None]:
    """A grader kind registered from a test, long after evals_cli was imported."""
    from evals_cli.graders.base import GRADERS, GradeContext, Grader
    from evals_cli.models.grader_specs.base import GraderBase
    from evals_cli.models.results import Grade

    class LateSpec(GraderBase):
        """Registered late."""

        kind: Literal["zz_late"] = "zz_late"
        word: str

    @GRADERS.register(kind, spec=LateSpec)
    class Late(Grader[LateSpec]):
        async def grade(self, ctx: GradeContext) -> Grade:
            return Grade(score=1.0, rationale=self.spec.word)

    try:
        yield
    finally:
        GRADERS.unregister(kind)


def _suite_using(folder: Path, kind: str) -> Path:
    folder.mkdir(exist_ok=True)
    return write_suite(folder, [{"id": "s1", "input": "hi"}], graders={"late": {"kind": kind, "word": "yes"}})


def test_a_grader_kind_registered_after_import_and_after_a_first_suite_counts(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    evals_cli.load_suite(write_suite(first, [{"id": "s1", "input": "hi"}]))  # the unions are built by now
    with pytest.raises(ConfigError, match="zz_late"):
        evals_cli.load_suite(_suite_using(tmp_path / "before", "zz_late"))
    with late_grader_kind("zz_late"):
        suite = evals_cli.load_suite(_suite_using(tmp_path / "during", "zz_late"))
        assert suite.graders["late"].kind == "zz_late"
        assert suite.graders["late"].word == "yes"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="zz_late"):  # unregistered: unknown again
        evals_cli.load_suite(_suite_using(tmp_path / "after", "zz_late"))


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "plugin_pkg"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/fixtures/plugin_pkg installed with pip (offline, no dependencies, the build backend of this
    environment) into a folder of its own, which a subprocess gets on its PYTHONPATH: this process and the
    environment stay as they were. Built from a copy, so the build leaves nothing in the repository."""
    import shutil

    source = tmp_path_factory.mktemp("plugin_src") / "plugin_pkg"
    shutil.copytree(FIXTURE, source)
    site = tmp_path_factory.mktemp("plugin_site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--disable-pip-version-check", "--target", str(site), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return site


def _with(site: Path, plugins: str = "") -> dict[str, str]:
    """A subprocess's environment with `site` on its path and `plugins` chosen (the tests run with EVALS_PLUGINS
    empty: no installed plug-in loads unless a test names it)."""
    return {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "EVALS_PLUGINS": plugins}


PLUGIN_TOOLS = {"bump": {"description": "Count one more", "parameters": {"name": "What to count"},
                         "effect": {"acme.count": "counters", "key": "name"}}}


def _plugin_suite(tmp_path: Path, base_url: str) -> Path:
    rows = [{"id": "apples", "input": "count apples", "user": {"goal": "count the apples"}}]
    return write_suite(
        tmp_path, rows, base_url=base_url, tools=PLUGIN_TOOLS,
        target={"kind": "acme_chat", "house_rule": "HOUSE RULE: capitals"},
        environment={"records": {"counters": [{"id": "apples", "count": 1}]}},
        user_simulator={"player": "acme_polite"},
        graders={"loud": {"kind": "acme_shout", "min_length": 3},
                 "counted": {"kind": "tool", "function": "acme_evals.checks:counted",
                             "extractor": "acme_evals.checks:all_answers"}},
        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0})


@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_an_installed_plugin_adds_each_kind_and_a_suite_uses_them_end_to_end(
        plugin_site: Path, server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"count apples": [call("bump", {"name": "apples"}), text("COUNTED APPLES")],
                                  "thanks": [text("GOODBYE FRIEND")]})
    suite = _plugin_suite(tmp_path, server.url)
    out = tmp_path / "out"
    ran = run_cli_process("run", str(suite), "-o", str(out), "--export", f"acme_csv={tmp_path / 'scores.csv'}",
                          env=_with(plugin_site, "acme"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [result] = read_jsonl(next(out.rglob("results.jsonl")))
    assert result["grades"]["loud"]["score"] == 1.0  # the plug-in's grader kind graded the last answer
    assert result["grades"]["counted"]["score"] == 1.0  # module:attr grader over a module:attr extractor
    turns = result["trajectory"]["turns"]
    assert [t["user"] for t in turns] == ["count apples", "thanks, bye"]  # the plug-in's user player spoke
    [bump] = turns[0]["steps"][0]["tool_calls"]
    assert bump["result"] == "apples count is now 2"  # the plug-in's effect changed the world
    assert bump["effect"]["after"] == {"id": "apples", "count": 2}
    first = server.agent_requests()[0]["body"]["messages"][0]
    assert first == {"role": "system", "content": "HOUSE RULE: capitals"}  # the plug-in's target kind ran
    assert (tmp_path / "scores.csv").read_text().splitlines() == ["sample_id,repeat,score", "apples,0,1.0"]

    listed = run_cli_process("list", env=_with(plugin_site, "acme"))
    assert listed.returncode == 0, listed.stderr
    for kind in ("acme_shout", "acme.count", "player: acme_polite", "acme_chat"):
        lines = listed.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(kind))
        entry = "".join(" ".join(lines[at:at + 3]).split())  # an entry's first line may wrap (at a hyphen too)
        assert "(plug-infromevals-acme-plugin)" in entry, entry

    schema = run_cli_process("schema", env=_with(plugin_site, "acme"))  # an editor completes the plug-in's kinds
    assert schema.returncode == 0, schema.stderr
    for kind in ('"acme_shout"', '"acme_chat"', '"acme_echo"', '"acme.count"'):
        assert kind in schema.stdout, kind
    plain = run_cli_process("schema", env=_with(plugin_site, ""))
    assert plain.returncode == 0 and '"acme_shout"' not in plain.stdout


def test_a_plugin_that_fails_to_import_is_exit_2_naming_it_and_its_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evals_cli]\nbroken = broken_plugin.kinds\n")
    (site / "broken_plugin").mkdir()
    (site / "broken_plugin" / "__init__.py").write_text("")
    (site / "broken_plugin" / "kinds.py").write_text("import no_such_dependency_here\n")
    suite = write_suite(tmp_path, [{"id": "s1", "input": "hi"}])
    for args in (("validate", str(suite)), ("list", "graders")):
        done = run_cli_process(*args, env=_with(site, "broken"))
        assert done.returncode == 2, done.stdout + done.stderr
        said = done.stdout + done.stderr
        assert "plug-in broken" in said and "broken_plugin.kinds" in said and "broken-plugin" in said, said
        assert "no_such_dependency_here" in said and "Traceback" not in said


def test_a_plugin_that_exits_at_import_is_exit_2_not_the_end_of_the_command(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "exiting_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evals_cli]\nexits = exiting_plugin\n")
    (site / "exiting_plugin.py").write_text("import sys\nsys.exit(0)\n")
    done = run_cli_process("list", "graders", env=_with(site, "exits"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "exiting-plugin" in done.stdout + done.stderr and "sys.exit(0)" in done.stdout + done.stderr


# --- module:attr wherever file.py:attr is accepted ---------------------------------------------------------

def _package(site: Path, name: str, code: str) -> None:
    """An installed-looking package `name` (a folder on the subprocess's PYTHONPATH) whose `checks` module holds
    `code`; importing it leaves imported.txt beside the site, so a test sees whether it ran."""
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text("")
    marker = site.parent / "imported.txt"
    (site / name / "checks.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + textwrap.dedent(code))


GRADE_CODE = '''
import evals_cli

@evals_cli.grader
def said_hi(sample, submission):
    return "hi" in submission.lower()

def answer(trajectory, config):
    return trajectory.turns[-1].answer
'''


@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_validate_finds_an_installed_module_without_importing_it_unless_asked(
        server: ScriptedServer, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _package(site, "zz_acme_checks", GRADE_CODE)
    suite = write_suite(tmp_path, [{"id": "s1", "input": "hi"}], base_url=server.url, graders={
        "hi": {"kind": "tool", "function": "zz_acme_checks.checks:said_hi",
               "extractor": "zz_acme_checks.checks:answer"}})
    checked = run_cli_process("validate", str(suite), env=_with(site))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (tmp_path / "imported.txt").exists()  # found and read, never run
    checked = run_cli_process("validate", str(suite), "--import-code", env=_with(site))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (tmp_path / "imported.txt").read_text() == "ran"

    server.script = agent_script({"hi": [text("Hi there")]})
    ran = run_cli_process("run", str(suite), "-o", str(tmp_path / "out"), env=_with(site))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [result] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert result["grades"]["hi"]["score"] == 1.0


@pytest.mark.parametrize(("ref", "says"), [
    ("zz_not_installed_anywhere:fn", "no module 'zz_not_installed_anywhere' is installed"),
    ("zz_acme_checks.missing:fn", "no module 'zz_acme_checks.missing' is installed"),
])
def test_a_module_that_is_not_installed_is_exit_2_naming_it(tmp_path: Path, ref: str, says: str) -> None:
    site = tmp_path / "site"
    _package(site, "zz_acme_checks", GRADE_CODE)
    suite = write_suite(tmp_path, [{"id": "s1", "input": "hi"}],
                        graders={"hi": {"kind": "tool", "function": ref}})
    for extra in ((), ("--import-code",)):
        checked = run_cli_process("validate", str(suite), *extra, env=_with(site))
        said = checked.stdout + checked.stderr
        assert checked.returncode == 2 and says in said and "graders.hi" in said and "Traceback" not in said, said
    assert not (tmp_path / "imported.txt").exists()  # a missing submodule never runs its package


def test_module_code_runs_under_the_custom_code_guard(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _package(site, "zz_acme_agents", '''
        import sys

        def agent(sample, tools):
            if sample.input == "exit":
                sys.exit(0)
            return "answer"
    ''')
    rows = [{"id": "s0-exit", "input": "exit", "ground_truth": "answer"},
            {"id": "s1-fine", "input": "fine", "ground_truth": "answer"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "module-agent", "dataset": "data.jsonl",
                                     "target": {"kind": "python", "callable": "zz_acme_agents.checks:agent"},
                                     "graders": {"answer": {"kind": "match", "function": "contains"}}}))
    out = tmp_path / "out"
    done = run_cli_process("run", str(suite), "-o", str(out), env=_with(site))
    summary = json.loads((out / "summary.json").read_text())  # the run finished, with its summary
    assert done.returncode == 3 and summary["errored"] == 1, done.stdout + done.stderr  # not 0: no verdict
    results = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    error = results["s0-exit"]["error"]
    assert error["category"] == "custom_code" and "called sys.exit(0)" in error["message"], error
    assert results["s0-exit"]["score"] is None and results["s1-fine"]["passed"] is True


# --- the public contract: evals_cli.plugin -----------------------------------------------------------------

def _evals_imports(source: str) -> set[str]:
    """Every evals_cli module a piece of Python source imports (module level or inside a function)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "evals_cli"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "evals_cli":
            found.add(node.module or "")
    return found


def test_the_example_package_and_the_docs_import_only_the_public_plugin_module() -> None:
    sources = {str(path): path.read_text(encoding="utf-8") for path in sorted(FIXTURE.rglob("*.py"))}
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    blocks = page.split("```python\n")[1:]
    assert blocks, "docs/plugins.md shows the example's code"
    sources.update({f"docs/plugins.md block {i}": block.split("```")[0] for i, block in enumerate(blocks)})
    imported = {where: _evals_imports(source) for where, source in sources.items()}
    assert {where: found - {"evals_cli.plugin"} for where, found in imported.items()} == \
        {where: set() for where in sources}
    assert imported[str(FIXTURE / "acme_evals" / "plugin.py")] == {"evals_cli.plugin"}


def test_every_public_plugin_name_is_there_and_the_contract_covers_each_family() -> None:
    import evals_cli.plugin as plugin

    assert len(set(plugin.__all__)) == len(plugin.__all__)
    assert all(hasattr(plugin, name) for name in plugin.__all__)
    for needed in ("Target", "TargetBase", "Grader", "GraderBase", "UserPlayer", "Effect", "EffectRecord", "effect",
                   "Toolbox", "Sample", "Trajectory", "Turn", "ToolCall", "Grade", "GRADERS", "TARGETS",
                   "USER_PLAYERS", "EXPORTERS", "Episode"):
        assert needed in plugin.__all__, needed


def test_a_target_kind_with_no_model_needs_no_endpoint_and_no_max_steps(tmp_path: Path) -> None:
    """A spec extending TargetBase and a class implementing one turn: validate and run, with no model anywhere."""
    from evals_cli.plugin import TARGETS, Step, StopReason, Target, TargetBase, Toolbox, Trajectory, Turn

    class QuietSpec(TargetBase):
        """Answers 'ok'."""

        kind: Literal["zz_quiet"] = "zz_quiet"

    @TARGETS.register("zz_quiet", spec=QuietSpec)
    class Quiet(Target):
        def start(self, sample: evals_cli.Sample, trajectory: Trajectory) -> list[dict[str, str]]:
            return []

        async def run_turn(self, sample: evals_cli.Sample, turn_index: int, turn: Turn, conversation: list,
                           toolbox: Toolbox, schemas: list, max_steps: int) -> bool:
            turn.steps.append(Step(content=f"ok after {max_steps} steps at most"))
            return True

        def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
            return "completed"

    try:
        suite = tmp_path / "suite.yaml"
        (tmp_path / "data.jsonl").write_text('{"id": "s1", "input": "hi", "ground_truth": "ok"}\n')
        suite.write_text(yaml.safe_dump({"name": "quiet", "dataset": "data.jsonl", "target": {"kind": "zz_quiet"},
                                         "graders": {"ok": {"kind": "match", "function": "contains"}}}))
        from evals_cli.runner.plan import validate_suite

        assert validate_suite(suite).problems == []
        outcome = evals_cli.run(suite, evals_cli.RunOptions(output=tmp_path / "out"))
        [result] = read_jsonl(tmp_path / "out" / "results.jsonl")
        assert outcome.summary.passed == 1 and result["error"] is None, result
        assert result["trajectory"]["turns"][0]["steps"][0]["content"] == "ok after 20 steps at most"
        with pytest.raises(ConfigError, match="calls no model"):  # no model behind it: several models do not apply
            evals_cli.run(suite, evals_cli.RunOptions(output=tmp_path / "matrix", models=["a", "b"]))
    finally:
        TARGETS.unregister("zz_quiet")


def _dist(site: Path, dist: str, entry: str, module: str, code: str) -> None:
    """An installed-looking distribution `dist` in `site` whose entry point `entry` names `module` (one file)."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[evals_cli]\n{entry} = {module}\n")
    (site / f"{module}.py").write_text(textwrap.dedent(code))


@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_evals_plugins_switches_an_installed_plugin_off_and_names_the_ones_to_load(
        plugin_site: Path, tmp_path: Path) -> None:
    listed = run_cli_process("list", "graders", env=_with(plugin_site, ""))  # empty: none loads
    assert listed.returncode == 0 and "acme_shout" not in listed.stdout, listed.stdout + listed.stderr
    suite = write_suite(tmp_path, [{"id": "s1", "input": "hi"}], graders={"loud": {"kind": "acme_shout"}})
    checked = run_cli_process("validate", str(suite), env=_with(plugin_site, ""))
    assert checked.returncode == 2 and "acme_shout" in checked.stderr, checked.stdout + checked.stderr
    for chosen in ("acme", "evals-acme-plugin", " acme , "):  # the entry point's name or its package's
        listed = run_cli_process("list", "graders", env=_with(plugin_site, chosen))
        assert listed.returncode == 0 and "acme_shout" in listed.stdout, chosen
    env = _with(plugin_site)
    env.pop("EVALS_PLUGINS")
    unset = {k: v for k, v in os.environ.items() if k != "EVALS_PLUGINS"}
    done = subprocess.run([sys.executable, "-m", "evals_cli", "list", "graders"], capture_output=True, text=True,
                          env={**unset, **env, "NO_COLOR": "1"}, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and "acme_shout" in done.stdout, done.stderr  # unset: every installed one
    wrong = run_cli_process("list", "graders", env=_with(plugin_site, "acme,acmee"))
    said = wrong.stdout + wrong.stderr
    assert wrong.returncode == 2 and "EVALS_PLUGINS names 'acmee'" in said and "installed plug-ins: acme" in said
    assert "Traceback" not in said


def test_a_plugin_whose_import_hangs_is_exit_2_naming_it_within_the_bound(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "hanging-plugin", "hangs", "hanging_plugin", "import threading\nthreading.Event().wait()\n")
    suite = write_suite(tmp_path, [{"id": "s1", "input": "hi"}])
    for args in (("validate", str(suite)), ("list", "graders")):
        done = run_cli_process(*args, env={**_with(site, "hangs"), "EVALS_PLUGIN_IMPORT_TIMEOUT": "0.5"},
                               timeout=60)
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "plug-in hangs" in said and "hanging-plugin" in said and "within 0.5s" in said, said
        assert "EVALS_PLUGIN_IMPORT_TIMEOUT" in said and "Traceback" not in said


BAD_KINDS = '''
from typing import Literal

from evals_cli.plugin import GRADERS, TARGETS, Grader, GraderBase, Target, TargetBase


class HalfSpec(TargetBase):
    kind: Literal["zz_half"] = "zz_half"


@TARGETS.register("zz_half", spec=HalfSpec)
class Half(Target):
    """Implements no agent turn."""


class RaisingSpec(GraderBase):
    kind: Literal["zz_raising"] = "zz_raising"


@GRADERS.register("zz_raising", spec=RaisingSpec)
class Raising(Grader[RaisingSpec]):
    def __init__(self, name, spec, ctx):
        raise RuntimeError("cannot find my model file")

    async def grade(self, ctx):
        raise AssertionError("never built")
'''


def test_validate_builds_every_kind_and_a_plugin_kind_that_would_fail_is_exit_2_naming_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "half-plugin", "half", "half_plugin", BAD_KINDS)
    suite = write_suite(tmp_path, [{"id": "s1", "input": "hi"}], graders={"broken": {"kind": "zz_raising"}})
    data = yaml.safe_load(suite.read_text())
    suite.write_text(yaml.safe_dump({**data, "target": {"kind": "zz_half"}}))  # no model, no max_steps
    for command in ("validate", "run"):
        done = run_cli_process(command, str(suite), *(("-o", str(tmp_path / "out")) if command == "run" else ()),
                               env=_with(site, "half"))
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "target kind 'zz_half' (plug-in from half-plugin)" in said and "run_turn (or run)" in said, said
        assert "graders.broken: grader kind 'zz_raising' (plug-in from half-plugin) raised RuntimeError" in said
        assert "cannot find my model file" in said and "internal error" not in said and "Traceback" not in said


def test_a_kind_name_with_control_characters_is_refused_and_list_shows_them_spelled_out(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "loud-plugin", "loud", "loud_plugin", '''
        from evals_cli.plugin import USER_PLAYERS

        @USER_PLAYERS.register("loud")
        def loud(settings):
            """Says \\x1b[2Jhello\\x07 [bold red]in colour[/] \\x1b]8;;http://x/\\x1b\\\\link"""
            return lambda sample, repeat: None
    ''')
    listed = run_cli_process("list", "users", env=_with(site, "loud"))
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
    assert "Says \\x1b[2Jhello\\x07 [bold red]in colour[/]" in listed.stdout  # spelled out, markup as written

    evil = tmp_path / "evil"
    _dist(evil, "evil-plugin", "evil", "evil_plugin", '''
        from evals_cli.plugin import USER_PLAYERS

        USER_PLAYERS.register("x\\x1b[2J")(lambda settings: None)
    ''')
    done = run_cli_process("list", "users", env=_with(evil, "evil"))
    said = done.stdout + done.stderr
    assert done.returncode == 2 and "evil-plugin" in said and "no control characters" in said, said
    assert "\x1b" not in said


def _echo_suite(tmp_path: Path, tool: str | None) -> Path:
    suite = _plugin_suite(tmp_path, "http://127.0.0.1:9/v1")
    data = yaml.safe_load(suite.read_text())
    data["target"] = {"kind": "acme_echo", **({"tool": tool} if tool else {})}  # no model, no endpoint, no max_steps
    data["graders"] = {"loud": {"kind": "acme_shout", "min_length": 3}}
    suite.write_text(yaml.safe_dump(data))
    return suite


def test_the_example_target_kind_with_no_model_validates_and_runs_without_an_endpoint(
        plugin_site: Path, tmp_path: Path) -> None:
    suite = _echo_suite(tmp_path, None)
    checked = run_cli_process("validate", str(suite), env=_with(plugin_site, "acme"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = run_cli_process("run", str(suite), "-o", str(tmp_path / "out"), env=_with(plugin_site, "acme"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [result] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert result["trajectory"]["turns"][0]["steps"][-1]["content"] == "COUNT APPLES"
    assert result["grades"]["loud"]["score"] == 1.0


def test_the_example_target_kind_awaits_its_tool_calls(plugin_site: Path, tmp_path: Path) -> None:
    suite = _echo_suite(tmp_path, "bump")
    ran = run_cli_process("run", str(suite), "-o", str(tmp_path / "out"), env=_with(plugin_site, "acme"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [result] = read_jsonl(tmp_path / "out" / "results.jsonl")
    [bump] = result["trajectory"]["turns"][0]["steps"][0]["tool_calls"]
    assert bump["result"] == "apples count is now 2" and bump["effect"]["after"] == {"id": "apples", "count": 2}


def test_an_exception_from_a_plugins_validator_or_exporter_is_exit_2_naming_it(
        server: ScriptedServer, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "buggy-plugin", "buggy", "buggy_plugin", '''
        from typing import Literal

        from pydantic import field_validator

        from evals_cli.plugin import EXPORTERS, GRADERS, Grade, Grader, GraderBase


        class PickySpec(GraderBase):
            kind: Literal["zz_picky"] = "zz_picky"
            level: int = 1

            @field_validator("level")
            @classmethod
            def _level(cls, value):
                raise RuntimeError("picky validator bug")


        @GRADERS.register("zz_picky", spec=PickySpec)
        class Picky(Grader[PickySpec]):
            async def grade(self, ctx):
                return Grade(score=1.0)


        @EXPORTERS.register("zz_broken")
        def broken(run, path):
            raise KeyError("exporter bug")
    ''')
    picky = write_suite(tmp_path, [{"id": "s1", "input": "hi"}], graders={"p": {"kind": "zz_picky", "level": 2}})
    checked = run_cli_process("validate", str(picky), env=_with(site, "buggy"))
    said = checked.stdout + checked.stderr
    assert checked.returncode == 2 and "plug-in buggy (package buggy-plugin) raised RuntimeError" in said, said
    assert "picky validator bug" in said and "internal error" not in said

    server.script = agent_script({"hi": [text("hello")]})
    (tmp_path / "plain").mkdir()
    plain = write_suite(tmp_path / "plain", [{"id": "s1", "input": "hi", "ground_truth": "hello"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    ran = run_cli_process("run", str(plain), "-o", str(tmp_path / "out"), "--export",
                          f"zz_broken={tmp_path / 'x.csv'}", env=_with(site, "buggy"))
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2 and "--export zz_broken: exporter kind 'zz_broken' (plug-in from buggy-plugin)" in said
    assert "exporter bug" in said and "internal error" not in said, said
    assert read_jsonl(tmp_path / "out" / "results.jsonl")[0]["passed"] is True  # the run itself is kept

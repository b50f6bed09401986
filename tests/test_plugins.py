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


def _with(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


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


def test_an_installed_plugin_adds_each_kind_and_a_suite_uses_them_end_to_end(
        plugin_site: Path, server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"count apples": [call("bump", {"name": "apples"}), text("COUNTED APPLES")],
                                  "thanks": [text("GOODBYE FRIEND")]})
    suite = _plugin_suite(tmp_path, server.url)
    out = tmp_path / "out"
    ran = run_cli_process("run", str(suite), "-o", str(out), "--export", f"acme_csv={tmp_path / 'scores.csv'}",
                          env=_with(plugin_site))
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

    listed = run_cli_process("list", env=_with(plugin_site))
    assert listed.returncode == 0, listed.stderr
    for kind in ("acme_shout", "acme.count", "player: acme_polite", "acme_chat"):
        lines = listed.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(kind))
        entry = "".join(" ".join(lines[at:at + 3]).split())  # an entry's first line may wrap (at a hyphen too)
        assert "(plug-infromevals-acme-plugin)" in entry, entry


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
        done = run_cli_process(*args, env=_with(site))
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
    done = run_cli_process("list", "graders", env=_with(site))
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

"""One registration idiom for every plug-in family: a kind registers itself with its spec by one decorator, the
family's package is discovered (no import list to edit), a kind claimed twice fails loudly, and the suite model
accepts whatever registered: a new grader or target kind is its module (and its test), no other file."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals_cli.catalog import render_section
from evals_cli.gate.kinds import GATES
from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.models.grader_specs.extractors import EXTRACTORS
from evals_cli.models.sample import Sample
from evals_cli.models.specs import GATE_KINDS
from evals_cli.registry import ELSEWHERE, Registry
from tests.helpers import ROOT
from tests.trajectory_builders import traj

PROBE_GRADER = '''
"""A grader kind in one module: its spec and its grader, registered together."""
from typing import Literal

from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade


class ShoutSpec(GraderBase):
    """The answer is in capitals."""

    kind: Literal["shout"] = "shout"
    min_length: int = 1


@GRADERS.register("shout", spec=ShoutSpec)
class Shout(Grader[ShoutSpec]):
    async def grade(self, ctx: GradeContext) -> Grade:
        text = ctx.submission(self.spec.extractor, self.spec.extractor_config)
        return Grade(score=float(text.isupper() and len(text) >= self.spec.min_length), rationale=text)
'''

PROBE_TARGET = '''
"""A target kind in one module: its spec and its target, registered together."""
from typing import Any, Literal

from evals_cli.endpoints.resolve import Endpoint
from evals_cli.models.base import StrictModel
from evals_cli.models.trajectory import Step, Trajectory, Turn
from evals_cli.targets.base import TARGETS, Target


class EchoSpec(StrictModel):
    """Answers every sample with its input, in capitals."""

    kind: Literal["echo"] = "echo"
    suffix: str = ""


@TARGETS.register("echo", spec=EchoSpec)
class Echo(Target):
    calls_model = False

    @classmethod
    def resolve_endpoint(cls, spec: Any, overrides: dict[str, Any] | None = None) -> Endpoint:
        return Endpoint(role="agent", base_url=None, api_key="none", model="echo")

    async def run(self, sample: Any, trajectory: Trajectory | None = None) -> Trajectory:
        trajectory = trajectory if trajectory is not None else Trajectory()
        answer = str(sample.input).upper() + self.spec.suffix
        trajectory.turns.append(Turn(user=str(sample.input), steps=[Step(content=answer)]))
        return trajectory
'''

RUN_WITH_PROBES = '''
import sys
from pathlib import Path

import evals_cli.graders.kinds
import evals_cli.targets

grader_dir, target_dir, suite = sys.argv[1:4]
evals_cli.graders.kinds.__path__.append(grader_dir)  # as if shout.py were saved in evals_cli/graders/kinds/
evals_cli.targets.__path__.append(target_dir)  # as if echo.py were saved in evals_cli/targets/

from evals_cli import RunOptions, load_suite, run
from evals_cli.catalog import render_section
from evals_cli.errors import ConfigError

spec = load_suite(suite)
print(type(spec.target).__name__, type(spec.graders["loud"]).__name__, spec.graders["loud"].min_length)
outcome = run(suite, RunOptions(output=Path(suite).parent / "out"))
print("exit", outcome.exit_code, outcome.summary.passed, "of", outcome.summary.total)
print("listed", "shout — The answer is in capitals." in render_section("graders", 200),
      "echo — Answers every sample" in render_section("targets", 200))
try:
    load_suite(Path(suite).with_name("bad.yaml"))
except ConfigError as exc:
    print(exc.problems[0].split(": ", 1)[1])
'''


def test_a_kind_in_one_new_module_is_accepted_by_the_suite_and_runs(tmp_path: Path) -> None:
    """Issue 13's "2 files": a grader kind and a target kind, each one module (spec + implementation) dropped
    into its family's package, are accepted by the suite schema, run, and listed, with no other file touched
    (no union, import list or registry edit). A fresh interpreter, since the suite's unions are built from
    the registries when evals_cli.suite.spec is first imported."""
    for family, source in (("graders", PROBE_GRADER), ("targets", PROBE_TARGET)):
        (tmp_path / family).mkdir()
        (tmp_path / family / ("shout.py" if family == "graders" else "echo.py")).write_text(source)
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n{"id": "b", "input": "ok"}\n')
    suite = "name: probe\ndataset: data.jsonl\ntarget:\n  kind: echo\n  suffix: \"!\"\n" \
            "graders:\n  loud:\n    kind: shout\n    min_length: 2\n"
    (tmp_path / "suite.yaml").write_text(suite)
    (tmp_path / "bad.yaml").write_text(suite.replace("kind: shout", "kind: shou"))
    script = tmp_path / "probe_run.py"
    script.write_text(RUN_WITH_PROBES)
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "graders"), str(tmp_path / "targets"),
                             str(tmp_path / "suite.yaml")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "EchoSpec ShoutSpec 2"
    assert lines[1] == "exit 0 2 of 2"
    assert lines[2] == "listed True True"
    assert lines[3] == ("graders.loud.kind: unknown kind 'shou'; did you mean 'shout'? kinds: choice, cost, "
                        "exact_match, f1, final_state, forbidden_tools, grounding, latency, match, model_judge, no_leak, "
                        "no_loops, output_type, sandbox_check, session_detector, session_score, shout, spans, "
                        "stop_behavior, tool_args, tool_order, tool_schema")




def test_every_grader_kind_is_a_grader_of_its_own_spec() -> None:
    for entry in GRADERS.entries():
        assert issubclass(entry.impl, Grader), entry.kind
        # found by discovery: in the family's package, or a built-in module beside what it builds on
        assert entry.module.startswith("evals_cli.graders.kinds.") or entry.module in ELSEWHERE[GRADERS.package or ""]
        assert entry.spec is not None
        assert entry.kind in typing.get_args(entry.spec.model_fields["kind"].annotation)  # its name or an alias
        assert entry.spec.__module__ == entry.module, entry.kind  # the spec lives with its grader


def test_the_recorded_session_kinds_live_in_sessions_and_are_discovered_with_every_grader_kind() -> None:
    """graders/ never imports sessions/ (which builds on the graders): discovery imports the session kinds from
    `ELSEWHERE`, in a fresh interpreter where nothing imported them first, and `evals list graders` lists them."""
    code = ("from evals_cli.graders.base import GRADERS\n"
            "print(GRADERS['session_score'].module, GRADERS['session_detector'].module)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["evals_cli.sessions.graders", "evals_cli.sessions.graders"]
    listed = subprocess.run([sys.executable, "-m", "evals_cli", "list", "graders"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "session_detector" in listed.stdout and "session_score" in listed.stdout


def test_gate_kinds_come_from_the_registry() -> None:
    assert GATES.kinds() == list(GATE_KINDS)
    assert {e.kind: e.spec for e in GATES.entries()} == GATE_KINDS
    listed = render_section("gates", 200)
    assert all(f"\n{kind} — " in listed for kind in GATES.kinds())


def test_extractors_share_the_idiom() -> None:
    assert "last_assistant" in EXTRACTORS  # GraderBase's default extractor
    assert all(e.impl.name == e.kind for e in EXTRACTORS.entries())
    with pytest.raises(KeyError, match="unknown extractor kind 'nope'; known: last_assistant"):
        EXTRACTORS["nope"]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A throwaway kinds package on sys.path, with its own registry in its __init__ (forgotten afterwards)."""
    name = f"zz_probe_kinds_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("from evals_cli.registry import Registry\n\n"
                                        "PROBES = Registry('probe grader', __name__)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, folder
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


KIND = '''
from typing import Literal

from evals_cli.graders.base import GradeContext, Grader
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade
from {package} import PROBES


class ShoutSpec(GraderBase):
    """The answer is in capitals."""

    kind: Literal["{kind}"] = "{kind}"


@PROBES.register("{kind}", spec=ShoutSpec)
class Shout(Grader[ShoutSpec]):
    async def grade(self, ctx: GradeContext) -> Grade:
        text = ctx.submission(self.spec.extractor, self.spec.extractor_config)
        return Grade(score=float(text.isupper()), rationale=text)
'''


def test_a_kind_in_a_new_module_registers_by_its_decorator_alone(package: tuple[str, Path], tmp_path: Path) -> None:
    name, folder = package
    (folder / "shout.py").write_text(textwrap.dedent(KIND.format(package=name, kind="shout")))
    probes: Registry[type[Grader[typing.Any]]] = __import__(name).PROBES
    assert probes.kinds() == ["shout"]  # discovered: nothing imported shout.py by name
    entry = probes["shout"]
    assert entry.spec is not None and entry.spec.__name__ == "ShoutSpec" and entry.module == f"{name}.shout"
    grader = entry.impl("loud", entry.spec.model_validate({"kind": "shout"}), GraderContext(tmp_path))
    trajectory = traj(answer="DONE")
    ctx = GradeContext(Sample(input="q"), trajectory, trajectory, None, None)
    assert asyncio.run(grader.grade(ctx)).score == 1.0
    assert grader.kind == "shout"


def test_two_modules_claiming_one_kind_fail_loudly(package: tuple[str, Path]) -> None:
    name, folder = package
    for module in ("first", "second"):
        (folder / f"{module}.py").write_text(textwrap.dedent(KIND.format(package=name, kind="echo")))
    probes = __import__(name).PROBES
    with pytest.raises(RuntimeError, match=rf"probe grader kind 'echo' registered twice: by {name}.first and "
                                           rf"{name}.second"):
        probes.kinds()


def test_a_lookup_of_an_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown grader kind 'banana'; known: .*tool_order"):
        GRADERS["banana"]
    assert "banana" not in GRADERS and "tool" in GRADERS

"""One registration idiom for every plug-in family: a kind registers itself with its spec by one decorator, the
family's package is discovered (no import list to edit), a kind claimed twice fails loudly, and what the suite
model accepts agrees with what is registered."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from trajectory_builders import traj

from evals_cli.catalog import render_section
from evals_cli.gate import GATES
from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.models.grader_specs import GraderBase, GraderSpec
from evals_cli.models.grader_specs.extractors import EXTRACTORS
from evals_cli.models.sample import Sample
from evals_cli.models.specs import GATE_KINDS
from evals_cli.registry import Registry


def union_specs() -> dict[str, type[GraderBase]]:
    """kind -> spec model, as the suite's `GraderSpec` union lists them."""
    members = typing.get_args(typing.get_args(GraderSpec)[0])
    return {m.model_fields["kind"].default: m for m in members}


def test_every_grader_kind_has_its_spec_in_the_suite_union() -> None:
    registered = {entry.kind: entry.spec for entry in GRADERS.entries()}
    assert all(spec is not None for spec in registered.values()), "a grader kind registered without its spec"
    assert registered == union_specs(), "GraderSpec (models/grader_specs) and GRADERS name different kinds/specs"


def test_every_grader_kind_is_a_grader_of_its_own_spec() -> None:
    for entry in GRADERS.entries():
        assert issubclass(entry.impl, Grader), entry.kind
        assert entry.module.startswith("evals_cli.graders.kinds."), entry.kind  # found by discovery
        assert entry.spec is not None and entry.spec.model_fields["kind"].default == entry.kind


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

"""`evals list`: every registered grader, extractor, target and gate kind with its options, generated from the
registries and the pydantic schemas (a kind registered at run time shows up; nothing is a hard-coded list)."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from evals_cli.cli import app
from evals_cli.graders.base import GRADERS, Grader
from evals_cli.models.grader_specs import GraderBase
from evals_cli.models.grader_specs.extractors import EXTRACTORS, extractor
from evals_cli.models.specs import GATE_KINDS
from evals_cli.suite.spec import GraderSpec
from evals_cli.targets.base import TARGETS
from evals_cli.targets.openai_chat import OpenAIChatTarget
from tests.helpers import run_cli


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, ["list", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


def blocks(output: str) -> dict[str, str]:
    """kind -> its block of the listing (the kind line and its indented options)."""
    out: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        match = re.match(r"^([a-z_0-9]+)( — |$)", line)
        if match and not line.endswith(":"):
            current = match.group(1)
            out[current] = line + "\n"
        elif current is not None and line.startswith(" "):
            out[current] += line + "\n"
    return out


def spec_classes() -> dict[str, type]:
    members = [typing.get_args(m)[0] for m in typing.get_args(typing.get_args(GraderSpec)[0])]
    return {m.model_fields["kind"].default: m for m in members}


def test_every_section_and_every_registered_kind_is_listed() -> None:
    output = run_cli("list").stdout
    for section in ("graders:", "extractors:", "targets:", "gates:", "effects:", "users:"):
        assert f"\n{section}\n" in f"\n{output}"
    listed = blocks(output)
    for kind in [*GRADERS, *EXTRACTORS, *TARGETS, *GATE_KINDS]:
        assert kind in listed, kind


def test_grader_options_and_descriptions_come_from_the_specs() -> None:
    listed = blocks(invoke("graders"))
    assert set(listed) == set(GRADERS)
    for kind, spec in spec_classes().items():
        block = listed[kind]
        assert (spec.__doc__ or "").split("\n")[0].strip()[:40] in block.replace("\n    ", " ")
        for name, info in spec.model_fields.items():
            if name == "kind" or name in GraderBase.model_fields:
                continue
            assert f"    {info.alias or name}: " in block, (kind, name)  # the name a suite writes
            if info.description:
                assert " ".join(info.description.split()[:4]) in " ".join(block.split()), (kind, name)
    assert '    function: str, required' in listed["match"]
    assert '    case_sensitive: bool | null = null' in listed["match"]
    assert listed["tool"].startswith("tool — deprecated alias of match")


def test_common_grader_options_are_listed_once() -> None:
    output = invoke("graders")
    header = output.split("\n\n")[0]
    for name in GraderBase.model_fields:
        assert name in header
    assert 'extractor (str = "last_assistant")' in " ".join(header.split())


def test_extractors_with_their_options() -> None:
    listed = blocks(invoke("extractors"))
    assert set(listed) == set(EXTRACTORS)
    for name, ext in ((e.kind, e.impl) for e in EXTRACTORS.entries()):
        assert ext.description in listed[name].replace("\n    ", " ")
        for option, text in ext.options.items():
            state = "required" if option in ext.required else "optional"
            assert f"    {option}: {state}\n        {text}" in listed[name]


def test_targets_and_gates() -> None:
    targets = blocks(invoke("targets"))
    for name in OpenAIChatTarget.model_fields:
        if name != "kind":
            assert f"    {name}: " in targets["openai_chat"]
    assert targets["openai_chat"].index("system_prompt:") < targets["openai_chat"].index("base_url:")  # own first
    gates = blocks(invoke("gates"))
    assert set(gates) == set(GATE_KINDS)
    assert "    metric_key: str, required" in gates["simple"]
    assert '    operator: "and" | "or", required' in gates["logical"]
    for aggregation in ("avg_score", "accuracy", "median", "p50", "p95", "p99", "pass_at_k"):
        assert f'"{aggregation}"' in gates["weighted_average"]


@pytest.fixture
def registered_at_runtime() -> Iterator[None]:
    @extractor("zz_probe", "A probe extractor registered by a test.", {"depth": "How deep to probe."})
    def probe(trajectory, config):  # type: ignore[no-untyped-def]
        return ""

    @GRADERS.register("zz_probe_grader")
    class ProbeGrader(Grader):
        """A probe grader registered by a test."""

    yield
    EXTRACTORS.unregister("zz_probe")
    GRADERS.unregister("zz_probe_grader")


def test_kinds_registered_at_run_time_are_listed(registered_at_runtime: None) -> None:
    extractors = blocks(invoke("extractors"))
    assert "A probe extractor registered by a test." in extractors["zz_probe"]
    assert "    depth: optional\n        How deep to probe." in extractors["zz_probe"]
    assert "A probe grader registered by a test." in blocks(invoke("graders"))["zz_probe_grader"]


def test_unknown_section_is_exit_2_with_a_hint() -> None:
    result = run_cli("list", "grader")
    assert result.returncode == 2
    assert "cannot list 'grader'; did you mean 'graders'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_list_is_in_the_help() -> None:
    result = run_cli("--help")
    assert result.returncode == 0 and "list" in result.stdout

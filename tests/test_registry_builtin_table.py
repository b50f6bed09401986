"""A suite imports only the built-in grader and target kinds it names (registry.BUILTIN_KINDS): the table must
name every built-in kind's module, and a suite must validate, and be refused, as against every kind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evals_cli.graders.base import GRADERS
from evals_cli.registry import BUILTIN_KINDS, Registry
from evals_cli.suite.spec import kind_aliases
from evals_cli.targets.base import TARGETS
from tests.helpers import ROOT


def _builtin(registry: Registry[object]) -> dict[str, str]:
    return {e.kind: e.module for e in registry.entries() if e.package is None and e.module.startswith("evals_cli.")}


def test_the_table_names_every_built_in_grader_and_target_kind_and_its_module() -> None:
    assert BUILTIN_KINDS[str(GRADERS.package)] == _builtin(GRADERS)
    assert BUILTIN_KINDS[str(TARGETS.package)] == _builtin(TARGETS)


def _fresh(code: str) -> str:
    """Run code in a new interpreter (no kind imported yet, as in a real run); its stdout."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


SUITE = "name: s\ndataset: data.jsonl\ntarget: {{model: m, base_url: 'http://127.0.0.1:9/v1'}}\ngraders:\n{graders}"


def test_an_unknown_kind_beside_built_in_ones_lists_every_kind_in_a_fresh_process(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "suite.yaml").write_text(SUITE.format(graders="  a: {kind: tool, function: contains}\n"
                                                              "  b: {kind: toll}\n"))
    out = _fresh(f"from evals_cli.suite.loader import load_suite\nfrom evals_cli.errors import ConfigError\n"
                 f"try:\n    load_suite({str(tmp_path / 'suite.yaml')!r})\nexcept ConfigError as exc:\n"
                 f"    print(exc)")
    assert "graders.b.kind: unknown kind 'toll'" in out
    old_names = kind_aliases(GRADERS)
    every = ", ".join(sorted(k for k in BUILTIN_KINDS[str(GRADERS.package)] if k not in old_names))
    assert f"kinds: {every}" in out


def test_suites_naming_other_kinds_load_one_after_another_in_one_process(tmp_path: Path) -> None:
    """The unions grow with the kinds each suite names; an old name still validates and is noted."""
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "one.yaml").write_text(SUITE.format(graders="  a: {kind: tool, function: contains}\n"))
    (tmp_path / "two.yaml").write_text(SUITE.format(graders="  j: {kind: model_judge, prompt: 'Grade {{ submission }}.'}\n"
                                                              "  o: {kind: tool_order}\n  m: {kind: tools_avoided}\n")
                                       .replace("target: {model", "target: {kind: openai_responses, model"))
    out = _fresh(f"from evals_cli.suite.loader import load_suite\n"
                 f"one = load_suite({str(tmp_path / 'one.yaml')!r})\n"
                 f"two = load_suite({str(tmp_path / 'two.yaml')!r})\n"
                 f"print(sorted((n, type(g).__name__) for n, g in two.graders.items()), type(two.target).__name__)\n"
                 f"print(two.naming_notes())\n"
                 f"print(type(load_suite({str(tmp_path / 'one.yaml')!r}).graders['a']).__name__)")
    lines = out.splitlines()
    assert "('j', 'ModelJudgeSpec')" in lines[0] and "('o', 'ToolOrderSpec')" in lines[0]
    assert lines[0].endswith("OpenAIResponsesTarget")
    assert "kind 'tools_avoided' is the old name of 'forbidden_tools'" in lines[1]
    assert lines[2] == "MatchSpec"

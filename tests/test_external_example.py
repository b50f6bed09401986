"""The shipped external-agent example (suites/external_agent.yaml, `make eval-external`) replays offline: its
recorded replies and spans are graded with no process started (the program named does not even exist)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT, read_jsonl, run_cli

SUITE = ROOT / "suites" / "external_agent.yaml"
RECORDING = ROOT / "suites" / "external_agent.recording.jsonl"


def test_the_example_replays_offline_graded_on_its_spans(tmp_path: Path) -> None:
    result = run_cli("run", str(SUITE), "--replay", str(RECORDING), "-o", str(tmp_path / "out"),
                     env={"EXTERNAL_AGENT_PYTHON": str(tmp_path / "absent-python")})
    assert result.returncode in (0, 1), result.stdout + result.stderr
    rows = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert sorted(r["sample_id"] for r in rows) == ["db-host", "db-port"]
    for row in rows:
        assert row["error"] is None and "not_observed" not in row["trajectory"]
        assert row["grades"]["tool_order"]["applicable"] is True  # graded on the spans, not n/a
        assert row["trajectory"]["turns"][0]["steps"], row
    called = {r["sample_id"]: [c["name"] for s in r["trajectory"]["turns"][0]["steps"] for c in s["tool_calls"]]
              for r in rows}
    assert any(called.values())  # the recorded agent called its tools, and the spans said so


def test_make_eval_external_replays_the_recording() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\neval-external:", 1)[1].split("\n\n", 1)[0]
    assert "--replay suites/external_agent.recording.jsonl" in recipe and "suites/external_agent.yaml" in recipe


def test_the_examples_imports_install_with_the_otel_extra() -> None:
    """`pip install 'evals-cli[otel]'` (the command the docs give) brings every package the agent imports: each
    module it imports comes from a distribution in the install closure of evals-cli's own and the otel extra's
    requirements (the example must not need a package the documented command leaves out)."""
    import ast
    import importlib.util
    import sys
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def needed(requirements: list[str]) -> list[str]:
        """The names of the requirements that apply here (markers evaluated, no extra asked for)."""
        parsed = [Requirement(r) for r in requirements]
        return [r.name.lower().replace("_", "-") for r in parsed if r.marker is None or r.marker.evaluate({"extra": ""})]

    wanted = needed(project["dependencies"] + project["optional-dependencies"]["otel"])
    closure: set[str] = set()
    while wanted:
        dist = wanted.pop()
        if dist not in closure:
            closure.add(dist)
            wanted += needed(metadata.requires(dist) or [])
    tree = ast.parse((ROOT / "examples" / "external_agent" / "agent.py").read_text(encoding="utf-8"))
    modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    for node in ast.walk(tree):  # `from opentelemetry import trace` imports the module opentelemetry.trace
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != "__future__":
            modules |= {f"{node.module}.{a.name}" if importlib.util.find_spec(node.module).submodule_search_locations
                        and importlib.util.find_spec(f"{node.module}.{a.name}") else node.module for a in node.names}
    by_top = metadata.packages_distributions()
    owners = {}
    for module in sorted(m for m in modules if m.split(".")[0] not in sys.stdlib_module_names):
        origin = Path(importlib.util.find_spec(module).origin or "").resolve()  # type: ignore[union-attr]
        candidates = {metadata.distribution(d) for d in by_top.get(module.split(".")[0], [])}
        owners[module] = {d.metadata["Name"].lower().replace("_", "-") for d in candidates
                          if any(Path(d.locate_file(f)).resolve() == origin for f in d.files or [])}
    assert "opentelemetry.sdk.trace" in owners  # the SDK is what the quick start's plain install lacks
    for module, dists in owners.items():
        assert dists & closure, f"{module} (from {dists}) is not installed by pip install 'evals-cli[otel]'"

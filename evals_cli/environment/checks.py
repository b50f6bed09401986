"""What `evals validate` (and a run's precheck) finds wrong between environments, effects and expected states,
without calling a model: a records effect on a collection the sample's world lacks, an expected path or record
that cannot exist. A tool's own effect (unknown effect, an argument it does not declare) is checked when the
suite loads (models/tools.py)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.expected_state import ExpectedState
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.world_values import normal_path, normal_target, record_key


def _hint(name: str, choices: list[str]) -> str:
    found = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean '{found[0]}'?" if found else ""


def _file_and_folder(paths: list[str]) -> tuple[str, str] | None:
    """A path that is a file and also a folder above another file, as (file, the file under it)."""
    files = set(paths)
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            above = "/".join(parts[:depth])
            if above in files:
                return above, path
    return None


def _creates(tools: Mapping[str, ToolSpec], ops: tuple[str, ...], collection: str | None = None) -> bool:
    return any(t.effect is not None and t.effect.op in ops and (collection is None or t.effect.collection == collection)
               for t in tools.values())


def expectation_problems(sample: Sample, expected: ExpectedState, tools: Mapping[str, ToolSpec]) -> list[str]:
    """Expected paths and records the sample's (merged) environment cannot account for, each naming its field."""
    env = (sample.environment or EnvironmentSpec()).resolved()
    files = list(env.files)
    collections = {name: [record_key(o["id"]) for o in objects or []] for name, objects in env.records.items()}
    folders = {p.rsplit("/", depth)[0] for p in files for depth in range(1, p.count("/") + 1)}  # every ancestor
    problems: list[str] = []
    if sample.environment is None:
        return ["expected_state: the sample has no environment (declare one at suite level or in the row)"]
    # a tool an MCP server answers live may write any file of its workspace
    writes = _creates(tools, ("files.write", "files.append")) or any(t.served_by is not None for t in tools.values())
    for raw in expected.files:
        path = normal_path(raw)
        if path not in files and not writes:
            problems.append(f"expected_state.files.{raw}: not in the environment and no tool can create files"
                            f"{_hint(path, files)}")
    for collection, by_id in expected.records.items():
        if collection not in collections:
            problems.append(f"expected_state.records.{collection}: the environment has no such collection"
                            f"{_hint(collection, list(collections))}")
            continue
        can_create = _creates(tools, ("records.create",), collection)
        for rid in by_id:
            if record_key(rid) not in collections[collection] and not can_create:
                problems.append(f"expected_state.records.{collection}.{rid}: no such record in the environment and "
                                f"no tool creates {collection} records{_hint(record_key(rid), collections[collection])}")
    for field in ("unchanged", "deleted"):
        for raw in getattr(expected, field):
            target = normal_target(raw)
            name, _, rid = target.partition("/")
            if target in files or target in folders:
                continue
            if name in collections and (not rid or rid in collections[name]):
                continue
            choices = files + [f"{c}/{i}" for c, ids in collections.items() for i in ids] + list(collections)
            problems.append(f"expected_state.{field}: '{raw}' is not in the environment{_hint(target, choices)}")
    return problems


class EnvironmentChecker:
    """Per-row environment checks for `check_dataset(on_sample=...)`: the expected states (the row's, and those
    of graders that bring their own) against the row's merged world and tools; and records effects acting on a
    collection the world lacks (every call would fail), reported once per (tool, collection) naming a few
    samples, so a large dataset gives a few lines."""

    def __init__(self, suite_tools: Mapping[str, ToolSpec], where: str,
                 grader_states: Mapping[str, ExpectedState] | None = None) -> None:
        self.suite_tools = dict(suite_tools)
        self.where = where
        self.grader_states = dict(grader_states or {})
        self.found: dict[tuple[str, str], list[str]] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.available: dict[tuple[str, str], list[str]] = {}

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        tools = {**self.suite_tools, **(sample.tools or {})}
        env = (sample.environment or EnvironmentSpec()).resolved()
        problems: list[str] = []
        prefix = f"{where}: " if where else ""
        clash = _file_and_folder(list(env.files))
        if clash is not None:  # a suite's file and a row's folder of the same name, say
            problems.append(f"{prefix}environment.files: '{clash[0]}' is a file and also the folder of "
                            f"'{clash[1]}'; rename one")
        if sample.expected_state is not None:
            problems += [f"{prefix}{p}" for p in expectation_problems(sample, sample.expected_state, tools)]
        for grader, state in self.grader_states.items():
            problems += [f"{prefix}graders.{grader}.{p}" for p in expectation_problems(sample, state, tools)]
        for name, spec in tools.items():
            effect = spec.effect
            if effect is None or effect.collection is None or effect.collection in env.records:
                continue
            key = (name, effect.collection)
            self.counts[key] = self.counts.get(key, 0) + 1
            self.available[key] = list(env.records)
            if len(self.found.setdefault(key, [])) < 3:
                self.found[key].append(str(sample.id)[:60])
        return problems

    def problems(self) -> list[str]:
        out = []
        for (tool, collection), samples in self.found.items():
            count = self.counts[(tool, collection)]
            more = f" and {count - 3} more" if count > 3 else ""
            out.append(f"{self.where}: tools.{tool}.effect: acts on records collection '{collection}', which the "
                       f"environment does not declare (samples {', '.join(samples)}{more}); add "
                       f"environment.records.{collection}{_hint(collection, self.available[(tool, collection)])}")
        return out

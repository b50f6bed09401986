"""Property-based: whatever YAML or JSONL a user feeds the loaders, the only error is our ConfigError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evals_cli.datasets.reader import check_dataset, iter_samples
from evals_cli.errors import ConfigError
from evals_cli.suite.loader import load_suite

# hundreds of generated inputs per property: CPU-bound, so in `make test-slow` (which .ci/run runs), not the loop
pytestmark = pytest.mark.slow

KEYS = ["name", "dataset", "target", "graders", "gate", "tools", "kind", "model", "function", "weights", "input",
        "ground_truth", "messages", "id", "tags", "concurrency", "returns", "cases", "when", "extractor",
        "${HOME}", "${NOPE:-x}", "${MISSING}", "rubric", "value", "op"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=12),
                    st.sampled_from(["tool", "openai_chat", "model_judge", "contains", "data.jsonl", "gte"]))
trees = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.sampled_from(KEYS), children, max_size=5)), max_leaves=25)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load_suite_text(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "suite.yaml"
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)  # type: ignore[operator]
        (Path(tmp) / "data.jsonl").write_text('{"input": "x"}\n')
        try:
            load_suite(path)
        except ConfigError:
            pass


def _read_dataset(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.jsonl"
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)  # type: ignore[operator]
        try:
            check_dataset(path)
            list(iter_samples(path))
        except ConfigError:
            pass


@FAST
@given(st.text(max_size=300))
def test_any_text_as_suite(text: str) -> None:
    _load_suite_text(text)


@FAST
@given(st.binary(max_size=200))
def test_any_bytes_as_suite(data: bytes) -> None:
    _load_suite_text(data)


@FAST
@given(trees)
def test_any_yaml_tree_as_suite(tree: object) -> None:
    _load_suite_text(yaml.safe_dump(tree))


@FAST
@given(st.dictionaries(st.sampled_from(["name", "dataset", "target", "graders", "gate", "tools"]), trees, max_size=6))
def test_suite_shaped_trees(tree: dict) -> None:
    _load_suite_text(yaml.safe_dump(tree))


@FAST
@given(st.lists(st.one_of(trees.map(lambda t: json.dumps(t)), st.text(max_size=40)), max_size=6))
def test_any_jsonl_lines_as_dataset(lines: list[str]) -> None:
    _read_dataset("\n".join(lines))


@FAST
@given(st.lists(st.dictionaries(st.sampled_from(KEYS), trees, max_size=5), max_size=5))
def test_sample_shaped_rows(rows: list[dict]) -> None:
    _read_dataset("\n".join(json.dumps(r) for r in rows))


@FAST
@given(st.binary(max_size=200))
def test_any_bytes_as_dataset(data: bytes) -> None:
    _read_dataset(data)

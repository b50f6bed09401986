"""Every YAML and JSON block of the README and of the docs/ pages is valid as written (issue 14, item 10; the pages
since issue 29 item 7 moved most of the README there).

A whole suite is checked by `evals validate`'s library path in a temporary folder laid out as the README says
(the suite in `suites/`, the repository's `rubrics/` beside it, the README's dataset rows in the dataset it
names); a fragment (a target, graders, a gate, a judge block) is put into a minimal suite in the same folder
and checked the same way; a dataset row is checked as a row, a grade as a grade. A block that is deliberately
not valid carries `<!-- not-validated: reason -->` on the line before it, and those are counted: adding one
is a decision, made here too. The `judge:` keys table is kept in sync with the model's fields.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.labels import parse_label
from evals_cli.models.calibration import JudgeCalibration
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.specs import JudgeSpec
from evals_cli.runner.plan import validate_suite
from evals_cli.suite.loader import TargetOverride
from evals_cli.suite.spec import SuiteSpec
from tests.ci_manifests import check_kubernetes, check_workflow, is_kubernetes, is_workflow
from tests.docs_pages import doc_files, label, page
from tests.helpers import ROOT

NOT_VALIDATED = 6  # blocks marked `<!-- not-validated: reason -->`; change it with the mark
FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!--\s*not-validated:\s*(\S.*?)\s*-->\s*\Z", re.S)
CHECKED = ("yaml", "yml", "json", "jsonl")
# graders a gate fragment may name (those of the README's own examples)
GRADERS = {
    "answer": {"kind": "match", "function": "contains"},
    "order": {"kind": "tool_order"},
    "avoided": {"kind": "forbidden_tools"},
    "forbidden": {"kind": "forbidden_tools"},
    "quality": {"kind": "model_judge", "rubric": "builtin:task_completion"},
}


@dataclass
class Block:
    lang: str
    text: str
    line: int
    mark: str | None  # the reason it is not validated
    source: str = "README.md"

    @property
    def label(self) -> str:
        return f"{self.source}:{self.line} ({self.lang})"


def readme_blocks(text: str, source: str = "README.md") -> list[Block]:
    """The fenced blocks of one file's text."""
    found = []
    previous_end = 0
    for match in FENCE.finditer(text):
        lang = match.group(1).lower()
        before = text[previous_end:match.start()]
        previous_end = match.end()
        mark = MARK.search(before)
        found.append(Block(lang, match.group(2), text.count("\n", 0, match.start()) + 1,
                           mark.group(1) if mark else None, source))
    return found


def all_blocks() -> list[Block]:
    """Every block of the README and of every docs/ page."""
    return [b for path in doc_files() for b in readme_blocks(path.read_text(encoding="utf-8"), label(path))]


def checked_blocks() -> list[Block]:
    return [b for b in all_blocks() if b.lang in CHECKED and b.mark is None]


def json_values(block: Block) -> list[Any]:
    if block.lang == "jsonl":
        return [json.loads(line) for line in block.text.splitlines() if line.strip()]
    return [json.loads(block.text)]


def is_row(value: Any) -> bool:
    return isinstance(value, dict) and ("input" in value or "messages" in value or "user" in value)


def is_grade(value: Any) -> bool:
    return isinstance(value, dict) and "score" in value and "rationale" in value


def is_label(value: Any) -> bool:
    """A line of a labels file (`evals label`, "Measuring the judge")."""
    return isinstance(value, dict) and {"sample_id", "grader", "label"} <= set(value)


CALIBRATION_KEYS = {"n", "tp", "fp", "fn", "tn", "tpr", "tnr", "kappa", "observed_pass_rate", "corrected_pass_rate", "ci"}


def is_calibration(value: Any) -> bool:
    """What `evals calibrate --json` prints: every judge with the figures issue 27 names."""
    return isinstance(value, dict) and isinstance(value.get("graders"), dict) and all(
        isinstance(g, dict) and CALIBRATION_KEYS <= set(g) for g in value["graders"].values())


def readme_rows() -> list[dict[str, Any]]:
    return [v for b in checked_blocks() if b.lang in ("json", "jsonl") for v in json_values(b) if is_row(v)]


def is_suite(data: Any) -> bool:
    return isinstance(data, dict) and {"name", "dataset", "target"} <= set(data)


def is_watch_suite(data: Any) -> bool:
    """A suite for `evals watch` (docs/online.md): graders and a watch: block, no target and no dataset."""
    return isinstance(data, dict) and {"name", "graders", "watch"} <= set(data)


def project(tmp: Path) -> Path:
    """The folder the README describes: suites/ for suite files, the repository's rubrics/ beside it, the files
    the README's python blocks name (`# agents/my_agent.py`) relative to the suites, and the README's rows as
    the dataset of its suite example."""
    shutil.copytree(ROOT / "rubrics", tmp / "rubrics")
    suites = tmp / "suites"
    suites.mkdir()
    for labels in (ROOT / "suites").glob("*.labels.jsonl"):  # a judge's `calibration:` names one
        shutil.copy(labels, suites / labels.name)
    for traces in (ROOT / "suites").glob("*.otlp.jsonl"):  # a traces target names one
        shutil.copy(traces, suites / traces.name)
    for block in all_blocks():
        header = block.text.split("\n", 1)[0]
        named = re.match(r"#\s+([\w./-]+\.py)\b", header) if block.lang == "python" else None
        if named and not named.group(1).startswith(("/", "..", "evals_cli/")):
            target = suites / named.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
    rows = readme_rows()
    assert rows, "the README shows no dataset row"
    for data in (yaml.safe_load(b.text) for b in checked_blocks() if b.lang in ("yaml", "yml")):
        if is_suite(data):
            dataset = (suites / data["dataset"]).resolve()
            dataset.parent.mkdir(parents=True, exist_ok=True)
            dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return suites


def minimal_suite(fragment: dict[str, Any]) -> dict[str, Any]:
    """A fragment (any top-level suite keys but name and dataset) in the smallest suite that can hold it."""
    suite: dict[str, Any] = {
        "name": "readme-fragment",
        "dataset": "../datasets/fragment.jsonl",
        "target": {"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
        "judge": {"model": "judge"},
        "graders": GRADERS,
    }
    if "target" not in fragment and set(fragment) & {"kind", "base_url", "model", "callable"}:
        fragment = {"target": fragment}  # a bare target block, as a --target file holds
    return {**suite, **fragment}


def assert_valid_suite(path: Path) -> None:
    report = validate_suite(path, TargetOverride())
    assert report.problems == [], "\n".join(report.problems)
    assert report.samples > 0


def test_the_readme_has_blocks_of_every_checked_kind() -> None:
    langs = {b.lang for b in checked_blocks()}
    assert {"yaml", "json"} <= langs
    suites = [b for b in checked_blocks() if b.lang in ("yaml", "yml") and is_suite(yaml.safe_load(b.text))]
    assert len(suites) >= 1, "the README's suite example is gone"


@pytest.mark.parametrize("block", checked_blocks(), ids=lambda b: b.label)
def test_every_yaml_and_json_block_is_valid(block: Block, tmp_path: Path) -> None:
    if block.lang in ("json", "jsonl"):
        for value in json_values(block):
            if is_row(value):
                Sample.model_validate(value)
            elif is_grade(value):
                Grade.model_validate(value)
            elif is_label(value):
                assert parse_label(value, block.label)[1] == []
            elif is_calibration(value):
                for figures in value["graders"].values():
                    JudgeCalibration.model_validate(figures)
            else:
                pytest.fail(f"{block.label}: neither a dataset row nor a grade: teach this test what it is, or mark it "
                            "<!-- not-validated: reason -->")
        return
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.label}: not a mapping"
    if is_kubernetes(data) or is_workflow(data):  # docs/scaling.md's manifests: no suite, but evals commands
        (check_kubernetes if is_kubernetes(data) else check_workflow)(data, block.label)
        return
    if is_watch_suite(data):  # loaded as `evals watch` loads it: every problem at its line
        from evals_cli.watch.suite import load_watch_suite

        path = tmp_path / "watch.yaml"
        path.write_text(block.text, encoding="utf-8")
        load_watch_suite(path)
        return
    suites = project(tmp_path)
    (tmp_path / "datasets").mkdir(exist_ok=True)
    (tmp_path / "datasets" / "fragment.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in readme_rows()), encoding="utf-8")
    if is_suite(data):
        path = suites / "config.yaml"
        path.write_text(block.text, encoding="utf-8")  # as written: comments, ${VAR:-default} and all
    else:
        suite = minimal_suite(data)
        unknown = set(suite) - set(SuiteSpec.model_fields)
        assert not unknown, (f"{block.label}: keys {sorted(unknown)} are not suite keys: teach this test what the "
                             "block is, or mark it <!-- not-validated: reason -->")
        path = suites / "fragment.yaml"
        path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    assert_valid_suite(path)


def test_the_suite_example_names_only_files_that_exist_in_its_layout(tmp_path: Path) -> None:
    """The README says where the suite example lives; every file it names is there (nothing to invent)."""
    suites = project(tmp_path)
    data = next(d for d in (yaml.safe_load(b.text) for b in checked_blocks() if b.lang == "yaml") if is_suite(d))
    named = [data["dataset"], data["target"].get("system_prompt_file")]
    named += [g.get("rubric") for g in data["graders"].values()]
    for name in filter(None, named):
        if not name.startswith("builtin:"):
            assert (suites / name).resolve().is_file(), name
    for name in named[1:]:  # the rubric and prompt ship with the repository
        if name and not name.startswith("builtin:"):
            assert (ROOT / "suites" / name).resolve().is_file(), f"{name} does not ship in the repository"


def test_marked_blocks_are_counted_and_give_a_reason() -> None:
    marked = [b for b in all_blocks() if b.mark is not None]
    assert all(b.lang in CHECKED for b in marked), [b.label for b in marked if b.lang not in CHECKED]
    assert len(marked) == NOT_VALIDATED, (
        f"{len(marked)} blocks are marked not-validated ({', '.join(b.label for b in marked)}); "
        f"NOT_VALIDATED says {NOT_VALIDATED}: update it with the mark")


def test_a_mark_skips_its_block_and_only_that_one() -> None:
    text = "a\n```yaml\nname: x\n```\n<!-- not-validated: an invalid example -->\n```yaml\nnope: [\n```\n"
    blocks = readme_blocks(text)
    assert [b.mark for b in blocks] == [None, "an invalid example"]


def _judge_table() -> dict[str, str]:
    section = page("judge.md")
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \| (.+?) \|$", section.split("\n- ", 1)[0], flags=re.M)
    return {key: default for key, default, _ in rows}


def test_the_judge_keys_table_matches_the_model() -> None:
    table = _judge_table()
    assert list(table) == list(JudgeSpec.model_fields), "the README's judge: table and JudgeSpec differ"
    for key, info in JudgeSpec.model_fields.items():
        default = info.get_default(call_default_factory=True)
        assert table[key] == json.dumps(default), (key, table[key], default)


def test_the_test_run_duration_sentence_is_there() -> None:
    assert re.search(r"The default test run takes about \S+ minutes on a 2-core machine\.", page("development.md"))

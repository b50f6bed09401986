"""`evals merge` gives a verdict only over parts that make one whole: parts cut from one plan (the same filters,
repeats and count before the split), each holding the rows it planned, once, and agreeing with its own summary.
Real `evals run --shard K/N` folders, then edited as a damaged copy or an attacker would."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evals_cli.sharding import in_shard
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [{"id": f"s{i:02d}", "input": f"q{i}", "ground_truth": "fine" if i % 5 else "other"} for i in range(8)]
WRONG = "s00"  # answered "fine" where "other" is right: failed
HOLDER = next(k for k in (1, 2, 3) if in_shard(WRONG, (k, 3)))  # the part the tests edit


@dataclass
class Runs:
    """One suite split 3 ways, the same part run with other filters, and a run over two models split 2 ways."""

    parts: list[Path]
    fewer: Path  # part HOLDER run with -n 6
    picked: Path  # part HOLDER run with --sample-id s00
    models: list[Path]  # --model a --model b, --shard 1/2 and 2/2
    models_fewer: Path  # the same, --shard 1/2 -n 4


def _run(*args: str) -> None:
    ran = run_cli("run", *args)
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("merge-parts")
    server = ScriptedServer(agent_script({"q": [text("fine")]})).start()
    try:
        suite = str(write_suite(root, ROWS, base_url=server.url, gate={"value": 0.5},
                                graders={"answer": {"kind": "tool", "function": "contains"}}))
        parts = [root / f"shard-{k}" for k in (1, 2, 3)]
        for k, part in enumerate(parts, 1):
            _run(suite, "--shard", f"{k}/3", "-o", str(part))
        _run(suite, "--shard", f"{HOLDER}/3", "-n", "6", "-o", str(root / "fewer"))
        _run(suite, "--shard", f"{HOLDER}/3", "--sample-id", WRONG, "-o", str(root / "picked"))
        models = [root / f"models-{k}" for k in (1, 2)]
        for k, folder in enumerate(models, 1):
            _run(suite, "--model", "a", "--model", "b", "--shard", f"{k}/2", "-o", str(folder))
        _run(suite, "--model", "a", "--model", "b", "--shard", "1/2", "-n", "4", "-o", str(root / "models-fewer"))
        yield Runs(parts, root / "fewer", root / "picked", models, root / "models-fewer")
    finally:
        server.stop()


def _copies(runs: Runs, tmp: Path) -> list[Path]:
    """The three parts copied, to be edited."""
    return [Path(shutil.copytree(part, tmp / part.name)) for part in runs.parts]


def _lines(part: Path) -> list[str]:
    return (part / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)


def _write_lines(part: Path, lines: list[str]) -> None:
    (part / "results.jsonl").write_text("".join(lines), encoding="utf-8")


def _edit_json(path: Path, edit: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _merge(*folders: Path, out: Path) -> Any:
    return run_cli("merge", *map(str, folders), "-o", str(out))


def test_the_parts_as_run_merge_into_one_verdict(runs: Runs, tmp_path: Path) -> None:
    merged = _merge(*runs.parts, out=tmp_path / "m")
    assert merged.returncode == 0, merged.stdout + merged.stderr  # 6 of 8 right: 0.75 >= 0.5
    assert len(read_jsonl(tmp_path / "m" / "results.jsonl")) == len(ROWS)
    started = json.loads((runs.parts[0] / "run.json").read_text())["started_with"]
    assert started["unsharded_samples"] == len(ROWS)  # the whole run's plan, recorded by each part
    assert started["planned_ids"] == [r["id"] for r in ROWS if in_shard(r["id"], (1, 3))]
    assert json.loads((tmp_path / "m" / "run.json").read_text())["started_with"]["planned_ids"] is None


def test_a_part_that_lost_a_row_gives_no_verdict(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    part = parts[HOLDER - 1]
    lines = _lines(part)
    lost = json.loads(lines[0])["sample_id"]
    _write_lines(part, lines[1:])
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert f"shard {HOLDER} of 3 ({part})" in merged.stderr and f"`{lost}`" in merged.stderr
    assert f"1 of the {len(lines)} results" in merged.stderr and "no verdict" in merged.stderr
    assert not (tmp_path / "m").exists()


def test_a_duplicated_row_is_named_as_one(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    part = parts[HOLDER - 1]
    lines = _lines(part)
    _write_lines(part, [*lines, lines[-1]])
    twice = json.loads(lines[-1])["sample_id"]
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert f"shard {HOLDER} of 3 ({part}): the row `{twice}` repeat 0 appears twice" in merged.stderr
    assert "given twice" not in merged.stderr


def test_a_row_of_another_part_is_refused(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    other = parts[HOLDER % 3]
    stray = _lines(other)[0]
    _write_lines(parts[HOLDER - 1], [*_lines(parts[HOLDER - 1]), stray])
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert f"({parts[HOLDER - 1]}): its results.jsonl holds 1 row its plan does not" in merged.stderr
    assert f"`{json.loads(stray)['sample_id']}`" in merged.stderr


def test_a_refused_merge_leaves_a_given_folder_as_it_was(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    part = parts[HOLDER - 1]
    _write_lines(part, [*_lines(part), _lines(part)[0]])
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    code = _merge(*parts, out=out).returncode
    assert [p.name for p in out.iterdir()] == ["notes.txt"]  # the folder is the user's: only the merge's file goes
    assert code == 3


def test_a_flipped_verdict_disagrees_with_the_part_summary(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    part = parts[HOLDER - 1]
    rows = [json.loads(line) for line in _lines(part)]
    for row in rows:
        if row["sample_id"] == WRONG:
            assert row["passed"] is False
            row["passed"] = True
    _write_lines(part, [json.dumps(row) + "\n" for row in rows])
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert f"shard {HOLDER} of 3 ({part}): its results.jsonl disagrees with its summary.json" in merged.stderr
    assert "`passed` is" in merged.stderr and "`failed` is" in merged.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("other", "field", "value"), [
    ("fewer", "started_with.max_samples", "is 6 where"),
    ("picked", "started_with.sample_ids", f"is ['{WRONG}'] where"),
])
def test_parts_run_with_other_filters_are_refused(runs: Runs, tmp_path: Path, other: str, field: str,
                                                   value: str) -> None:
    odd = getattr(runs, other)
    parts = [odd if k == HOLDER else part for k, part in enumerate(runs.parts, 1)]
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert f"shard {HOLDER} of 3 ({odd}): run.json field `{field}` {value}" in merged.stderr
    assert not (tmp_path / "m").exists()


def test_parts_whose_planned_counts_do_not_add_up_are_refused(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)

    def one_less(data: dict[str, Any]) -> None:
        data["started_with"]["planned_samples"] -= 1

    _edit_json(parts[HOLDER - 1] / "run.json", one_less)
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert f"the parts plan {len(ROWS) - 1} samples between them" in merged.stderr
    assert f"where the run planned {len(ROWS)}" in merged.stderr


def _as_older_evals(data: dict[str, Any]) -> None:
    """run.json as an evals before the whole run's plan and a shard's ids were recorded."""
    for name in ("unsharded_samples", "planned_ids"):
        data["started_with"].pop(name, None)


def test_parts_of_an_older_evals_merge_and_still_miss_no_row(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    for part in parts:
        _edit_json(part / "run.json", _as_older_evals)
    assert _merge(*parts, out=tmp_path / "m").returncode == 0
    part = parts[HOLDER - 1]
    _write_lines(part, _lines(part)[1:])
    lost = _merge(*parts, out=tmp_path / "m2")
    assert lost.returncode == 3, lost.stdout + lost.stderr
    assert f"({part}): 1 of the" in lost.stderr and "1 not named" in lost.stderr


def test_a_part_of_an_older_evals_beside_newer_ones_is_refused(runs: Runs, tmp_path: Path) -> None:
    parts = _copies(runs, tmp_path)
    _edit_json(parts[HOLDER - 1] / "run.json", _as_older_evals)
    merged = _merge(*parts, out=tmp_path / "m")
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert f"({parts[HOLDER - 1]}): run.json field `started_with.unsharded_samples` is not recorded" \
        in merged.stderr


def test_models_side_by_side_must_have_run_one_plan(runs: Runs, tmp_path: Path) -> None:
    first, second = (Path(shutil.copytree(folder, tmp_path / folder.name)) for folder in runs.models)
    assert _merge(first, second, out=tmp_path / "m").returncode == 0
    shutil.rmtree(first / "b")
    shutil.copytree(runs.models_fewer / "b", first / "b")  # model b's first part: run with -n 4
    merged = _merge(first, second, out=tmp_path / "m2")
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert f"model b ({first / 'b'}): run.json field `started_with.max_samples` is 4 where model a has none" \
        in merged.stderr
    assert not (tmp_path / "m2").exists()

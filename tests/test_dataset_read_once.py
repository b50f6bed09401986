"""The dataset is read once at the start of a run: the precheck's read checks every row and keeps the rows the
run will run (the parsed samples while few, else their place in the file), and gives the fingerprint's
digest. So the run runs exactly the rows that were checked: a file changed between the check and the run is
either not read again (rows kept) or refused before the first model call (rows read back); rewritten while the
run reads it back (or reads a large CSV again), the first row that is not the row checked stops the run unrun."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evals_cli.datasets import reader, selected
from evals_cli.datasets.reader import check_dataset
from evals_cli.datasets.selected import SelectedRows
from evals_cli.errors import ConfigError
from evals_cli.output.fingerprint import file_digest
from evals_cli.runner import RunOptions, execute
from evals_cli.runner.prepare import PreparedRun
from evals_cli.runner.run import prepare
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, text


def rows(ids: list[str]) -> list[dict[str, Any]]:
    return [{"id": i, "input": f"question {i}", "ground_truth": "fine", "tags": ["t"] if i.endswith("1") else []}
            for i in ids]


def prepared_run(tmp_path: Path, server: ScriptedServer, ids: list[str], **options: Any) -> PreparedRun:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(ids), base_url=server.url, concurrency=4)
    found = prepare(suite, RunOptions(output=tmp_path / "out", **options))
    assert isinstance(found, PreparedRun)
    return found


def ran(tmp_path: Path) -> list[str]:
    return [line["sample_id"] for line in read_jsonl(tmp_path / "out" / "results.jsonl")]


def overwrite(tmp_path: Path, ids: list[str]) -> None:
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(ids)), encoding="utf-8")


def test_a_small_dataset_is_not_read_again_the_run_runs_the_checked_rows(server: ScriptedServer,
                                                                         tmp_path: Path) -> None:
    prepared = prepared_run(tmp_path, server, ["a0", "a1", "a2"])
    assert prepared.selected is not None and prepared.selected.kept
    overwrite(tmp_path, ["zz"])  # changed after the precheck: the run reads nothing more
    outcome = asyncio.run(execute(prepared))
    assert sorted(ran(tmp_path)) == ["a0", "a1", "a2"] and outcome.summary.total == 3


def test_the_selection_is_kept_in_dataset_order(server: ScriptedServer, tmp_path: Path) -> None:
    prepared = prepared_run(tmp_path, server, [f"s{i}" for i in range(12)], tags=["t"], max_samples=1, repeats=2)
    assert [(str(s.id), r) for s, r in prepared.work()] == [("s1", 0), ("s1", 1)]
    assert prepared.expected == 2


def test_a_large_selection_is_read_back_by_place(server: ScriptedServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selected, "KEEP_SAMPLES", 5)  # the bound, lowered: the read-back path on 30 rows
    ids = [f"s{i:02d}" for i in range(30)]
    prepared = prepared_run(tmp_path, server, ids)
    assert prepared.selected is not None and not prepared.selected.kept
    assert [str(s.id) for s, _ in prepared.work()] == ids
    asyncio.run(execute(prepared))
    assert sorted(ran(tmp_path)) == ids


def test_a_dataset_changed_before_its_rows_are_read_back_is_refused(server: ScriptedServer, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selected, "KEEP_SAMPLES", 5)
    prepared = prepared_run(tmp_path, server, [f"s{i:02d}" for i in range(30)])
    overwrite(tmp_path, [f"x{i:02d}" for i in range(31)])
    with pytest.raises(ConfigError, match="the dataset changed after its rows were checked"):
        asyncio.run(execute(prepared))
    assert server.requests == []  # before the first model call
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_the_digest_comes_from_the_same_read(tmp_path: Path) -> None:
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + b'{"input": "a"}\n\n  \n{"input": "b"}')  # BOM, blank lines, no final \n
    csv = tmp_path / "d.csv"
    csv.write_text('id,input\nr1,"multi\nline"\nr2,b\n', encoding="utf-8")
    array = tmp_path / "d.json"
    array.write_text(json.dumps([{"input": "a"}, {"input": "b"}], indent=1), encoding="utf-8")
    for path in (jsonl, csv, array):
        keep = SelectedRows(path)
        count, problems = check_dataset(path, seen=keep.seen)
        assert count == 2 and problems == [], (path, problems)
        assert keep.digest == file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def test_rows_read_back_are_the_rows_that_were_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selected, "KEEP_SAMPLES", 1)
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"input": "a"}\n\n{"id": 7, "input": "b", "tags": ["x"]}\n{"input": "c"}')
    keep = SelectedRows(path)

    def on_row(sample: Any, where: str, span: Any) -> list[str]:
        keep.add(sample, span)
        return []

    check_dataset(path, on_row=on_row, seen=keep.seen)
    found = keep.rows()
    assert found is not None
    assert [(str(s.id), s.input, s.tags) for s in found] == [("line-1", "a", []), ("7", "b", ["x"]),
                                                            ("line-4", "c", [])]


def rewritten_mid_run(tmp_path: Path, server: ScriptedServer, data: str, body: str,
                      monkeypatch: pytest.MonkeyPatch) -> tuple[PreparedRun, list[str]]:
    """A run of 30 rows read back past the (lowered) bound, whose dataset is rewritten during the first model
    call: every ground truth "fine" becomes "FINE", the file keeps its size. One sample at a time."""
    monkeypatch.setattr(selected, "KEEP_SAMPLES", 5)
    path = tmp_path / data
    calls: list[str] = []

    def script(url: str, request: Any) -> Any:
        if not calls:
            before = path.read_bytes()
            path.write_bytes(before.replace(b"fine", b"FINE"))
            assert path.stat().st_size == len(before)
        calls.append(url)
        return text("fine")

    suite = write_suite(tmp_path, [], base_url=server.url, concurrency=1, dataset=data)
    path.write_text(body, encoding="utf-8")
    found = prepare(suite, RunOptions(output=tmp_path / "out"))
    assert isinstance(found, PreparedRun) and found.selected is not None and not found.selected.kept
    server.script = script
    return found, calls


@pytest.mark.parametrize("data", ["data.jsonl", "data.csv"])
def test_a_dataset_rewritten_mid_run_with_the_same_size_stops_the_run(server: ScriptedServer, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      data: str) -> None:
    ids = [f"s{i:02d}" for i in range(30)]
    pad = "x" * 1000  # rows of 1 KB: the file is several read buffers long, so rows are read from the new file
    if data.endswith(".csv"):
        body = "id,input,ground_truth\n" + "".join(f"{i},question {i} {pad},fine\n" for i in ids)
    else:
        body = "".join(json.dumps({**r, "input": f"{r['input']} {pad}"}) + "\n" for r in rows(ids))
    prepared, calls = rewritten_mid_run(tmp_path, server, data, body, monkeypatch)
    outcome = asyncio.run(execute(prepared))
    # the rows run are rows as checked (read before the rewrite); the first row read back that is not the row the
    # check read is not run, and the run gets no verdict (on main: all 30 ran, "FINE" rows failed, exit 1)
    done = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert 0 < len(done) < 30 and len(calls) == len(done)
    assert [d["sample_id"] for d in done] == ids[:len(done)] and all(d["passed"] for d in done)
    assert outcome.exit_code == 3 and outcome.summary.status == "aborted"
    reason = outcome.summary.abort_reason or ""
    line = len(done) + (1 if data.endswith(".jsonl") else 2)  # the next row's line (a CSV has its header)
    assert f"{data}:{line}: the dataset changed after its rows were checked" in reason, reason
    assert f"the {len(done)} finished results are kept" in reason


def counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every pass over the dataset file (our reader's one entry point), by path."""
    reads: list[Path] = []
    real = reader.rows_with_spans

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(reader, "rows_with_spans", counting)
    return reads


def test_a_run_reads_and_checks_its_dataset_once_from_validation_to_the_end(
        server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = counted_reads(monkeypatch)
    prepared = prepared_run(tmp_path, server, [f"s{i}" for i in range(6)], tags=["t"], max_samples=1)
    assert reads == [tmp_path / "data.jsonl"]  # validate's pass is the run's: no second check pass
    assert prepared.coverage is not None and (prepared.coverage.dataset_rows, prepared.coverage.selected) == (6, 1)
    outcome = asyncio.run(execute(prepared))
    assert len(reads) == 1 and ran(tmp_path) == ["s1"] and outcome.summary.total == 1


def test_the_one_pass_still_checks_the_rows_the_run_filters_out_and_lists_every_problem(
        server: ScriptedServer, tmp_path: Path) -> None:
    """Validate checks every row whatever -n, --tag or --sample-id keep; the run's own refusals (an id that
    matches nothing) come in the same list."""
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, [*rows(["a1", "a2"]), {"id": "bad", "input": 7}], base_url=server.url)
    with pytest.raises(ConfigError) as caught:
        prepare(suite, RunOptions(output=tmp_path / "out", max_samples=1, tags=["t"], sample_ids=["a1", "nope"]))
    shown = "\n".join(caught.value.problems)
    assert f"{tmp_path / 'data.jsonl'}:3" in shown and "input" in shown
    assert "--sample-id nope: matches no sample id" in shown
    assert not (tmp_path / "out").exists() and server.requests == []


def test_rows_read_back_are_parsed_not_checked_again(server: ScriptedServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound the run reads each selected row back; the bytes are the ones the check pass validated (their
    digest says so), so the row's checks do not run a second time: once per row, by the check pass."""
    monkeypatch.setattr(selected, "KEEP_SAMPLES", 2)
    checks: list[str] = []
    real = reader._row_problem

    def counting(raw: Any, where: str) -> str | None:
        checks.append(where)
        return real(raw, where)

    monkeypatch.setattr(reader, "_row_problem", counting)
    prepared = prepared_run(tmp_path, server, [f"s{i}" for i in range(8)])
    assert prepared.selected is not None and not prepared.selected.kept and len(checks) == 8
    outcome = asyncio.run(execute(prepared))
    assert len(checks) == 8 and sorted(ran(tmp_path)) == [f"s{i}" for i in range(8)] and outcome.summary.total == 8


def test_a_row_rewritten_to_other_bytes_is_not_run_even_when_it_reads_the_same(
        server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row read back must be byte for byte the row checked (a same-size edit the stamp misses included)."""
    monkeypatch.setattr(selected, "KEEP_SAMPLES", 2)
    prepared = prepared_run(tmp_path, server, ["a0", "a1", "a2", "a3"])
    path = tmp_path / "data.jsonl"
    stat = path.stat()
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'{"id": "a3", ', b'{"id":"a3",  ')  # same size, same sample, other bytes
    path.write_bytes(b"".join(lines))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a stamp that does not tell
    outcome = asyncio.run(execute(prepared))
    assert sorted(ran(tmp_path)) == ["a0", "a1", "a2"] and outcome.exit_code == 3


def test_a_cache_that_cannot_be_used_is_listed_with_the_suites_problems(tmp_path: Path) -> None:
    """--cache naming a folder: exit 2 naming it, beside the dataset's bad row, with no traceback (the one pass
    collects both; nothing ran, nothing was written)."""
    suite = write_suite(tmp_path, [*rows(["a1"]), {"id": "bad", "input": 7}])
    (tmp_path / "folder").mkdir()
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--cache", str(tmp_path / "folder"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--cache {tmp_path / 'folder'}: is a folder" in result.stderr
    assert f"{tmp_path / 'data.jsonl'}:2" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()

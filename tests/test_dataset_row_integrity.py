"""Every dataset row is either refused (validate and run, exit 2, naming file:line) or run exactly once:
lone surrogates, NaN/Infinity, null or empty ids, nesting past the parser, 5,000-digit numbers and a UTF-8
BOM once made rows vanish from a run or crash it (issue 11 item 7, issue 12 items 10 and 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals_cli.datasets.reader import check_dataset, iter_samples
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text


def _lines(tmp_path: Path, *lines: str | bytes, name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


GOOD = '{"id": "a", "input": "hi"}'


@pytest.mark.parametrize("bad,fragment", [
    ('{"id": "s", "input": "\\ud800"}', "input: holds a lone UTF-16 surrogate"),
    ('{"id": "s", "input": "ok", "rubric_vars": {"x": ["\\udfff"]}}', "rubric_vars.x[0]: holds a lone UTF-16"),
    ('{"id": "\\ud83d", "input": "x"}', "id: holds a lone UTF-16 surrogate"),
    ('{"id": "s", "input": "x", "metadata": {"v": NaN}}', "NaN is not a JSON value"),
    ('{"id": "s", "input": "x", "metadata": {"v": -Infinity}}', "-Infinity is not a JSON value"),
    ('{"id": NaN, "input": "x"}', "NaN is not a JSON value"),
    ('{"id": null, "input": "x"}', "id: is null"),
    ('{"id": "  ", "input": "x"}', "id: is empty"),
    ('{"id": {"a": 1}, "input": "x"}', "id: expected a string or a number, got dict"),
    ('{"id": ' + "7" * 5000 + ', "input": "x"}', "more than 4300 digits"),
    ('{"id": "deep", "input": "x", "metadata": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
])
def test_unusable_row_is_a_problem_at_its_line(tmp_path: Path, bad: str, fragment: str) -> None:
    path = _lines(tmp_path, GOOD, bad, '{"id": "c", "input": "x"}')
    count, problems = check_dataset(path)
    assert count == 2
    assert len(problems) == 1 and problems[0].startswith(f"{path}:2: ") and fragment in problems[0], problems
    assert len(problems[0]) < 400


def test_a_json_array_with_a_lone_surrogate_names_the_item(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('[{"id": "a", "input": "x"}, {"id": "b", "input": "\\ud800"}]', encoding="utf-8")
    count, problems = check_dataset(path)
    assert count == 1 and problems[0].startswith(f"{path}: item 2: input: holds a lone UTF-16")


def test_utf8_bom_is_accepted_in_jsonl_and_json_arrays(tmp_path: Path) -> None:
    jsonl = _lines(tmp_path, b"\xef\xbb\xbf" + GOOD.encode(), b'{"id": "b", "input": "x"}')
    assert [s.id for s in iter_samples(jsonl)] == ["a", "b"]
    array = tmp_path / "data.json"
    array.write_bytes(b'\xef\xbb\xbf[{"id": "a", "input": "x"}]')
    assert [s.id for s in iter_samples(array)] == ["a"]


def test_a_2mb_id_is_cut_in_messages(tmp_path: Path) -> None:
    huge = "i" * 2_000_000
    path = _lines(tmp_path, json.dumps({"id": huge, "input": "x", "oops": 1}),
                  json.dumps({"id": huge, "input": "x"}), json.dumps({"id": huge, "input": "y"}))
    _, problems = check_dataset(path)
    assert problems and all(len(p) < 1000 for p in problems), [len(p) for p in problems]
    assert any("oops" in p for p in problems) and any("duplicate sample id" in p for p in problems)


def test_surrogate_row_is_refused_by_run_not_dropped(server: ScriptedServer, tmp_path: Path) -> None:
    """The reported bug: 3 rows, one with a lone surrogate, ran as '2 samples: 2 passed', exit 0."""
    server.script = agent_script({"a": [text("hi")], "c": [text("hi")]})
    suite = write_suite(tmp_path, [], base_url=server.url)
    _lines(tmp_path, GOOD, '{"id": "b", "input": "\\ud800"}', '{"id": "c", "input": "x"}')
    for command in ("validate", "run"):
        result = run_cli(command, str(suite), "-o", str(tmp_path / "out")) if command == "run" \
            else run_cli(command, str(suite))
        assert result.returncode == 2, result.stdout + result.stderr
        assert "data.jsonl:2" in result.stderr and "surrogate" in result.stderr
    assert server.agent_requests() == []


def test_bom_dataset_runs_every_row_once(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"a": [text("hi")], "b": [text("hi")]})
    suite = write_suite(tmp_path, [], base_url=server.url, graders={"answer": {"kind": "tool", "function": "contains"}})
    _lines(tmp_path, b'\xef\xbb\xbf{"id": "a", "input": "a", "ground_truth": "hi"}',
           b'{"id": "b", "input": "b", "ground_truth": "hi"}')
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(r["sample_id"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")) == ["a", "b"]


@pytest.mark.parametrize("kind", ["openai_chat", "openai_responses"])
def test_a_reply_with_a_lone_surrogate_is_still_one_result(server: ScriptedServer, tmp_path: Path, kind: str) -> None:
    """The model side of the same bug: a reply holding "\\ud800" once aborted the run (exit 3) and lost the
    sample; the text is stored with U+FFFD instead and every sample has its line."""
    server.script = agent_script({"a": [call("read_file", {"path": "\ud800"}), text("bad \ud800 answer")],
                                  "b": [text("ok")]})
    suite = write_suite(tmp_path, [{"id": "a", "input": "a", "ground_truth": "bad"},
                                   {"id": "b", "input": "b", "ground_truth": "ok"}],
                        base_url=server.url, target={"kind": kind},
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert sorted(lines) == ["a", "b"]
    step = lines["a"]["trajectory"]["turns"][0]["steps"]
    assert step[-1]["content"] == "bad \ufffd answer"
    assert step[0]["tool_calls"][0]["arguments"] == {"path": "\ufffd"}

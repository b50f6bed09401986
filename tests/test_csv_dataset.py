"""CSV datasets (letta-evals' and promptfoo's spreadsheets): read as CSV, never as JSONL, with the documented
column mapping (evals_cli/datasets/csv_rows.py), every bad record a problem naming file:line and column, the
good ones around it still read, streamed record by record; and a CSV suite run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals_cli.datasets.reader import check_dataset, iter_rows, iter_samples
from evals_cli.models.sample import Sample
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text


def csv_file(tmp_path: Path, text_or_bytes: str | bytes, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text_or_bytes if isinstance(text_or_bytes, bytes) else text_or_bytes.encode("utf-8"))
    return path


def samples(path: Path) -> list[Sample]:
    return list(iter_samples(path))


def problems(path: Path) -> list[str]:
    return check_dataset(path)[1]


def test_the_column_mapping(tmp_path: Path) -> None:
    path = csv_file(tmp_path, (
        'id,input,ground_truth,tags,rubric_vars,metadata,expected_tool_order,max_steps,category,tier,'
        '__metadata:source,__description\n'
        'q1,"What is 2+2?",4,"math, easy","{""policy"": ""strict""}","{""origin"": ""unit""}",'
        '"calc, check",3,arith,gold,sheet-7,addition\n'
        ',"[""Hi"", ""And the port?""]","[""hello"", ""5432""]","[""t1""]",,,,,,,,\n'))
    first, second = samples(path)
    assert first.id == "q1" and first.input == "What is 2+2?" and first.ground_truth == "4"
    assert first.tags == ["math", "easy"] and first.expected_tool_order == ["calc", "check"]
    assert first.max_steps == 3 and first.category == "arith"
    assert first.rubric_vars == {"policy": "strict", "tier": "gold"}  # a column without a meaning: a rubric var
    assert first.metadata == {"origin": "unit", "source": "sheet-7", "description": "addition"}
    # JSON lists in a cell: a multi-turn conversation, one ground truth per turn (letta-evals' convention)
    assert second.id == "row-2" and second.input == ["Hi", "And the port?"] and second.per_turn
    assert second.ground_truth == ["hello", "5432"] and second.tags == ["t1"]
    assert second.rubric_vars == {"tier": ""} and second.metadata == {}


def test_letta_evals_reward_composition_csv_loads_as_written(tmp_path: Path) -> None:
    """The dataset of letta-evals' examples/reward-composition, byte for byte in its format: quoted JSON with
    doubled quotes and escaped newlines in the rubric_vars column."""
    path = csv_file(tmp_path, (
        'input,rubric_vars\n'
        '"Send me your best version of ASCII art representing cat.","{""reference_ascii"": '
        '"" /\\\\_/\\\\\\n( o.o )\\n > ^ <""}"\n'
        '"Send me your best version of ASCII art representing fish.","{""reference_ascii"": ""  ><(((º>""}"\n'))
    cat, fish = samples(path)
    assert (cat.id, fish.id) == ("row-1", "row-2")
    assert cat.rubric_vars == {"reference_ascii": " /\\_/\\\n( o.o )\n > ^ <"}
    assert fish.rubric_vars == {"reference_ascii": "  ><(((º>"}


def test_sample_id_rubric_path_and_extra_vars_columns_are_letta_evals_spellings(tmp_path: Path) -> None:
    path = csv_file(tmp_path, 'sample_id,input,rubric_path,extra_vars,skill,rubric_vars\n'
                              's-0,hi,rubrics/dog.txt,"{""env"": {""A"": ""1""}}",art,"{""skill"": ""art""}"\n')
    (sample,) = samples(path)
    assert sample.id == "s-0" and sample.rubric == "rubrics/dog.txt"
    # the skill column repeats a rubric var (as letta-evals' skills datasets do): the cell wins, the column is kept
    assert sample.rubric_vars == {"skill": "art"}
    assert sample.metadata == {"extra_vars": {"env": {"A": "1"}}, "skill": "art"}


def test_a_quoted_cell_over_several_lines_and_the_lines_problems_name(tmp_path: Path) -> None:
    path = csv_file(tmp_path, 'id,input,rubric_vars\n'
                              'a,"line one\nline two\nline three",\n'
                              'b,second,{not json}\n'
                              'c,third,\n')
    rows = list(iter_rows(path))
    assert [r[0] for r in rows] == [f"{path}:2", f"{path}:5", f"{path}:6"]  # the record's first line
    good = [r[2] for r in rows if isinstance(r[2], Sample)]
    assert [s.id for s in good] == ["a", "c"] and good[0].input == "line one\nline two\nline three"
    assert problems(path) == [f"{path}:5: column rubric_vars: invalid JSON (at column 2: Expecting property name "
                              'enclosed in double quotes); this column holds JSON (write {""key"": ""value""} '
                              "inside a quoted cell)"]


@pytest.mark.parametrize(("body", "expected"), [
    ("id,input\na,\"[\"\"x\"\" \"\"y\"\"]\"\n", ":2: column input: invalid JSON (at column 6: Expecting ',' "
                                             "delimiter); a cell in [ ] is read as a JSON list"),
    ("id,input,max_steps\na,hi,three\n", ":2: column max_steps: 'three' is not a whole number"),
    ("id,input\na,hi,extra\n", ":2: 3 cells but the header names 2 columns; quote cells that hold commas"),
    ("id,input,tags\na,hi,[1\n", ":2: column tags: invalid JSON"),
    ("id,input\n,\n", None),  # a blank record is skipped
    ("id,input,metadata\na,hi,[1]\n", ":2: sample 'a': metadata: input should be a valid dictionary"),
    ("id,input\na,\"x\"y\"\n", ":2: not a readable CSV record"),
])
def test_bad_records_are_problems_naming_line_and_column(tmp_path: Path, body: str, expected: str | None) -> None:
    path = csv_file(tmp_path, body + "z,fine\n" if not body.endswith(",\n") else body + "z,fine\n")
    found = problems(path)
    if expected is None:
        assert found == []
        return
    assert len(found) == 1 and found[0].startswith(str(path)) and expected in found[0], found


@pytest.mark.parametrize(("header", "expected"), [
    ("question,answer", "the header has no 'input' column (columns: question, answer)"),
    ("input,input", "column 'input' appears twice in the header"),
    ("input,,x", "column 2 has no name"),
    ("input,__expected", "column '__expected' (a promptfoo __expected column) is not read here"),
    ("id,sample_id,input", "give the id in 'id' or 'sample_id', not both"),
])
def test_header_problems(tmp_path: Path, header: str, expected: str) -> None:
    path = csv_file(tmp_path, header + "\na,b,c\n")
    found = problems(path)
    assert any(p.startswith(f"{path}:1: ") and expected in p for p in found), found


def test_bad_utf8_makes_its_record_a_problem_and_the_others_are_read(tmp_path: Path) -> None:
    path = csv_file(tmp_path, b"\xef\xbb\xbfid,input\na,caf\xe9\nb,ok\n")  # a BOM, then latin-1 bytes
    assert [s.id for s in (r[2] for r in iter_rows(path)) if isinstance(s, Sample)] == ["b"]
    assert problems(path) == [f"{path}:2: column input: not valid UTF-8; save the file as UTF-8"]


def test_an_unclosed_quote_is_bounded_and_a_problem(tmp_path: Path) -> None:
    """A quote never closed would swallow the rest of the file into one cell: the csv module's field limit stops
    it, and the record is a problem, not a crash or a silent giant input."""
    path = csv_file(tmp_path, 'id,input\na,"never closed\n' + "filler line\n" * 11_000)
    found = problems(path)
    assert found and found[0].startswith(f"{path}:2: not a readable CSV record")


def test_rows_stream_one_record_at_a_time(tmp_path: Path) -> None:
    # the first record is there before the broken end of the file is reached: nothing reads ahead
    path = csv_file(tmp_path, "id,input\n" + "".join(f"s{i},question {i}\n" for i in range(3_000))
                    + 'bad,"never closed\n' + "x" * 140_000 + "\n")
    rows = iter_rows(path)
    assert next(rows)[2] == Sample(id="s0", input="question 0")
    count, found = check_dataset(path)
    assert count == 3_000 and len(found) == 1 and "not a readable CSV record" in found[0]


def test_duplicate_ids_are_found_in_csv_too(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "id,input\na,x\nb,y\na,z\n")
    assert problems(path) == [f"{path}: duplicate sample id 'a' (rows 2, 4); give every sample a unique id"]


def test_a_csv_suite_validates_and_runs_end_to_end(server: ScriptedServer, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [], base_url=server.url, dataset="data.csv",
                        graders={"answer": {"kind": "match", "function": "contains"}}, gate={"value": 0.5})
    csv_file(tmp_path, 'id,input,ground_truth\nparis,"Capital of France?",Paris\n'
                       'rome,"Capital of Italy?","[""Rome"", ""Roma""]"\n')
    server.script = agent_script({"France": [text("It is Paris.")], "Italy": [text("Milan, I think.")]})
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 0 and "ok: 2 samples" in checked.stdout, checked.stdout + checked.stderr
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["paris"]["passed"] is True and lines["rome"]["passed"] is False


def test_a_bad_csv_record_is_exit_2_naming_file_line_and_column(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [], dataset="data.csv", graders={"answer": {"kind": "match",
                                                                              "function": "contains"}})
    csv_file(tmp_path, 'id,input,rubric_vars\na,hi,"{""x"": 1}"\nb,hi,{oops}\n')
    for command in ("validate", "run"):
        result = run_cli(command, str(suite), *(("-o", str(tmp_path / "out")) if command == "run" else ()))
        assert result.returncode == 2, result.stdout + result.stderr
        assert "data.csv:3: column rubric_vars: invalid JSON" in result.stderr
        assert "invalid JSON at column 1" not in result.stderr and "Traceback" not in result.stderr


def test_the_shipped_letta_csv_dataset_reads() -> None:
    rows = samples(ROOT / "datasets" / "letta" / "ascii_art.csv")
    assert [s.id for s in rows] == ["cat", "fish", "bird"]
    assert all("reference_ascii" in s.rubric_vars for s in rows)
    assert json.dumps(rows[0].rubric_vars)  # plain data, ready for a rubric


def test_a_csv_with_only_a_header_has_no_samples(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "id,input\n\n")
    assert problems(path) == [f"{path}: the dataset has no samples; add one row per sample under the header"]


def test_every_row_field_is_a_column_the_reader_knows() -> None:
    """A row field the CSV reader does not know becomes a rubric variable and is silently ignored: a CSV
    `expected_state` column left final_state n/a and the gate passed an agent that refunded the wrong amount."""
    from evals_cli.datasets.csv_rows import KNOWN
    from evals_cli.models.sample import Sample

    assert set(Sample.model_fields) <= KNOWN


def test_expected_state_and_user_columns_are_row_fields(tmp_path: Path) -> None:
    from evals_cli.datasets.csv_rows import iter_csv

    path = tmp_path / "rows.csv"
    path.write_text('id,input,expected_state,user,success\n'
                    'r1,refund it,"{""records"": {""orders"": {""1"": {""status"": ""refunded""}}}}",'
                    '"{""goal"": ""a refund""}",refund issued\n')
    [(_, _, row, problem)] = list(iter_csv(path))
    assert problem is None and row is not None
    assert row["expected_state"] == {"records": {"orders": {"1": {"status": "refunded"}}}}
    assert row["user"] == {"goal": "a refund"} and row["success"] == "refund issued"
    assert "expected_state" not in row.get("rubric_vars", {})

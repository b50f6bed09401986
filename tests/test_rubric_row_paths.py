"""A rubric path that comes from a dataset row must resolve inside the suite's folder (or a folder the judge's
`rubric_dirs` names): `../../../../etc/passwd`, an absolute path or a symlink out are exit 2 naming the row, and
nothing is read or sent to a judge. Suite-level rubric paths, written by the suite author, stay as they are."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text


def unfenced(text: str) -> str:
    """A judge message as the judge reads it once the data fence around each quoted value is gone."""
    return re.sub(r"</?data-[0-9a-f]{10}>", "", text)

SECRET = "TOP-SECRET-CONTENT"


def judged(body: dict[str, Any]) -> Any:
    return text(json.dumps({"reason": "ok", "score": 8}))


def suite_with_row_rubric(tmp_path: Path, rubric: str, url: str = "http://127.0.0.1:9/v1",
                          **judge: Any) -> Path:
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir(exist_ok=True)
    rows = [{"id": "fine", "input": "db host?", "ground_truth": "localhost"},
            {"id": "sneaky", "input": "db host?", "ground_truth": "localhost", "rubric": rubric}]
    return write_suite(suite_dir, rows, base_url=url, gate={"value": 0.5}, graders={
        "judge": {"kind": "model_judge", "prompt": "Grade: {{ submission }}", **judge}})


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{SECRET} {{{{ submission }}}}", encoding="utf-8")
    return secret


@pytest.mark.parametrize("form", ["relative", "absolute", "bare", "symlink"])
def test_a_row_rubric_outside_the_suite_folder_is_exit_2_naming_the_row(tmp_path: Path, outside: Path,
                                                                      form: str) -> None:
    if form == "relative":
        rubric = "../secret.txt"
    elif form == "absolute":
        rubric = str(outside)
    elif form == "bare":  # no rubric-file suffix: still a path, never sent as the rubric text
        rubric = "../../../../../../../../etc/passwd"
    else:
        (tmp_path / "suite").mkdir()
        (tmp_path / "suite" / "link.txt").symlink_to(outside)
        rubric = "link.txt"
    path = suite_with_row_rubric(tmp_path, rubric)
    for command in ("validate", "run"):
        result = run_cli(command, str(path), "-o", str(tmp_path / "out")) if command == "run" \
            else run_cli(command, str(path))
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "data.jsonl:2" in result.stderr and "sample sneaky" in result.stderr
        assert "resolves outside the suite's folder" in result.stderr
        assert SECRET not in result.stdout + result.stderr


def test_nothing_is_sent_to_the_judge(server: ScriptedServer, tmp_path: Path, outside: Path) -> None:
    server.script = agent_script({"host": [text("localhost")]}, judge=judged)
    path = suite_with_row_rubric(tmp_path, "../secret.txt", server.url)
    assert run_cli("run", str(path), "-o", str(tmp_path / "out")).returncode == 2
    assert server.requests == []


def test_a_row_rubric_inside_the_suite_folder_is_read(server: ScriptedServer, tmp_path: Path) -> None:
    (tmp_path / "suite" / "rubrics").mkdir(parents=True)
    (tmp_path / "suite" / "rubrics" / "mine.j2").write_text("MINE {{ submission }}", encoding="utf-8")
    server.script = agent_script({"host": [text("localhost")]}, judge=judged)
    path = suite_with_row_rubric(tmp_path, "rubrics/mine.j2", server.url)
    result = run_cli("run", str(path), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    bodies = [unfenced(r["body"]["messages"][1]["content"]) for r in server.judge_requests()]
    assert any("MINE localhost" in b for b in bodies)


def test_a_rubric_folder_the_suite_names_is_allowed(server: ScriptedServer, tmp_path: Path) -> None:
    shared = tmp_path / "shared-rubrics"
    shared.mkdir()
    (shared / "team.j2").write_text("TEAM {{ submission }}", encoding="utf-8")
    server.script = agent_script({"host": [text("localhost")]}, judge=judged)
    path = suite_with_row_rubric(tmp_path, "../shared-rubrics/team.j2", server.url, rubric_dirs=["../shared-rubrics"])
    result = run_cli("run", str(path), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert any("TEAM localhost" in unfenced(r["body"]["messages"][1]["content"]) for r in server.judge_requests())
    assert len(read_jsonl(tmp_path / "out" / "results.jsonl")) == 2


def test_suite_level_rubric_paths_stay_as_the_author_wrote_them(server: ScriptedServer, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.j2").write_text("AUTHOR {{ submission }}", encoding="utf-8")
    (tmp_path / "suite").mkdir()
    server.script = agent_script({"host": [text("localhost")]}, judge=judged)
    path = write_suite(tmp_path / "suite", [{"id": "a", "input": "db host?", "ground_truth": "localhost"}],
                       base_url=server.url, gate={"value": 0.5},
                       graders={"judge": {"kind": "model_judge", "rubric": "../elsewhere.j2"}})
    assert run_cli("run", str(path), "-o", str(tmp_path / "out")).returncode == 0
    assert "AUTHOR localhost" in unfenced(server.judge_requests()[0]["body"]["messages"][1]["content"])

"""`evals init`: the scaffolded suite validates, replays offline from its bundled recording, runs against a live
(scripted) endpoint, and init never overwrites a user's files without --force."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals_cli.scaffold import FILES
from tests.helpers import ROOT, load_script, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script

_script = load_script("make_init_recording")  # the script that re-creates the recording
RECORDING: Path = _script.RECORDING
UNREACHABLE = {"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"}  # replay must never need the network


def init(folder: Path, *extra: str, cwd: Path | None = None) -> Any:
    return run_cli("init", str(folder), *extra, cwd=cwd)


def test_init_validate_replay_and_live_run(tmp_path: Path) -> None:
    folder = tmp_path / "starter"
    folder.mkdir()
    created = init(folder)
    assert created.returncode == 0, created.stdout + created.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    for name in FILES:
        assert str(folder / name) in created.stdout
    for command in ("evals validate suite.yaml", "evals run suite.yaml --replay recording.jsonl",
                    "EVAL_AGENT_BASE_URL=", f"cd {folder}"):
        assert command in created.stdout
    assert "scripted agent" in created.stdout.lower()

    validated = run_cli("validate", "suite.yaml", cwd=folder)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "4 samples, 4 graders" in validated.stdout

    # Exit 0: the scripted agent gets 3 of 4 samples right and the gate asks for a pass rate of 0.75. The one it
    # gets wrong (fresh-cancel-unshipped: cancels without listing the orders) fails its required tool_order and
    # its weighted score. Every sample graded, nothing errored, nothing from the network.
    out = tmp_path / "replayed"
    replayed = run_cli("run", "suite.yaml", "--replay", "recording.jsonl", "-o", str(out), cwd=folder,
                       env=UNREACHABLE)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "4 samples: 3 passed, 1 failed, 0 errored" in replayed.stdout
    assert "Gate PASSED" in replayed.stdout
    results = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    assert sorted(results) == sorted(["fresh-order-status", "mid-conversation-cancel", "negative-trivial-question",
                                      "fresh-cancel-unshipped"])
    for sample_id, result in results.items():
        assert result.get("error") in (None, {}), sample_id
        scores = {name: grade["score"] for name, grade in result["grades"].items()}
        assert set(scores) == {"answer", "tool_order", "forbidden_tools", "quality"}, sample_id
        assert None not in scores.values(), sample_id
    assert results["fresh-cancel-unshipped"]["grades"]["tool_order"]["score"] == 0.0

    # The same files against a live endpoint: the scripted agent and judge the recording was made with.
    server = ScriptedServer(_script.deterministic(agent_script(_script.BEHAVIOURS, judge=_script.judge))).start()
    try:
        live = run_cli("run", "suite.yaml", "-o", str(tmp_path / "live"), cwd=folder,
                       env={"EVAL_AGENT_BASE_URL": server.url})
    finally:
        server.stop()
    assert live.returncode == 0, live.stdout + live.stderr
    assert "4 samples: 3 passed, 1 failed, 0 errored" in live.stdout
    assert len(server.agent_requests()) == 9 and len(server.judge_requests()) == 4


def test_a_negative_case_fails_when_the_agent_calls_a_tool(tmp_path: Path) -> None:
    """The negative row is what it says: a tool called for a trivial question fails the sample."""
    folder = tmp_path / "starter"
    assert init(folder).returncode == 0
    behaviours = {**_script.BEHAVIOURS, "What does ETA stand for": [
        _script.call("find_customer", _script.ANA), _script.text("Estimated time of arrival.")]}
    server = ScriptedServer(agent_script(behaviours, judge=_script.judge)).start()
    try:
        live = run_cli("run", "suite.yaml", "-o", str(tmp_path / "live"), cwd=folder,
                       env={"EVAL_AGENT_BASE_URL": server.url})
    finally:
        server.stop()
    assert live.returncode == 1, live.stdout + live.stderr  # 2 of 4 passed: under the gate's 0.75
    results = {r["sample_id"]: r for r in read_jsonl(tmp_path / "live" / "results.jsonl")}
    negative = results["negative-trivial-question"]
    assert negative["passed"] is False and negative["grades"]["forbidden_tools"]["score"] == 0.0


def test_init_into_the_current_folder_by_default(tmp_path: Path) -> None:
    created = run_cli("init", cwd=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    assert "cd " not in created.stdout  # already there
    assert run_cli("validate", "suite.yaml", cwd=tmp_path).returncode == 0


def test_init_creates_a_missing_folder(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b" / "evals"
    created = init(folder)
    assert created.returncode == 0, created.stdout + created.stderr
    assert "(created)" in created.stdout
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    assert run_cli("validate", str(folder / "suite.yaml")).returncode == 0


def test_init_refuses_to_overwrite_and_names_the_files(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text("name: mine\n", encoding="utf-8")
    (tmp_path / "Makefile").write_text("all:\n", encoding="utf-8")
    refused = init(tmp_path)
    assert refused.returncode == 2
    message = refused.stderr
    assert str(tmp_path / "suite.yaml") in message and str(tmp_path / "Makefile") in message
    assert "--force" in message
    assert "rubric.j2" not in message  # only the clashes are named
    # all or nothing: nothing was written, the user's files are untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "suite.yaml"]
    assert (tmp_path / "suite.yaml").read_text(encoding="utf-8") == "name: mine\n"


def test_force_overwrites(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text("name: mine\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("keep me", encoding="utf-8")
    forced = init(tmp_path, "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert (tmp_path / "suite.yaml").read_bytes() == (ROOT / "evals_cli" / "scaffold" / "templates"
                                                      / "suite.yaml").read_bytes()
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "keep me"  # files init does not write stay
    assert run_cli("validate", str(tmp_path / "suite.yaml")).returncode == 0


@pytest.mark.parametrize("clash", ["file", "folder"])
def test_init_refuses_a_target_that_is_not_a_folder_or_a_folder_in_the_way(tmp_path: Path, clash: str) -> None:
    if clash == "file":
        target = tmp_path / "taken"
        target.write_text("x", encoding="utf-8")
        result = init(target, "--force")
    else:
        (tmp_path / "rubric.j2").mkdir()
        target = tmp_path
        result = init(target, "--force")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert not (tmp_path / "suite.yaml").exists()


def test_the_recording_is_reproducible_by_its_script(tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    _script.record(again)
    assert again.read_bytes() == RECORDING.read_bytes()


def test_the_recording_says_it_is_scripted_and_holds_no_local_paths() -> None:
    rows = read_jsonl(RECORDING)
    assert rows and all(r["response"]["model"] == "scripted-agent" for r in rows)  # every reply says so
    text = RECORDING.read_text(encoding="utf-8")
    assert str(ROOT) not in text and "/tmp/" not in text
    for name in ("suite.yaml", "README.md"):
        assert "scripted agent" in (ROOT / "evals_cli" / "scaffold" / "templates" / name).read_text(
            encoding="utf-8").lower().replace("\n", " ").replace("# ", "")

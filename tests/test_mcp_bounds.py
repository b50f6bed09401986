"""What an MCP server can send or leave behind, bounded: a workspace past the read-back bound is an error (never
a false pass of `deleted:`), one message past the size bound errors its sample before the SDK parses it, a
server's helper processes end with it, and workspaces a killed run left are cleaned by the next run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer, agent_script, call, text
from tests.test_mcp import calls_of, demo, mcp_suite, run


@pytest.mark.slow
def test_a_workspace_past_the_file_bound_is_an_error_never_a_pass_of_deleted(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals_cli.mcp import workspace

    monkeypatch.setattr(workspace, "MAX_FILES", 50)  # the same bound, smaller: the test writes 60 files, not 2,060
    server.script = agent_script({"many": [call("many_files", {"count": 60}), text("done")]})
    suite = mcp_suite(tmp_path, server, [{"id": "many", "input": "many", "expected_state": {
        "deleted": ["zzz_must_go.txt"]}}], {"files": demo("--root", "{workspace}")},
        environment={"files": {"zzz_must_go.txt": "nobody touches me"}}, graders={"state": {"kind": "final_state"}})
    code, [line], said = run(tmp_path, suite)
    assert calls_of(line)[0]["result"] == "wrote 60 files"
    assert line["passed"] is not True and line["grades"] == {}, line["grades"]  # not graded on a cut list
    assert line["error"]["category"] == "tool_server"
    assert "more than 50 files" in line["error"]["message"]
    assert code != 0, said

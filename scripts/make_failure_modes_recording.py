"""Re-create suites/failure_modes.recording.jsonl: a scripted agent acts out each failure mode (and the correct
runs) on tests/scripted_server.py, and the real CLI records every model call with --record.

    .venv/bin/python scripts/make_failure_modes_recording.py [OUTPUT]

The replies carry fixed ids and timestamps and the run is sequential (-c 1), so the file is byte-for-byte
reproducible: tests/test_failure_modes.py re-creates it and compares.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: it drives tests/ helpers

from tests.helpers import ROOT, run_cli  # noqa: E402
from tests.scripted_server import Script, ScriptedServer, agent_script, call, last_user, steps_since_user, text  # noqa: E402

SUITE = ROOT / "suites" / "failure_modes.yaml"
RECORDING = ROOT / "suites" / "failure_modes.recording.jsonl"

ENV = {"path": ".env"}
SERVER_YAML = {"path": "config/server.yaml"}
CONFIG = {"directory": "config"}

# Key: a phrase of the sample's user message. Value: the agent's reply at each step (the last one repeats).
BEHAVIOURS: dict[str, list[dict[str, Any]]] = {
    # correct runs
    "It is set in the .env file": [call("read_file", ENV), text("The database host is localhost.")],
    "List the files in the config directory, then": [
        call("list_files", CONFIG), call("read_file", SERVER_YAML), text("The server runs 4 workers.")],
    "Which ports do the database and the server use": [
        call("read_file", ENV, ("read_file", SERVER_YAML)),  # parallel calls in one step
        text("The database listens on port 5432 and the server on port 8080.")],
    "What is 12 times 12": [text("12 times 12 is 144.")],
    # right first move, wrong second move: reads the logging config, then guesses the (right) number
    "Look in the config directory and find": [
        call("list_files", CONFIG), call("read_file", {"path": "config/logging.yaml"}), text("The server runs 4 workers.")],
    # misread tool result: DB_HOST=localhost, reported as 5432
    "Which host does the database run on": [call("read_file", ENV), text("The database host is 5432.")],
    # loop: the same call three times in a row
    "What is the database port? Read it from": [
        call("read_file", ENV), call("read_file", ENV), call("read_file", ENV), text("The database port is 5432.")],
    # A-B-A-B cycle that never ends: cut off at the sample's max_steps
    "The answer is somewhere under config": [
        call("list_files", CONFIG), call("read_file", SERVER_YAML)] * 3,
    # premature stop: never calls the health endpoint
    "check whether its /health endpoint is up": [
        call("read_file", ENV), text("The API is at https://api.example.com/v1 and is most likely up.")],
    # not stopping: done after reading, then overwrites the file anyway
    "Which port does the server listen on? Look in": [
        call("read_file", SERVER_YAML),
        call("write_file", {"path": "config/server.yaml", "content": "server:\n  port: 9090\n  workers: 4"}),
        text("The server listens on port 8080.")],
    # needless tool use on a trivial question
    "What is 7 plus 5": [call("list_files", {"directory": "."}), text("7 plus 5 is 12.")],
    # schema violations: a tool it was not given, malformed JSON, an invented parameter
    "The value is in .env": [
        call("run_shell", {"cmd": "cat .env"}), call("read_file", '{"path": ".env"'),
        call("read_file", {"path": ".env", "encoding": "utf-8"}), text("The database host is localhost.")],
}


def deterministic(script: Script) -> Script:
    """Fixed completion ids, tool-call ids and timestamps, derived from the conversation: the ids go into the
    next request, so random ones would change every request key of the recording."""

    def wrapped(path: str, body: dict[str, Any]) -> Any:
        reply = script(path, body)
        if not isinstance(reply, dict) or "choices" not in reply:
            return reply
        reply = copy.deepcopy(reply)
        tag = hashlib.sha256(f"{last_user(body)}|{steps_since_user(body)}".encode()).hexdigest()[:10]
        reply["id"], reply["created"] = f"chatcmpl-{tag}", 0
        for i, tool_call in enumerate(reply["choices"][0]["message"].get("tool_calls") or []):
            tool_call["id"] = f"call_{tag}_{i}"
        return reply

    return wrapped


def record(output: Path) -> str:
    """Run the suite against the scripted agent, recording to `output` (replaced). Returns the CLI's stdout."""
    output.unlink(missing_ok=True)
    server = ScriptedServer(deterministic(agent_script(BEHAVIOURS))).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_cli("run", str(SUITE), "--record", str(output), "-c", "1", "-o", str(Path(tmp) / "out"),
                             env={"EVAL_AGENT_BASE_URL": server.url})
    finally:
        server.stop()
    if result.returncode not in (0, 1):  # 1: the gate fails, as this suite means it to
        raise SystemExit(f"recording failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDING
    print(record(target))
    print(f"recorded to {target}")

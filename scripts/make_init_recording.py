"""Re-create evals_cli/scaffold/templates/recording.jsonl, the recording `evals init` ships: the scaffolded suite
is written by the real `evals init` into a temporary folder and run by the real CLI with --record against a
scripted agent and a scripted judge on tests/scripted_server.py. No real model is involved, and the scaffold's
README and suite.yaml say so.

    .venv/bin/python scripts/make_init_recording.py [OUTPUT]

The replies carry fixed ids and timestamps and the run is sequential (-c 1), so the file is byte-for-byte
reproducible: tests/test_init.py re-creates it and compares.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: it drives tests/ helpers

from tests.helpers import ROOT, run_cli  # noqa: E402
from tests.scripted_server import (  # noqa: E402
    Script,
    ScriptedServer,
    agent_script,
    call,
    judge_score,
    last_user,
    steps_since_user,
    text,
)

RECORDING = ROOT / "evals_cli" / "scaffold" / "templates" / "recording.jsonl"
MODEL = "scripted-agent"  # what every scripted reply says it is, so the recording cannot pass for a real model

ANA = {"email": "ana@example.com"}
C17 = {"customer_id": "C-17"}
A1001 = {"order_id": "A-1001"}

# Key: a phrase of the sample's latest user message. Value: the agent's reply at each step (the last repeats).
BEHAVIOURS: dict[str, list[dict[str, Any]]] = {
    # fresh task, right: the customer, then the orders, then the answer from the tool result
    "Has my latest order shipped": [
        call("find_customer", ANA), call("list_orders", C17),
        text("Yes: your latest order, A-1002, has shipped and should arrive on March 14.")],
    # mid-conversation, right: the id is already in the conversation, so the next move is the cancellation
    "Please cancel A-1001": [call("cancel_order", A1001), text("Done: order A-1001 is cancelled.")],
    # negative case, right: no tool for a general question
    "What does ETA stand for": [text("ETA stands for estimated time of arrival.")],
    # fresh task, wrong second move: finds the customer, then cancels a guessed id without listing the orders.
    # The answer names the right order, and only tool_order (required) catches the guess.
    "Cancel whichever of my orders": [
        call("find_customer", ANA), call("cancel_order", A1001),
        text("I cancelled order A-1001, the one that had not shipped yet.")],
}

# The scripted judge's verdict, by a phrase of the sample's task (the rubric shows it to the judge).
VERDICTS: dict[str, tuple[float, str]] = {
    "report that order A-1002 has shipped": (10, "scripted verdict: correct, every fact from the tool results"),
    "Cancel order A-1001 straight away": (10, "scripted verdict: cancelled at once, as asked"),
    "Answer a general question directly": (10, "scripted verdict: correct, no tool needed"),
    "cancel the one not shipped yet": (6, "scripted verdict: right order, but its id was guessed, not looked up"),
}


def judge(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted judge: a fixed verdict per sample, found by its task in the rendered rubric."""
    material = json.dumps(body.get("messages") or [])
    for phrase, (score, reason) in VERDICTS.items():
        if phrase in material:
            return judge_score(score, reason)
    raise ValueError("no scripted verdict for this judge request")  # the server turns it into an HTTP 500


def deterministic(script: Script) -> Script:
    """Fixed completion ids, tool-call ids, timestamps and model name, derived from the conversation: the ids go
    into the next request, so random ones would change every request key of the recording."""

    def wrapped(path: str, body: dict[str, Any]) -> Any:
        reply = script(path, body)
        if not isinstance(reply, dict) or "choices" not in reply:
            return reply
        reply = copy.deepcopy(reply)
        seed = json.dumps(body.get("messages") or [], sort_keys=True) if steps_since_user(body) == 0 else ""
        tag = hashlib.sha256(f"{last_user(body)}|{steps_since_user(body)}|{seed}".encode()).hexdigest()[:10]
        reply["id"], reply["created"], reply["model"] = f"chatcmpl-{tag}", 0, MODEL
        for i, tool_call in enumerate(reply["choices"][0]["message"].get("tool_calls") or []):
            tool_call["id"] = f"call_{tag}_{i}"
        return reply

    return wrapped


def record(output: Path) -> str:
    """Scaffold the suite, run it against the scripted agent and judge, recording to `output` (replaced).
    Returns the CLI's stdout."""
    server = ScriptedServer(deterministic(agent_script(BEHAVIOURS, judge=judge))).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "starter"
            init = run_cli("init", str(folder))
            if init.returncode != 0:
                raise SystemExit(f"evals init failed (exit {init.returncode}):\n{init.stdout}\n{init.stderr}")
            output.unlink(missing_ok=True)  # after init, which copies the current one: --record appends
            result = run_cli("run", str(folder / "suite.yaml"), "--record", str(output), "-c", "1",
                             "-o", str(Path(tmp) / "out"), env={"EVAL_AGENT_BASE_URL": server.url})
    finally:
        server.stop()
    if result.returncode != 0:  # the gate passes: 3 of 4 samples, as the scaffold's README says
        raise SystemExit(f"recording failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDING
    print(record(target))
    print(f"recorded to {target}")

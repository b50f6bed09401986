"""Shared test helpers: write a suite + dataset into a temp folder, run the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent

TOOLS = {
    "read_file": {
        "description": "Read a file",
        "parameters": {"path": "File path"},
        "cases": [{"when": {"path": ".env"}, "returns": "DB_HOST=localhost\nDB_PORT=5432"}],
        "error": "file not found",
    },
    "list_files": {"description": "List files", "parameters": {"directory": "Directory"}, "returns": ".env\nsrc/"},
}


def write_suite(tmp: Path, rows: list[dict[str, Any]], *, base_url: str = "http://127.0.0.1:9/v1",
                graders: dict[str, Any] | None = None, **overrides: Any) -> Path:
    """A suite.yaml and data.jsonl under tmp; returns the suite path."""
    (tmp / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite: dict[str, Any] = {
        "name": "test-suite",
        "dataset": "data.jsonl",
        "concurrency": 2,
        "target": {"kind": "openai_chat", "base_url": base_url, "model": "scripted", "api_key": "sk-test",
                   "max_retries": 0, "timeout": 10, "max_steps": 5},
        "tools": TOOLS,
        "graders": graders or {
            "answer": {"kind": "tool", "function": "contains"},
            "order": {"kind": "tool_order"},
            "avoided": {"kind": "tools_avoided"},
        },
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.8},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(suite.get(key), dict):
            suite[key] = {**suite[key], **value}
        else:
            suite[key] = value
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real `evals` command in a subprocess (true exit codes, real stdout/stderr)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_AGENT_", "EVAL_JUDGE_", "OPENAI_"))}
    full_env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "evals_cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or ROOT, timeout=timeout)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

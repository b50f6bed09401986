"""A minimal command-line coding agent, run by evals-cli as a command agent (suites/coding_command.yaml).

It reads {"type": "user", "content": ...} lines on stdin and answers each with one {"type": "assistant", ...}
line on stdout, after a loop of model calls in which the model may run `bash` (a command line, in the current
folder: the episode's /workspace) and `edit` (view, create, str_replace, insert a file there). Its model is any
OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY, AGENT_MODEL. It uses only the standard library,
so any python3 runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

MAX_STEPS = int(os.environ.get("AGENT_MAX_STEPS", "8"))
OUTPUT_LIMIT = 8000  # characters of a command's output the model reads
SYSTEM = ("You are a careful software engineer in a Python repository (your current folder). Use `edit` to view "
          "and change files and `bash` to run commands such as the tests (python3 -m unittest). Fix what you "
          "are asked with the smallest change, run the tests, then say in one sentence what you changed.")
TOOLS = [
    {"type": "function", "function": {
        "name": "bash", "description": "Run a command line with bash -c in the repository; read its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "edit", "description": "view a file, create it (file_text), str_replace old_str (once) with "
        "new_str, or insert new_str after line insert_line.",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
            "path": {"type": "string"}, "file_text": {"type": "string"}, "old_str": {"type": "string"},
            "new_str": {"type": "string"}, "insert_line": {"type": "integer"}},
            "required": ["command", "path"]}}},
]


def chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    base = os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8101/v1").rstrip("/")
    body = {"model": os.environ.get("AGENT_MODEL", "model"), "messages": messages, "tools": TOOLS,
            "temperature": 0}
    request = urllib.request.Request(f"{base}/chat/completions", json.dumps(body).encode(), {
        "Content-Type": "application/json", "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'none')}"})
    with urllib.request.urlopen(request, timeout=float(os.environ.get("AGENT_TIMEOUT", "600"))) as response:
        message: dict[str, Any] = json.loads(response.read())["choices"][0]["message"]
        return message


def inside(path: str) -> Path:
    """A path of the repository; outside it (../, an absolute path elsewhere, a link out) is refused."""
    root = Path.cwd().resolve()
    target = (root / path.removeprefix("/workspace/")).resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"{path} is outside the repository")
    return target


def edit(args: dict[str, Any]) -> str:
    path, command = inside(str(args.get("path", ""))), args.get("command")
    if command == "view":
        lines = path.read_text().split("\n")
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, 1))
    if command == "create":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(args.get("file_text", "")))
        return f"wrote {args['path']}"
    text = path.read_text()
    if command == "str_replace":
        old = str(args.get("old_str", ""))
        if not old or text.count(old) != 1:
            raise ValueError(f"old_str must occur exactly once in {args['path']} (found {text.count(old)} times)")
        path.write_text(text.replace(old, str(args.get("new_str", ""))))
        return f"edited {args['path']}"
    if command == "insert":
        lines = text.split("\n")
        at = int(args.get("insert_line", 0))
        path.write_text("\n".join(lines[:at] + str(args.get("new_str", "")).split("\n") + lines[at:]))
        return f"inserted into {args['path']} after line {at}"
    raise ValueError(f"unknown command {command!r}")


def bash(args: dict[str, Any]) -> str:
    try:
        done = subprocess.run(["bash", "-c", str(args.get("command", ""))], capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return "Error: the command did not finish within 120s"
    out = (done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr else ""))[-OUTPUT_LIMIT:]
    return f"{out}\n[exit code {done.returncode}]"


def act(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    try:
        args = json.loads(function.get("arguments") or "{}")
        if function.get("name") == "bash":
            return bash(args)
        if function.get("name") == "edit":
            return edit(args)
        return f"Error: no tool {function.get('name')!r}"
    except (OSError, ValueError, TypeError) as exc:
        return f"Error: {exc}"


def answer(messages: list[dict[str, Any]]) -> str:
    """Model calls and tool calls until the model answers in text (or the step bound)."""
    for _ in range(MAX_STEPS):
        message = chat(messages)
        calls = message.get("tool_calls") or []
        messages.append({"role": "assistant", "content": message.get("content") or "",
                         **({"tool_calls": calls} if calls else {})})
        if not calls:
            return str(message.get("content") or "")
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": act(call)})
    return "I ran out of steps before finishing."


def main() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for line in sys.stdin:
        event = json.loads(line)
        if event.get("type") != "user":
            continue
        messages.append({"role": "user", "content": str(event.get("content", ""))})
        reply = answer(messages)
        print(json.dumps({"type": "assistant", "content": reply}), flush=True)


if __name__ == "__main__":
    main()

"""What `evals generate` reads before it asks anything: the policy file and the suite whose tools and world the
rows are for (its tools with logic loaded, as a run loads them, so gold actions can be applied). Every problem is
exit 2 naming the file and, for the suite, the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.generate.prompt import Brief

MAX_POLICY_CHARS = 200_000  # a policy longer than this is not a policy a model reads in one request


def read_policy(path: Path) -> str:
    """The policy's text; a missing, unreadable, empty or oversized file is exit 2 naming --from."""
    where = f"--from {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file; give the policy (a text or Markdown file) the rows are "
                          "written from") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it as UTF-8 text ({type(exc).__name__})") from None
    if not text.strip():
        raise ConfigError(f"{where}: the file is empty; write the agent's policy in it")
    if len(text) > MAX_POLICY_CHARS:
        raise ConfigError(f"{where}: {len(text)} characters, over {MAX_POLICY_CHARS}; give the part of the policy "
                          "the rows should test")
    return text


def load_tools_suite(path: Path) -> Any:
    """The suite, with its `python:` tool functions (the agent's and the user's) loaded from its own folders (the
    custom-code policy of a run)."""
    from evals_cli import custom_code
    from evals_cli.suite.loader import load_suite
    from evals_cli.tools.logic import load_logic

    suite = load_suite(path)
    with custom_code.policy(suite.code_roots(), run=True):
        problems = load_logic({"tools": suite.tools, "user_tools": suite.user_tools}, suite.base_dir)
    if problems:
        raise ConfigError([f"{path}: {problem}" for problem in problems])
    return suite


def brief_for(policy: Path, tools: Path | None, kind: str) -> tuple[Brief, Any]:
    """The brief every request shows, and the suite it came from (None without --tools)."""
    if kind not in ("task", "attacker"):
        raise ConfigError(f"--kind {kind}: choose task (users with goals the agent should meet) or attacker "
                          "(red-team users)")
    text = read_policy(policy)
    suite = load_tools_suite(tools) if tools is not None else None
    if suite is None:
        return Brief(text, {}, None, kind), None
    return Brief(text, dict(suite.tools), suite.environment, kind, dict(suite.user_tools)), suite

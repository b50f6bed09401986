"""`evals init`: write a starter suite a new user can run at once, offline, then point at a real endpoint.

The files are shipped verbatim under `templates/` (package data), not generated: what `evals init` writes is
exactly what the tests validate, run and replay, and `recording.jsonl` was recorded from these very files by
scripts/make_init_recording.py. Nothing here is templated, so a suite that works in the repo works after init,
with two exceptions: when `evals` is not on PATH (started as `.venv/bin/evals`), the Makefile's `EVALS ?= evals`
line falls back to the program as it was started, so `make evals` runs where the user typed it; and
`suite.schema.json`, the suite's JSON Schema that suite.yaml's first line points editors at, is generated
(`evals schema`: the installed plug-ins' kinds are in it).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from evals_cli.errors import ConfigError
from evals_cli.invocation import program
from evals_cli.suite_schema import SCHEMA_FILE, schema_text

__all__ = ["FILES", "ScaffoldResult", "next_commands", "scaffold", "schema_text", "template_text"]

# Every file `evals init` writes, in the order it reports them, with what each is for.
FILES: dict[str, str] = {
    "suite.yaml": "the suite: target (EVAL_AGENT_*), mocked tools, graders, gate",
    "suite.schema.json": "its JSON Schema, for editors: completes and checks every key (evals schema)",
    "dataset.jsonl": "4 samples: fresh tasks, a mid-conversation turn, a trivial question that needs no tool",
    "rubric.j2": "the judge's rubric (Jinja2)",
    "recording.jsonl": "a recorded run of a SCRIPTED agent (not a real model), for --replay",
    "Makefile": "make validate | evals | evals-fast | evals-offline (the CI step: make evals)",
    "README.md": "what each file is and how to adapt it",
}


@dataclass(frozen=True)
class ScaffoldResult:
    """What `scaffold` did: the folder (as the user named it) and the files written there, in FILES order."""

    folder: Path
    written: list[Path]
    created_folder: bool


def template_text(name: str) -> str:
    """A shipped template file, read from the installed package (works from a wheel as from the source tree)."""
    return (resources.files(__package__) / "templates" / name).read_text(encoding="utf-8")


SANDBOX_BLOCK = """sandbox:                        # each episode's own machine (docs/sandboxes.md): bubblewrap, no network,
  kind: bwrap                   # nothing of yours visible; setup commands and a command agent run inside
  pids: 256                     # processes at once inside (a fork bomb stops here)
"""


def with_sandbox(suite: str) -> str:
    """The starter suite with a bwrap `sandbox:` block (`evals init --sandbox`), placed before its target."""
    return suite.replace("\ntarget:\n", "\n" + SANDBOX_BLOCK + "\ntarget:\n", 1)


def scaffold(folder: Path, *, force: bool = False, sandbox: bool = False) -> ScaffoldResult:
    """Write the starter suite into `folder` (created when missing). Existing files are never overwritten
    without `force`: a user running init in the wrong folder must lose nothing, so every clash is named before
    anything is written (all or nothing)."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: exists and is not a folder; give a folder to write the suite into")
    targets = [folder / name for name in FILES]
    clashes = [path for path in targets if path.exists() or path.is_symlink()]
    if clashes and not force:
        names = ", ".join(str(path) for path in clashes)
        raise ConfigError(f"{names}: already exist{'s' if len(clashes) == 1 else ''}; evals init overwrites nothing. "
                          f"Run `evals init {folder} --force` to replace {'it' if len(clashes) == 1 else 'them'}, "
                          "or name another folder: `evals init FOLDER`")
    not_files = [path for path in clashes if path.is_dir()]
    if not_files:  # --force replaces files, never a folder of the user's
        raise ConfigError(f"{', '.join(map(str, not_files))}: is a folder, not a file; --force replaces only files")
    # a broken install (or plug-in) fails here, before anything is written
    contents = [schema_text() if name == SCHEMA_FILE else template_text(name) for name in FILES]
    contents[list(FILES).index("Makefile")] = _with_program(contents[list(FILES).index("Makefile")], folder)
    if sandbox:
        contents[0] = with_sandbox(contents[0])
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, content in zip(targets, contents, strict=True):
            if path.is_symlink():  # --force writes a file of its own, not through a link to somewhere else
                path.unlink()
            # newline="" keeps the shipped bytes (LF) on every platform: the recording's keys hash them
            path.write_text(content, encoding="utf-8", newline="")
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot write the suite there: {exc.strerror or exc}") from None
    return ScaffoldResult(folder=folder, written=targets, created_folder=created)


def _with_program(makefile: str, folder: Path) -> str:
    """The Makefile with `evals` found on PATH first (as in CI), else the program this init was started as."""
    started = program(cwd=folder)
    if started == "evals":
        return makefile
    return makefile.replace("EVALS ?= evals\n", f"EVALS ?= $(or $(shell command -v evals),{started})\n", 1)


def next_commands(folder: Path) -> list[tuple[str, str]]:
    """The commands to type after init, each with what it does; run from the scaffolded folder, with the program
    named as it was started (`.venv/bin/evals` is `../.venv/bin/evals` once in a folder below)."""
    steps: list[tuple[str, str]] = []
    if folder.resolve() != Path.cwd().resolve():
        steps.append((f"cd {shlex.quote(str(folder))}", ""))
    evals = program(cwd=folder)
    steps += [
        (f"{evals} validate suite.yaml", "check suite, dataset and rubric; no model calls"),
        (f"{evals} run suite.yaml --replay recording.jsonl", "offline replay of a scripted agent (not a real model)"),
        ("export EVAL_AGENT_BASE_URL=http://localhost:11434/v1 EVAL_AGENT_MODEL=qwen2.5:1.5b",
         "your endpoint and model (EVAL_AGENT_API_KEY if it needs one)"),
        (f"{evals} run suite.yaml", "the real run: exit 0 gate passed, 1 failed"),
    ]
    return steps

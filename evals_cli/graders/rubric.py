"""Jinja2 rubrics, rendered in a sandbox with strict undefined variables.

Templates only: what a judge's rubric is rendered with, read off a sample and its trajectory, is rubric_vars.py's;
the user simulator's prompt renders here with variables of its own."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any


class RubricError(ValueError):
    """A rubric that cannot be parsed or rendered for a sample."""


class RubricLimitError(RubricError):
    """Rendering went past its time or size bound (see rubric_sandbox): the rubric, not the judge, is at fault."""


class RubricPathError(RubricError):
    """A dataset row names a rubric file outside the folders its suite allows (reported per row, file:line)."""


@lru_cache(maxsize=1)
def _environment() -> Any:
    """Jinja2 is imported on first use: suites without a judge never pay for it. The sandbox is bounded in time
    and size (rubric_sandbox)."""
    from evals_cli.graders.rubric_sandbox import BoundedSandbox

    return BoundedSandbox()


@lru_cache(maxsize=64)
def jinja_errors() -> Any:
    import jinja2.exceptions

    return jinja2.exceptions


def compile_rubric(text: str) -> Any:
    """The compiled template (cached: a rubric is rendered once per sample and turn). Compilation folds
    constant expressions, filters included, so it runs under the same bounds as rendering."""
    from evals_cli.graders.rubric_sandbox import RenderLimit, deadline, timeout

    try:
        with deadline(timeout()):
            return _compiled(text)
    except jinja_errors().TemplateSyntaxError as exc:
        raise RubricError(f"line {exc.lineno}: Jinja2 syntax error: {exc.message}") from None
    except RenderLimit as exc:
        raise RubricLimitError(f"compiling stopped: {exc}") from None


def read_template(path: Path, where: str, missing: str) -> str:
    """A user's Jinja2 template file, read and compiled before any model call, so a missing, unreadable or broken
    file is a ConfigError (exit 2) naming `where`; `missing` follows it when the file does not exist."""
    from evals_cli.errors import ConfigError

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}{missing}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it ({type(exc).__name__})") from None
    try:
        compile_rubric(text)
    except RubricError as exc:
        raise ConfigError(f"{where}: {exc}; fix the template") from None
    return text


@lru_cache(maxsize=128)
def _compiled(text: str) -> Any:
    return _environment().from_string(text)


BUILTIN_DIR = Path(__file__).resolve().parent.parent / "rubrics"
_LETTA_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_JINJA_BLOCK = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)


def builtin_rubrics() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.j2"))


def load_rubric(reference: str | None, inline: str | None, base_dir: Path) -> str:
    """The rubric text: inline, `builtin:NAME`, or a file relative to the suite (ValueError when missing)."""
    if inline is not None:
        return inline
    assert reference is not None
    if reference.startswith("builtin:"):
        name = reference.removeprefix("builtin:")
        path = BUILTIN_DIR / f"{name}.j2"
        if not path.is_file():
            raise ValueError(f"unknown built-in rubric '{name}'; built-ins: {', '.join(builtin_rubrics())}")
        return path.read_text(encoding="utf-8")
    try:
        return (base_dir / reference).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"rubric file {reference} cannot be read ({type(exc).__name__}); "
                         "the path is relative to the suite file") from None


ROW_RUBRIC_SUFFIXES = (".j2", ".jinja", ".txt", ".md")


def row_rubric_is_path(text: str) -> bool:
    """A dataset row's `rubric` names a file (or a built-in) when it is one line ending like a rubric file, or
    one line without spaces or template braces holding a path separator (`../../etc/passwd`, `/abs/path`):
    such a value is checked as a path, never sent to the judge as if it were the rubric."""
    if "\n" in text or not text.strip():
        return False
    text = text.strip()
    if text.startswith("builtin:") or text.endswith(ROW_RUBRIC_SUFFIXES):
        return True
    return not any(c.isspace() for c in text) and "{" not in text and ("/" in text or "\\" in text)


def row_rubric_path(reference: str, base_dir: Path, allowed: list[Path]) -> Path:
    """Where a row's rubric file is, after checking it lies inside the suite's folder or one of `allowed` (the
    rubric folders the suite names). Rows are data, often written by others: `../../../../etc/passwd` or an
    absolute path must never be read and sent to a judge. Symlinks are resolved before the check."""
    raw = Path(reference)
    path = (raw if raw.is_absolute() else base_dir / raw).resolve()
    roots = [base_dir.resolve(), *(d.resolve() for d in allowed)]
    if not any(path.is_relative_to(root) for root in roots):
        names = ", ".join(str(r) for r in roots)
        raise RubricPathError(f"rubric {reference!r} resolves outside the suite's folder{'s' if len(roots) > 1 else ''}"
                              f" ({names}); a dataset row may only name rubric files inside them (the suite's "
                              "judge may add folders with rubric_dirs)")
    return path


def load_row_rubric(reference: str, base_dir: Path, allowed: list[Path]) -> str:
    """A row's rubric reference: builtin:NAME, or a file inside the allowed folders (RubricPathError otherwise)."""
    if reference.startswith("builtin:"):
        return load_rubric(reference, None, base_dir)
    path = row_rubric_path(reference, base_dir, allowed)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"rubric file {reference} cannot be read ({type(exc).__name__}); "
                         "the path is relative to the suite file") from None


def is_letta_style(text: str) -> bool:
    """letta-evals rubrics use Python-format placeholders ({input}, {submission}, {ground_truth}) and double
    braces for literal ones. Once doubled braces are set aside, a Jinja2 template has no `{name}` field left
    (`{{ input }}` leaves ` input `), a letta one does; Jinja2 blocks (`{% %}`, `{# #}`) settle it too."""
    without_literals = text.replace("{{", "").replace("}}", "")
    return not _JINJA_BLOCK.search(text) and bool(_LETTA_FIELD.search(without_literals))


@lru_cache(maxsize=128)
def reads_variable(text: str, name: str) -> bool:
    """Whether a rubric uses the variable `name` at all (a letta `{name}` field, or a Jinja2 name it reads).
    A rubric that cannot be parsed is taken to read everything: its render reports the error."""
    if is_letta_style(text):
        return name in _LETTA_FIELD.findall(text.replace("{{", "").replace("}}", ""))
    from jinja2 import meta

    try:
        return name in meta.find_undeclared_variables(_environment().parse(text))
    except Exception:
        return True


def _render_letta(text: str, variables: dict[str, Any]) -> str:
    """Substitute {name} fields only (no attribute access, no format specs: nothing to exploit), each value
    marked as data (see `rubric_parts`)."""
    from evals_cli.graders.rubric_sandbox import mark_data

    protected = text.replace("{{", "\x00").replace("}}", "\x01")

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            available = ", ".join(sorted(variables))
            raise RubricError(f"'{name}' is undefined; available variables: {available} "
                              "(add it to the sample's rubric_vars)")
        value = variables[name]
        return mark_data(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))

    return _LETTA_FIELD.sub(field, protected).replace("\x00", "{").replace("\x01", "}")


Segment = tuple[bool, str]
"""A piece of a rendered rubric: (is it the sample's data, its text)."""


def render_rubric(text: str, variables: dict[str, Any]) -> str:
    """The rubric as plain text (what `evals validate` checks renders, and what tests read)."""
    return "".join(part for _, part in rubric_parts(text, variables))


def rubric_parts(text: str, variables: dict[str, Any]) -> list[Segment]:
    """The rendered rubric in order, its own text (the judge's instructions) apart from every value it printed
    (the sample's data: input, answer, trajectory, ground truth, the row's variables), so that only the data is
    fenced as data. Values are told apart by the marks the renderer puts around each one (rubric_sandbox
    `mark_data`). When a rubric's own filters leave those marks unbalanced (`{% filter reverse %}` around a
    value, a truncate cutting one off), nothing can be told apart and the whole rendering is data: the judge
    then reads less as instructions, never more."""
    from evals_cli.graders.rubric_sandbox import DATA_CLOSE, DATA_OPEN

    source = text.replace(DATA_OPEN, "").replace(DATA_CLOSE, "")  # the marks are the renderer's alone
    return _segments(_render_marked(source, variables), DATA_OPEN, DATA_CLOSE)


def _segments(marked: str, opening: str, closing: str) -> list[Segment]:
    parts: list[Segment] = []
    inside = False
    start = 0
    for mark in re.finditer(f"[{re.escape(opening)}{re.escape(closing)}]", marked):
        if (mark.group() == opening) == inside:  # a mark out of turn: the rubric reshaped its own output
            return [(True, marked.replace(opening, "").replace(closing, ""))]
        if mark.start() > start:
            parts.append((inside, marked[start:mark.start()]))
        inside, start = not inside, mark.end()
    if inside:
        return [(True, marked.replace(opening, "").replace(closing, ""))]
    if start < len(marked):
        parts.append((False, marked[start:]))
    return parts


def _render_marked(text: str, variables: dict[str, Any]) -> str:
    if is_letta_style(text):
        return _render_letta(text, variables)
    from evals_cli.graders.rubric_sandbox import RenderLimit, deadline, render_bounded, timeout

    template = compile_rubric(text)
    try:
        with deadline(timeout()):
            return render_bounded(template, variables)
    except RenderLimit as exc:
        raise RubricLimitError(f"rendering stopped: {exc}") from None
    except MemoryError:
        raise RubricLimitError("rendering stopped: out of memory (EVALS_RUBRIC_MAX_CHARS bounds what a rubric "
                               "may build)") from None
    except jinja_errors().UndefinedError as exc:
        available = ", ".join(sorted(variables))
        raise RubricError(f"{exc.message}; available variables: {available} (add it to the sample's rubric_vars)") \
            from None
    except jinja_errors().SecurityError as exc:
        raise RubricError(f"rubric tried an unsafe operation: {exc}") from None
    except Exception as exc:  # a template error at render time (a filter on the wrong type, ...)
        raise RubricError(f"rendering failed: {type(exc).__name__}: {exc}") from None

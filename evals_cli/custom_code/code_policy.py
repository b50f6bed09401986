"""The policy: which custom files may run at all. A file must lie inside the suite's folder or a folder the suite
lists in `code_dirs` (or, for a python agent named by a `--target` file, that file's folder), as dataset rows'
rubric paths are confined; and `evals validate` only reads them unless asked with `--import-code`.

Apart from the loaders because every loader (grader, gate, target kind, tool function) reads the same rules, set
once per command in a context variable (`policy`), instead of each constructor taking them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class CodePolicy:
    """Where custom files may come from besides the folder their loader is given (the suite's), and whether
    they may run at all (`evals validate` without --import-code only reads them: `read` collects which)."""

    roots: tuple[Path, ...] = ()
    run: bool = True
    read: list[str] = field(default_factory=list)


_POLICY: contextvars.ContextVar[CodePolicy | None] = contextvars.ContextVar("evals_code_policy", default=None)
_DEFAULT_POLICY = CodePolicy()  # no policy set (a grader built from Python): the loader's folder only, and run


def current_policy() -> CodePolicy:
    """The rules in force: the innermost `policy` block's, or the default (the loader's folder only, and run)."""
    return _POLICY.get() or _DEFAULT_POLICY


@contextlib.contextmanager
def policy(roots: Iterable[Path] = (), run: bool = True, read: list[str] | None = None) -> Iterator[None]:
    """Load custom files under these rules while the block runs (a context variable, so that the loaders of
    every grader, gate and target kind read it without each constructor taking two more settings). Files only
    read (not run) are appended to `read`."""
    token = _POLICY.set(CodePolicy(tuple(Path(r).resolve() for r in roots), run, read if read is not None else []))
    try:
        yield
    finally:
        _POLICY.reset(token)


def may_run() -> bool:
    """Whether custom files may be imported now (False under `evals validate` without --import-code)."""
    return current_policy().run


def locate(file_part: str, base_dir: Path, what: str) -> Path:
    """The resolved file of a custom reference's `file.py` part (relative to `base_dir`, the suite's folder),
    after checking that it lies inside that folder or a folder of the policy (symlinks resolved first); ValueError
    naming the file otherwise. A suite is often written by others: `../../elsewhere/x.py` or an absolute path
    must not run code the suite's folder does not hold."""
    raw = Path(file_part).expanduser()
    path = (raw if raw.is_absolute() else base_dir / raw).resolve()
    roots = [base_dir.resolve(), *current_policy().roots]
    if not any(path.is_relative_to(root) for root in roots):
        names = ", ".join(dict.fromkeys(str(r) for r in roots))
        raise ValueError(f"{what} file {file_part} resolves outside the suite's folder{'s' if len(roots) > 1 else ''} "
                         f"({names}); custom code is loaded only from there: move the file into the suite's folder, "
                         "or list its folder in the suite's code_dirs")
    return path

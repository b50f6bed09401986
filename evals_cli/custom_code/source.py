"""Reading source: what `evals validate` learns of a custom file without running it (its code could do anything):
that it is UTF-8 Python that parses and binds the name it is asked for at its top level, and, for a plain
`def`, its signature, so that the caller checks the parameters it will be called with.

Apart from the loaders because it never imports anything: it is the whole of what a file may do to `evals
validate` unless --import-code asks to run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals_cli.custom_code.code_policy import current_policy

PASS_THROUGH = frozenset({"grader", "extractor", "reward_composer"})
"""Decorators that leave a function's signature as it is: evals_cli.grader and letta-evals' (stand-ins)."""


@dataclass(frozen=True)
class StaticDef:
    """What reading a file tells of a function it defines with a plain `def` (undecorated, or decorated only by
    PASS_THROUGH decorators), so that `evals validate` checks its signature without running the file."""

    signature: Any  # inspect.Signature; defaults are placeholders (their values are never evaluated)
    is_async: bool
    decorators: tuple[str, ...]


def check_source(path: Path, name: str, file_part: str, what: str) -> StaticDef | None:
    """Without running it: the file is readable UTF-8 Python that parses and binds `name` at its top level (a
    def, a class, an assignment or an import; a star import is taken on trust). ValueError otherwise. Returns
    the function's static signature when a plain `def` binds it last (None: it cannot be known by reading)."""
    import ast

    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} file {file_part} cannot be read ({type(exc).__name__})") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ValueError(f"{file_part}:{exc.lineno}: {what} file is not valid Python: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"{what} file {file_part} cannot be parsed ({type(exc).__name__})") from None
    if name not in _top_level_names(tree) and not _star_import(tree):
        raise ValueError(f"{file_part} has no function '{name}' at its top level (evals validate reads the file "
                         "without running it; --import-code runs it)")
    current_policy().read.append(f"{file_part}:{name}")
    return _static_def(tree, name)


class _Unread:
    """A default value not evaluated (the file was only read): shown as `...` in messages."""

    def __repr__(self) -> str:
        return "..."


def _static_def(tree: Any, name: str) -> StaticDef | None:
    import ast
    import inspect

    last = None
    for node in tree.body:  # the last statement of the module's own body that binds the name
        bound = _top_level_names(ast.Module(body=[node], type_ignores=[]))
        if name in bound:
            last = node
    if not isinstance(last, ast.FunctionDef | ast.AsyncFunctionDef) or last.name != name:
        return None
    decorators = tuple(ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in last.decorator_list)
    if any(d.rpartition(".")[2] not in PASS_THROUGH for d in decorators):
        return None  # a decorator that may change the signature: only running the file can tell
    args = last.args
    kind = inspect.Parameter
    default = _Unread()  # a placeholder: which parameters have a default is what matters, not its value
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params = [kind(a.arg, kind.POSITIONAL_ONLY if i < len(args.posonlyargs) else kind.POSITIONAL_OR_KEYWORD,
                   default=default if i >= first_default else kind.empty) for i, a in enumerate(positional)]
    if args.vararg is not None:
        params.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    params += [kind(a.arg, kind.KEYWORD_ONLY, default=kind.empty if d is None else default)
               for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        params.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    try:
        signature = inspect.Signature(params)
    except ValueError:  # duplicate names and alike: Python itself would refuse the file
        return None
    return StaticDef(signature, isinstance(last, ast.AsyncFunctionDef), decorators)


def _top_level_names(tree: Any) -> set[str]:
    import ast

    names: set[str] = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):  # bodies still at top level
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, field, []) or [])
            if isinstance(node, ast.With):
                names.update(n.id for item in node.items if item.optional_vars is not None
                             for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
            if isinstance(node, ast.For):
                names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Expr):  # a walrus at top level
            names.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
    return names


def _star_import(tree: Any) -> bool:
    import ast

    return any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) for node in tree.body)

"""The package's layers, checked from the source: no import cycles, and lower layers never reach up.

Every `import` counts, module level or inside a function (a lazy import still ties two modules together);
only imports under `if TYPE_CHECKING:` are left out, since they never run. Run this file directly to print
the cycles and the layering violations (what the restructuring notes measured).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "evals_cli"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except the bodies of `if TYPE_CHECKING:` blocks (their imports never run)."""
    for child in ast.iter_child_nodes(tree):
        yield child
        if isinstance(child, ast.If) and _is_type_checking(child):
            for node in child.orelse:
                yield node
                yield from _nodes(node)
        else:
            yield from _nodes(child)


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (a `from pkg import name` counts pkg.name when that is a module)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = {t for t in _imports(tree, name, path.name == "__init__.py") if t in files and t != name}
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without edges into package __init__ modules that only re-export (they would make every
    `from evals_cli.models import X` look like a cycle through the package)."""
    inits = {name for name in graph if (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()}
    return {name: {t for t in targets if t not in inits} for name, targets in graph.items()}


# (lower layer, layer it must never import): the restructuring's rules
FORBIDDEN = [
    ("evals_cli.models", "evals_cli.graders"),
    ("evals_cli.models", "evals_cli.targets"),
    ("evals_cli.models", "evals_cli.runner"),
    ("evals_cli.models", "evals_cli.endpoints"),
    ("evals_cli.models", "evals_cli.output"),
    ("evals_cli.models", "evals_cli.sessions"),
    ("evals_cli.models", "evals_cli.cli"),
    ("evals_cli.models", "evals_cli.suite"),
    # the suite layer builds its unions by importing every grader and target kind: a kind reaching up into it
    # would be an import cycle at run time
    ("evals_cli.graders", "evals_cli.suite"),
    ("evals_cli.targets", "evals_cli.suite"),
    ("evals_cli.gate", "evals_cli.output"),
    ("evals_cli.gate", "evals_cli.runner"),
    ("evals_cli.output", "evals_cli.runner"),
    ("evals_cli.output", "evals_cli.cli"),
    ("evals_cli.runner", "evals_cli.cli"),
    ("evals_cli.sessions", "evals_cli.cli"),
    ("evals_cli.graders", "evals_cli.runner"),
    ("evals_cli.targets", "evals_cli.runner"),
    # the trace reader is self-contained: the traces target, the dataset reader and `evals analyze` build on it
    ("evals_cli.traces", "evals_cli.targets"),
    ("evals_cli.traces", "evals_cli.runner"),
    ("evals_cli.traces", "evals_cli.datasets"),
    ("evals_cli.traces", "evals_cli.cli"),
]


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} imports {target}" for module, targets in graph.items() for target in targets
                  for low, high in FORBIDDEN if _within(module, low) and _within(target, high))


def test_no_import_cycles() -> None:
    assert cycles(_package_inits(import_graph())) == []


def test_lower_layers_never_import_higher_ones() -> None:
    assert violations(import_graph()) == []


def test_the_checker_sees_a_cycle_and_a_lazy_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from evals_cli.output import files\nif TYPE_CHECKING:\n    import evals_cli.cli\n")
    assert set(_imports(tree, "evals_cli.gate", False)) == {"evals_cli.output", "evals_cli.output.files"}


if __name__ == "__main__":
    graph = import_graph()
    found = cycles(_package_inits(graph))
    print(f"{len(found)} import cycles")
    for component in found:
        print("  " + " <-> ".join(component))
    bad = violations(graph)
    print(f"{len(bad)} layering violations")
    for line in bad:
        print("  " + line)

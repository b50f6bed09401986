"""The package's layers, checked from the source: no import cycles, and lower layers never reach up.

Every `import` counts, module level or inside a function (a lazy import still ties two modules together).
Imports under `if TYPE_CHECKING:` never run, so the run-time cycle check leaves them out; the layers as a
reader sees them (forbidden arrows, the folder knot, the floors) count them too. Run this file directly to print
the cycles and the layering violations (what the restructuring notes measured).
"""

from __future__ import annotations

import ast
import functools
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


def _imports(tree: ast.AST, module: str, is_package: bool, type_checking: bool = False) -> Iterator[str]:
    for node in (ast.walk(tree) if type_checking else _nodes(tree)):
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


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the package modules it imports (a `from pkg import name` counts pkg.name when that is a module);
    `type_checking` counts the imports under `if TYPE_CHECKING:` too: they never run, but a reader follows them
    like any other arrow, so the drawing of the layers (folders, floors) counts them."""
    files = _parsed()
    graph: dict[str, set[str]] = {}
    for name, (path, tree) in files.items():
        targets = {t for t in _imports(tree, name, path.name == "__init__.py", type_checking)
                   if t in files and t != name}
        graph[name] = targets
    return graph


@functools.cache
def _parsed() -> dict[str, tuple[Path, ast.Module]]:
    """Module -> its file and syntax tree, parsed once per process: each check reads the same source (parsing
    the package took about half a CPU-second, paid again by every test of this file)."""
    return {_module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in PACKAGE.rglob("*.py")}


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
    # arrows that ran back up once (issue 25 item 5), each fixed by moving a module to where it belongs
    ("evals_cli.endpoints", "evals_cli.mcp"),
    ("evals_cli.mcp", "evals_cli.suite"),
    ("evals_cli.traces", "evals_cli.sessions"),
    ("evals_cli.output", "evals_cli.suite"),
    ("evals_cli.graders", "evals_cli.output"),
    ("evals_cli.graders", "evals_cli.calibration"),
    ("evals_cli.environment", "evals_cli.graders"),
    ("evals_cli.sessions", "evals_cli.runner"),
    ("evals_cli.environment", "evals_cli.tools"),
    ("evals_cli.tools", "evals_cli.graders"),
    ("evals_cli.graders", "evals_cli.sessions"),
    # the seams that brought the floors from 18 to 12 (issue 25 item 5): each keeps a lower module from standing
    # on a higher one again
    ("evals_cli.regex_patterns", "evals_cli.settings"),  # compiling a pattern needs no time bound
    ("evals_cli.json_schema", "evals_cli.safe_regex"),  # checking a schema matches no text
    ("evals_cli.suite.spec", "evals_cli.graders"),  # the unions come from evals_cli/kinds.py
    ("evals_cli.suite.spec", "evals_cli.targets"),
    ("evals_cli.graders.base", "evals_cli.graders.functions"),  # custom extractors are bound by the builder
    ("evals_cli.graders.base", "evals_cli.endpoints.pool"),  # graders name the ModelClients protocol
    ("evals_cli.graders.rubric", "evals_cli.models.sample"),  # the engine; the variables are rubric_vars.py's
    ("evals_cli.gate", "evals_cli.graders"),  # a custom reward is loaded by the gate's builder
    ("evals_cli.targets.base", "evals_cli.tools"),  # the Episode owns the toolbox
    ("evals_cli.targets.base", "evals_cli.simulation"),
    ("evals_cli.environment.world", "evals_cli.environment.excerpts"),
    ("evals_cli.output", "evals_cli.environment"),  # the runner stores a result's changes, the writer writes
    ("evals_cli.endpoints.replay", "evals_cli.endpoints.recording"),  # both read endpoints/keys.py
    ("evals_cli.traces.conversations", "evals_cli.traces.masking"),  # the reader hands in its cleaner
    ("evals_cli.runner.models_matrix", "evals_cli.runner.execution"),  # the caller hands the matrix its runs
    ("evals_cli.runner.models_matrix", "evals_cli.runner.plan"),
    ("evals_cli.runner.row_checks", "evals_cli.graders.rubric_check"),
    ("evals_cli.matrix_report", "evals_cli.exporters.html"),  # each model's report writer is handed in
    ("evals_cli.history.server", "evals_cli.history.pages"),  # the command hands the server its pages
    ("evals_cli.history.render", "evals_cli.history.runs"),
    ("evals_cli.sessions.graders", "evals_cli.sessions.analysis"),  # the run's analyser is handed in: analyses once
    # `evals generate` is a library of its own beside the run: it checks rows with the run's pieces (the row model,
    # the gold actions, the client pool), never with the runner, and never reaches up into the command
    ("evals_cli.generate", "evals_cli.runner"),
    ("evals_cli.generate", "evals_cli.cli"),
]


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} imports {target}" for module, targets in graph.items() for target in targets
                  for low, high in FORBIDDEN if _within(module, low) and _within(target, high))


def test_no_import_cycles() -> None:
    assert cycles(_package_inits(import_graph())) == []


def test_no_import_cycles_even_through_type_checking_imports() -> None:
    assert cycles(_package_inits(import_graph(type_checking=True))) == []


def test_lower_layers_never_import_higher_ones() -> None:
    """TYPE_CHECKING imports count: an annotation naming a higher layer still ties the lower one to it."""
    assert violations(import_graph(type_checking=True)) == []


def _folder(module: str) -> str | None:
    """The room a module is drawn in at folder granularity: its top-level folder under evals_cli/, or itself
    (None for the package's face, evals_cli/__init__.py, which only hands names on)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    return parts[1] + ("/" if (PACKAGE / parts[1]).is_dir() else "")


def folder_graph() -> dict[str, set[str]]:
    """Folder (or top-level module) -> the folders it imports, TYPE_CHECKING imports included."""
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph(type_checking=True).items():
        room = _folder(module)
        if room is not None:
            graph.setdefault(room, set()).update(
                other for target in targets if (other := _folder(target)) not in (None, room))
    return graph


def floors(graph: dict[str, set[str]]) -> int:
    """How many floors an acyclic graph stands on: a module stands one floor above everything it imports."""
    memo: dict[str, int] = {}
    climbing: set[str] = set()

    def floor(node: str) -> int:
        if node not in memo:
            assert node not in climbing, f"{node} is on an import cycle: no floors to count"
            climbing.add(node)
            memo[node] = 1 + max((floor(t) for t in graph.get(node, ())), default=0)
            climbing.discard(node)
        return memo[node]

    return max((floor(node) for node in graph), default=0)


# No knot of folders: each folder's imports reach only folders below it, so an order of floors keeps every arrow
# pointing down. The last knot was untied when the recorded-session graders moved from graders/kinds/ into
# sessions/ (issue 25 item 4): graders/ no longer reads sessions/, which builds on the graders.
# the longest chain of imports between modules, lazy and TYPE_CHECKING imports included: at most 12 (issue 25; it
# was 18). One of today's longest chains: pytest_plugin > testing > runner.run > runner.execution > targets.episode >
# simulation.loop > simulation.player > models.sample > models.tools > models.effects > registry > errors
MODULE_FLOORS = 12


def test_no_folder_knot() -> None:
    assert cycles(folder_graph()) == []


def test_the_module_floors_only_go_down() -> None:
    assert floors(_package_inits(import_graph(type_checking=True))) <= MODULE_FLOORS


def test_the_checker_sees_a_cycle_and_a_lazy_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from evals_cli.output import files\nif TYPE_CHECKING:\n    import evals_cli.cli\n")
    assert set(_imports(tree, "evals_cli.gate", False)) == {"evals_cli.output", "evals_cli.output.files"}
    assert "evals_cli.cli" in set(_imports(tree, "evals_cli.gate", False, type_checking=True))
    assert floors({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == 3


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
    print(f"folder knots: {cycles(folder_graph())}")
    print(f"module floors: {floors(_package_inits(import_graph(type_checking=True)))}")

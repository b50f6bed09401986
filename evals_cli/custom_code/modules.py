"""Locating modules: custom code named `module:attr` (`acme_graders.checks:fn`) comes from an installed module,
not a file of the suite. It is not confined to the suite's folders, but it is imported under the same guard
(`import_module_guarded`), and `evals validate` without --import-code only checks that it can be found
(`find_module`, which imports nothing).

Apart from the files of the suite (code_policy.py confines those, source.py reads them) because a module is
found through the import system, and finding one must not run its packages' code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from evals_cli.custom_code.code_policy import current_policy
from evals_cli.custom_code.containment import CustomCodeError, import_guarded, register_file
from evals_cli.custom_code.source import StaticDef, check_source


def is_module_ref(ref: str) -> bool:
    """`package.module:attr`: custom code from an installed module, where a suite may also write `file.py:attr`."""
    module, sep, attr = ref.rpartition(":")
    return bool(sep) and attr.isidentifier() and not module.endswith(".py") \
        and all(part.isidentifier() for part in module.split("."))


def find_module(name: str) -> Any:
    """The ModuleSpec of an installed module, found without running any code (importlib.util.find_spec would
    import the parent packages of a dotted name); None when it is not installed."""
    import importlib.machinery
    import importlib.util

    parts = name.split(".")
    if parts[0] in sys.modules and len(parts) == 1:
        return getattr(sys.modules[parts[0]], "__spec__", None)
    found = importlib.util.find_spec(parts[0])
    for depth in range(1, len(parts)):
        if found is None or found.submodule_search_locations is None:
            return None
        found = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth + 1]),
                                                         list(found.submodule_search_locations))
    return found


def import_module_guarded(ref: str, what: str) -> Any:
    """The attribute `module:attr` names, its module imported under the guard (exits refused: a load error);
    ValueError naming the reference and how to fix it when the module is missing, fails to import or lacks it."""
    import importlib

    name, _, attr = ref.rpartition(":")
    found = find_module(name)
    if found is None:
        raise ValueError(f"{what} {ref}: no module '{name}' is installed (a path to a file of the suite must end "
                         "in .py: path/to/file.py:function); install the package that provides it, or fix the name")
    if found.origin:
        register_file(found.origin)  # its frames count as custom code's for the exit guard
    imported: list[Any] = []
    try:
        import_guarded(lambda: imported.append(importlib.import_module(name)), f"{what} {ref}")
    except CustomCodeError as exc:
        raise ValueError(f"{what} {ref}: importing {name} failed: it {exc.did} at import; custom code cannot end "
                         "the run") from None
    except Exception as exc:  # the module's code: report, never crash
        raise ValueError(f"{what} {ref}: importing {name} failed: {type(exc).__name__}: {exc}") from None
    value = getattr(imported[0], attr, None)
    if value is None:
        raise ValueError(f"{what} {ref}: module {name} has no attribute '{attr}'")
    return value


def check_module(ref: str, what: str) -> StaticDef | None:
    """`evals validate` without --import-code: the module of `module:attr` can be found (nothing is run);
    ValueError otherwise. When it is a .py source, it is read as a suite's file is (`check_source`)."""
    name, _, attr = ref.rpartition(":")
    found = find_module(name)
    if found is None:
        raise ValueError(f"{what} {ref}: no module '{name}' is installed (a path to a file of the suite must end "
                         "in .py: path/to/file.py:function); install the package that provides it, or fix the name")
    origin = Path(found.origin) if found.origin and found.origin.endswith(".py") else None
    if origin is None or not origin.is_file():
        current_policy().read.append(ref)
        return None
    return check_source(origin, attr, ref, what)


"""A suite's own Python, named as 'file.py:name' or 'package.module:name', found and run under the custom-code
guard (evals_cli/custom_code/). Custom graders, extractors, rewards and tool functions all load theirs here, so
each is confined, imported once and reported the same way; and the tools need not reach up into the graders."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals_cli import custom_code


@dataclass(frozen=True)
class NotImported:
    """What `load_object` returns for a file it only read (`evals validate` without --import-code): the file is
    inside the allowed folders, parses and names the function; `static` is the function's signature as read
    (None when only running the file could tell it)."""

    static: custom_code.StaticDef | None



StandIns = Callable[[str], None]
"""Called with a custom file's source before it runs, to put stand-in packages it imports into sys.modules (the
graders pass letta-evals' stand-ins: evals_cli.models.grader_specs.letta_python `install_if_imported`)."""


def load_object(ref: str, base_dir: Path, what: str, stand_ins: StandIns | None = None) -> tuple[Any, Path]:
    """(the object, its resolved file) named by 'path/to/file.py:name', relative to the suite's folder, or by
    'package.module:name' (an installed module: imported, not confined; (the object, the reference)). The file
    runs as code, once per process, under the custom-code guard (evals_cli/custom_code/): only files the suite
    names, inside its folder (or `code_dirs`), are run; exiting or interrupting at import is a load error. When
    the policy forbids running code (`evals validate` without --import-code) the file is only read: (NotImported,
    its file). `stand_ins`: see `StandIns` (a file loaded once keeps what it got the first time)."""
    if custom_code.is_module_ref(ref):  # an installed module: not a file of the suite, never confined to its folder
        if not custom_code.may_run():
            return NotImported(custom_code.check_module(ref, what)), Path(ref)
        value = custom_code.import_module_guarded(ref, what)
        return value, Path(ref)  # the reference itself names it uniquely (CUSTOM_EXTRACTORS' key)
    file_part, _, func_name = ref.rpartition(":")
    path = custom_code.locate(file_part, base_dir, what)
    if not path.is_file():
        raise ValueError(f"{what} file {file_part} not found (relative to the suite file)")
    if not custom_code.may_run():
        return NotImported(custom_code.check_source(path, func_name, file_part, what)), path
    module_name = f"evals_custom_{abs(hash(str(path)))}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        custom_code.register_file(path)
        try:
            loader = spec.loader
            custom_code.import_guarded(lambda: _run_module(loader, module, stand_ins), f"{what} {file_part}")
        except custom_code.CustomCodeError as exc:  # it exited or raised KeyboardInterrupt at import
            del sys.modules[module_name]
            raise ValueError(f"{file_part}: importing failed: it {exc.did} at import; custom code cannot end the "
                             "run") from None
        except Exception as exc:  # the user's code: report, never crash
            del sys.modules[module_name]
            hint = ""
            if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in ("letta_evals",
                                                                                         "letta_client"):
                hint = ("; evals-cli stands in for letta-evals' decorators, GradeResult, RewardOutput, Sample and "
                        "its text extractors, not for what needs a Letta server; drop that import (a custom grader "
                        "may take @evals_cli.grader, extractors and rewards are plain functions)")
            raise ValueError(f"{file_part}: importing failed: {type(exc).__name__}: {exc}{hint}") from None
    fn = getattr(module, func_name, None)
    if fn is None:
        raise ValueError(f"{file_part} has no function '{func_name}'")
    return fn, path.resolve()


def _run_module(loader: Any, module: Any, stand_ins: StandIns | None) -> None:
    if stand_ins is not None:
        stand_ins(loader.get_source(module.__name__) or "")
    loader.exec_module(module)

"""suite.yaml -> SuiteSpec: safe YAML, env expansion, strict validation, every problem with file:line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evals_cli.errors import ConfigError
from evals_cli.models.specs import SuiteSpec, cross_check_raw
from evals_cli.suite.envvars import expand
from evals_cli.suite.problems import Loc, format_validation_error


def read_text(path: Path, what: str) -> str:
    """Read a user file as UTF-8, turning every failure into a ConfigError that names the file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found; check the path") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a {what} file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8 (byte {exc.start}); save the file as UTF-8") from None


def _line_map(node: yaml.Node, path: Loc = (), lines: dict[Loc, int] | None = None) -> dict[Loc, int]:
    lines = {} if lines is None else lines
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _line_map(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*path, i), lines)
    return lines


def parse_yaml(text: str, where: str) -> tuple[Any, dict[Loc, int]]:
    """Safe-load YAML and remember the line of every key, for messages."""
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{where}{line}: YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: YAML error: {exc}") from None
    return data, (_line_map(node) if node is not None else {})


def line_finder(lines: dict[Loc, int]):
    """The line of a key path, or of its nearest ancestor that exists in the file."""

    def line_of(path: Loc) -> int | None:
        for cut in range(len(path), -1, -1):
            if path[:cut] in lines:
                return lines[path[:cut]]
        return None

    return line_of


def load_suite(path: str | Path) -> SuiteSpec:
    """Load and validate a suite file; raises ConfigError listing every problem."""
    path = Path(path)
    where = str(path)
    text = read_text(path, "suite file")
    data, lines = parse_yaml(text, where)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of suite keys (name, dataset, target, graders, ...), "
                          f"got {type(data).__name__}")
    line_of = line_finder(lines)
    env_problems: list[tuple[Loc, str]] = []
    data = expand(data, (), env_problems)
    problems = [f"{where}:{line_of(p)}: {'.'.join(map(str, p))}: {msg}"
                for p, msg in [*env_problems, *cross_check_raw(data)]]
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        problems.extend(format_validation_error(exc, SuiteSpec, where, line_of))
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    spec._base_dir = path.resolve().parent
    return spec

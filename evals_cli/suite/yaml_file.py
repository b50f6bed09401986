"""Reading the YAML files users write (suites, target files, recorded-session suites): UTF-8 or a ConfigError
naming the file, bounded against alias bombs and deep nesting, `${VAR}` expanded, and every key's line kept for
messages. It stands below the suite model, so what only reads a file (which pipeline a suite is for, the sessions
reader) does not stand on every grader and target kind the suite model is built from."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from evals_cli.errors import ConfigError
from evals_cli.suite.envvars import expand
from evals_cli.suite.problems import NOT_FINITE, Loc, clip, non_finite_paths


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


MAX_YAML_VALUES = 100_000
"""How many values a YAML file may hold once its aliases are expanded. A suite has hundreds; a few aliases
nested in each other (the "billion laughs") expand to billions, which once took `validate` past 2 GB and 60 s."""


MAX_YAML_DEPTH = 100
"""How deeply YAML values may nest. A suite needs a handful of levels (a logical gate a few more); 5,000 levels
once ended in `internal error: RecursionError`."""

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: its scanner is linear in nesting
"""libyaml when PyYAML was built with it (the pure-Python scanner is quadratic in flow nesting: 5,000 `[` took
seconds before failing); the constructor is the same safe one either way."""


def _expanded_size(root: yaml.Node, where: str) -> None:
    """Refuse a node graph whose aliases expand past MAX_YAML_VALUES, or that nests deeper than MAX_YAML_DEPTH,
    naming the line of the first value past the bound. Each node is sized once (memoised), so the check itself
    costs the file's size; the depth bound keeps this recursion (and the constructor's) far from Python's."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int = 0) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        if depth > MAX_YAML_DEPTH:
            raise _too_deep(node.start_mark.line, where)
        total = 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                total += size(key, depth + 1) + size(value, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item, depth + 1)
        if total > MAX_YAML_VALUES:
            raise ConfigError(f"{where}:{node.start_mark.line + 1}: the YAML holds more than {MAX_YAML_VALUES:,} "
                              "values once aliases are expanded (an alias bomb, or a very large suite); alias less, "
                              "or move large data such as a big environment into the dataset rows")
        sizes[id(node)] = total
        return total

    size(root)


def _too_deep(line: int, where: str) -> ConfigError:
    return ConfigError(f"{where}:{line + 1}: YAML nested more than {MAX_YAML_DEPTH} levels deep; a suite needs "
                       "only a few levels")


def _refuse_deep_text(text: str, where: str) -> None:
    """Raise evals-cli's own depth error when the text nests past MAX_YAML_DEPTH, else return.

    Called only after libyaml refused a file: newer libyaml releases stop deep nesting with their own message
    (PyYAML 6.0.4 at 1,000 levels), and the limit users are told must not depend on which one is installed.
    The pure-Python parser has no depth limit of its own and reads events with a bounded look-ahead, so this
    pass stops at the first value past the bound, without composing (or recursing into) anything."""
    events = yaml.SafeLoader(text)
    depth = 0
    try:
        while events.check_event():
            event = events.get_event()
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise _too_deep(event.start_mark.line if event.start_mark else 0, where)
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return  # the syntax error the caller already holds is the one to report
    finally:
        events.dispose()


def _duplicate_keys(root: yaml.Node, where: str) -> list[str]:
    """Keys written twice in one mapping (YAML lets the last silently win): one problem per duplicate, naming
    both lines. Read from the composed nodes, before `<<` merges add their keys."""
    problems: list[str] = []
    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key, value in node.value:
                stack.append(value)
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    continue
                line = key.start_mark.line + 1
                if key.value in first:
                    problems.append(f"{where}:{line}: key '{clip(str(key.value), 80)}' is written twice (lines "
                                    f"{first[key.value]} and {line}); YAML would silently keep the last one: "
                                    "remove or rename one")
                else:
                    first[key.value] = line
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return sorted(problems, key=lambda p: int(p[len(where) + 1:].split(":", 1)[0]))


def parse_yaml(text: str, where: str, problems: list[str] | None = None) -> tuple[Any, dict[Loc, int]]:
    """Safe-load YAML and remember the line of every key, for messages. Bounded: an alias bomb or nesting past
    the parser's recursion is a ConfigError at its line, not a hang or an internal error. Duplicate keys are
    added to `problems` when given (the caller lists them with everything else)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _expanded_size(node, where)
            if problems is not None:
                problems.extend(_duplicate_keys(node, where))
        data = loader.construct_document(node) if node is not None else None
        lines = _line_map(node) if node is not None else {}
    except yaml.MarkedYAMLError as exc:
        _refuse_deep_text(text, where)
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{where}{line}: YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: YAML error: {exc}") from None
    except ValueError as exc:  # the constructor's int(): a number past Python's digit limit
        found = re.search(rf"\d{{{sys.get_int_max_str_digits() + 1},}}", text)
        at = f":{text.count(chr(10), 0, found.start()) + 1}" if found else ""
        what = (f"a number has more than {sys.get_int_max_str_digits()} digits, more than Python reads"
                if found else f"a value cannot be read ({clip(str(exc), 100)})")
        raise ConfigError(f"{where}{at}: YAML {what}; quote it to make it a string") from None
    except RecursionError:  # the pure-Python composer, past Python's own recursion limit
        _refuse_deep_text(text, where)
        depth_line: int | None = getattr(loader, "line", None)
        raise ConfigError(f"{where}{f':{depth_line + 1}' if depth_line is not None else ''}: YAML nested more "
                          f"than {MAX_YAML_DEPTH} levels deep; a suite needs only a few levels") from None
    finally:
        loader.dispose()
    return data, lines


def line_finder(lines: dict[Loc, int]) -> Callable[[Loc], int | None]:
    """The line of a key path, or of its nearest ancestor that exists in the file."""

    def line_of(path: Loc) -> int | None:
        for cut in range(len(path), -1, -1):
            if path[:cut] in lines:
                return lines[path[:cut]]
        return None

    return line_of


def problem_at(where: str, line_of: Callable[[Loc], int | None], path: Loc, message: str) -> str:
    line = line_of(path)
    field = clip(".".join(map(str, path)), 160)  # a 2 MB key must not become 2 MB of terminal output
    return f"{where}:{line}: {field}: {message}" if line else f"{where}: {field}: {message}"


def read_yaml_mapping(path: Path, what: str, expected: str, text: str | None = None,
                      ) -> tuple[dict[str, Any], dict[Loc, int], list[str]]:
    """A YAML file that must be a mapping, with `${VAR}` expanded: (data, key lines, problems of missing
    variables, each at its line). Every file kind the CLI reads goes through here; `text`: the file as read
    already (suite/source.py), so it is not opened again."""
    data, lines, duplicates, env_problems = read_yaml_mapping_at_paths(path, what, expected, text=text)
    line_of = line_finder(lines)
    return data, lines, duplicates + [problem_at(str(path), line_of, p, msg) for p, msg in env_problems]


def read_yaml_mapping_at_paths(path: Path, what: str, expected: str, defaults: dict[Loc, str] | None = None,
                               text: str | None = None,
                               ) -> tuple[dict[str, Any], dict[Loc, int], list[str], list[tuple[Loc, str]]]:
    """read_yaml_mapping with the variable and non-finite problems still at their key paths, so that a caller
    replacing a block (the suite's target, by --target FILE) can drop the problems of what it replaced; the key
    paths whose value is a `${VAR:-default}` default go into `defaults` when given."""
    where = str(path)
    duplicates: list[str] = []
    data, lines = parse_yaml(read_text(path, what) if text is None else text, where, duplicates)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected {expected}, got {type(data).__name__}")
    env_problems: list[tuple[Loc, str]] = []
    data = expand(data, (), env_problems, defaults=defaults)
    env_problems += [(p, NOT_FINITE) for p in non_finite_paths(data)]
    return data, lines, duplicates, env_problems

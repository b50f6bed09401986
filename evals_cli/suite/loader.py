"""suite.yaml -> SuiteSpec: safe YAML, env expansion, strict validation, every problem with file:line."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from evals_cli.errors import ConfigError
from evals_cli.mcp.spec import McpServerSpec
from evals_cli.models.base import StrictModel
from evals_cli.models.specs import JudgeSpec, cross_check_raw
from evals_cli.models.tools import ToolSpec, tool_name_problem
from evals_cli.suite.envvars import expand
from evals_cli.suite.letta import letta_reason, remap_lines, rename_fields, translate
from evals_cli.suite.problems import NOT_FINITE, Loc, clip, format_validation_error, non_finite_paths
from evals_cli.suite.spec import DEFAULT_TARGET, SuiteSpec, TargetSpec
from evals_cli.targets.base import TARGETS


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


@dataclass(frozen=True)
class TargetOverride:
    """An OpenAI-compatible agent named on the command line (`--target FILE`, or `--base-url`/`--model`).

    letta-evals suites describe agents on a Letta server, which cannot run here: the override gives the agent
    to test instead, leaving the suite file as it is. `--target FILE` also points any suite at another agent.
    """

    file: Path | None = None
    base_url: str | None = None
    model: str | None = None


def _located(where: str, line_of: Callable[[Loc], int | None], path: Loc, message: str) -> str:
    line = line_of(path)
    field = clip(".".join(map(str, path)), 160)  # a 2 MB key must not become 2 MB of terminal output
    return f"{where}:{line}: {field}: {message}" if line else f"{where}: {field}: {message}"


def read_yaml_mapping(path: Path, what: str, expected: str) -> tuple[dict[str, Any], dict[Loc, int], list[str]]:
    """A YAML file that must be a mapping, with `${VAR}` expanded: (data, key lines, problems of missing
    variables, each at its line). Every file kind the CLI reads goes through here."""
    data, lines, duplicates, env_problems = _read_mapping(path, what, expected)
    line_of = line_finder(lines)
    return data, lines, duplicates + [_located(str(path), line_of, p, msg) for p, msg in env_problems]


def _read_mapping(path: Path, what: str, expected: str) -> tuple[dict[str, Any], dict[Loc, int], list[str],
                                                                 list[tuple[Loc, str]]]:
    """read_yaml_mapping with the variable and non-finite problems still at their key paths, so that a caller
    replacing a block (the suite's target, by --target FILE) can drop the problems of what it replaced."""
    where = str(path)
    duplicates: list[str] = []
    data, lines = parse_yaml(read_text(path, what), where, duplicates)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected {expected}, got {type(data).__name__}")
    env_problems: list[tuple[Loc, str]] = []
    data = expand(data, (), env_problems)
    env_problems += [(p, NOT_FINITE) for p in non_finite_paths(data)]
    return data, lines, duplicates, env_problems


def load_suite(path: str | Path, target: TargetOverride | None = None) -> SuiteSpec:
    """Load and validate a suite file (this project's format or letta-evals'); raises ConfigError listing every
    problem, each at the line the user wrote. `target` is the command line's agent, passed explicitly by every
    caller that has one (`evals run`, `evals validate`, `evals_cli.run`)."""
    path = Path(path)
    where = str(path)
    data, lines, problems, env_problems = _read_mapping(path, "suite file",
                                                        "a mapping of suite keys (name, dataset, target, graders, ...)")
    written_line_of = line_finder(lines)
    written = len(problems)
    moves: list[tuple[Loc, Loc]] = []
    letta_target = False
    letta_file = letta_reason(data) is not None
    if letta_file:
        translation = translate(data)
        data, moves, letta_target = translation.data, translation.moves, translation.letta_target
        problems += [_located(where, written_line_of, p, msg) for p, msg in translation.problems]
    written_blocks = {key: data.get(key) for key in ("target", "judge")}
    problems += _apply_target(data, target, letta_target, where, written_line_of)
    # a block the command line replaced whole (--target FILE's target, and its judge) is never read: its
    # variables are not needed, and a missing one is no problem (issue 24, item 8)
    replaced = {key for key, block in written_blocks.items() if key in data and data[key] is not block}
    kept = [_located(where, written_line_of, p, msg) for p, msg in env_problems if not (p and p[0] in replaced)]
    problems[written:written] = kept  # listed where they were: after duplicate keys, before the rest
    line_of = line_finder(remap_lines(lines, moves))
    problems += [_located(where, line_of, p, msg) for p, msg in _tool_name_problems(data)]
    problems += rename_fields([_located(where, line_of, p, msg) for p, msg in cross_check_raw(data)], where, moves)
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        problems.extend(rename_fields(format_validation_error(exc, SuiteSpec, where, line_of), where, moves))
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    spec._base_dir = path.resolve().parent
    spec._letta_format = letta_file
    if target is not None and target.file is not None:  # its python agent lives beside it: may be loaded
        spec._target_dir = target.file.resolve().parent
    return spec


def _apply_target(data: dict[str, Any], override: TargetOverride | None, letta_target: bool, where: str,
                  line_of: Callable[[Loc], int | None]) -> list[str]:
    """Put the command line's agent in place of the suite's target; a Letta target without one is an error."""
    if override is not None and override.file is not None:
        try:
            blocks = load_target_file(override.file)
        except ConfigError as exc:
            data["target"] = {"kind": "openai_chat"}  # check the rest of the suite all the same
            return exc.problems
        handles = _model_handles(data.get("target")) if letta_target else None
        data.update({k: v for k, v in blocks.items() if k not in ("tools", "mcp_servers")})
        if handles and not {"model", "models"} & set(blocks["target"]) and _target_has(blocks["target"], "models"):
            data["target"] = {**data["target"], "models": handles}  # letta-evals' model matrix, run model by model
        if isinstance(blocks.get("judge"), dict):
            _redirect_judges(data, blocks["judge"])
        if blocks.get("mcp_servers"):  # added to the suite's, the file's winning a name both use
            written_servers = data.get("mcp_servers")
            data["mcp_servers"] = {**(written_servers if isinstance(written_servers, dict) else {}),
                                   **blocks["mcp_servers"]}
        if blocks.get("tools"):
            written = data.get("tools")
            suite_tools: dict[str, Any] = written if isinstance(written, dict) else {}
            data["tools"] = {**suite_tools, **blocks["tools"]}
        return []
    if not letta_target:
        return []
    if override is not None and (override.base_url or override.model):
        data["target"] = {"kind": "openai_chat", **{k: v for k, v in (("base_url", override.base_url),
                                                                      ("model", override.model)) if v}}
        return []
    kind = data["target"].get("kind")
    what = f"{kind} is a letta-evals target" if kind else "this is a letta-evals target"
    data["target"] = {"kind": "openai_chat"}  # validate the rest of the suite all the same
    return [_located(where, line_of, ("target", "kind") if kind else ("target",),
                     f"{what} (an agent on a Letta server), which evals-cli cannot run; give the OpenAI-compatible "
                     "agent to test with --target FILE (a YAML file holding a target block) or --base-url URL (with "
                     "--model NAME unless the endpoint serves exactly one model)")]


JUDGE_ENDPOINT_KEYS = ("model", "base_url", "api_key")


def _redirect_judges(data: dict[str, Any], judge: dict[str, Any]) -> None:
    """A --target file's judge block wins over every judge grader's own model, base_url and api_key (and its
    panel members'): a letta-evals suite names its hosted judge on each grader (`model: gpt-4.1-mini`), and the
    file that swaps the agent for a local one must be able to swap the judge too. Only what the block sets is
    replaced; a grader's `provider` goes with a replaced model or base URL (it named where the old model lived).
    Only --judge-* on the command line rank higher (endpoints/resolve.py `resolve_judge`)."""
    redirect = {k: judge[k] for k in JUDGE_ENDPOINT_KEYS if judge.get(k) not in (None, "")}
    graders = data.get("graders")
    if not redirect or not isinstance(graders, dict):
        return
    for grader in graders.values():
        if not isinstance(grader, dict) or grader.get("kind") != "model_judge":
            continue
        grader.update(redirect)
        if "model" in redirect or "base_url" in redirect:
            grader.pop("provider", None)
        panel = grader.get("panel")
        for member in panel if isinstance(panel, list) else []:
            if isinstance(member, dict):
                member.update(redirect)


def _model_handles(target: Any) -> list[str] | None:
    """letta-evals' `model_handles` on a Letta target: the models its suite runs, one run each."""
    handles = target.get("model_handles") if isinstance(target, dict) else None
    if isinstance(handles, list) and handles and all(isinstance(h, str) and h for h in handles):
        return list(handles)
    return None


def _target_has(target: dict[str, Any], field: str) -> bool:
    """Whether the target kind of a --target file has `field` (the translation only fills what it can hold)."""
    kind = target.get("kind", DEFAULT_TARGET)
    entry = TARGETS.get(kind) if isinstance(kind, str) else None
    return entry is not None and entry.spec is not None and field in entry.spec.model_fields


def _tool_name_problems(data: dict[str, Any]) -> list[tuple[Loc, str]]:
    """Tool names endpoints would reject (spaces, over 64 characters, anything outside [a-zA-Z0-9_-]): every
    request of the run would fail, so say it at validation, at the tool's line."""
    tools = data.get("tools")
    if not isinstance(tools, dict):
        return []
    return [(("tools", name), problem) for name in tools if (problem := tool_name_problem(name)) is not None]


class TargetFile(StrictModel):
    """What a `--target` file may hold: the agent, and what letta-evals suites have no place for."""

    target: TargetSpec = Field(description="The agent under test (any target kind).")
    tools: dict[str, ToolSpec] = Field(default_factory=dict, description="Mocked tools, added to the suite's.")
    mcp_servers: dict[str, McpServerSpec] = Field(default_factory=dict, description="MCP servers, added to the "
                                                  "suite's (the file's win a name both use).")
    judge: JudgeSpec | None = Field(default=None, description="The judge endpoint: replaces the suite's judge block "
                                    "and wins over every judge grader's own model, base_url and api_key (only "
                                    "--judge-* rank higher).")


_target_file_generation = 0


def _refresh_target_file() -> None:
    """TargetFile holds the target union too: rebuilt when the suite's was (a kind registered since)."""
    global _target_file_generation
    from evals_cli.suite import spec

    if spec.refresh() != _target_file_generation:
        spec.retype(TargetFile, {"target": spec.TargetSpec})
        _target_file_generation = spec.generation


def load_target_file(path: Path) -> dict[str, Any]:
    """A `--target` file: a bare target block (kind, base_url, model, system_prompt_file, ...), or a mapping with
    `target:` and optionally `tools:` and `judge:`. Checked on its own, so a mistake names this file and line;
    a relative system_prompt_file is relative to this file."""
    where = str(path)
    data, lines, problems = read_yaml_mapping(path, "target file", "a target block (kind, base_url, model, ...) "
                                              "or a mapping with target: (and optionally tools:, judge:)")
    line_of = line_finder(lines)
    wrapped = "target" in data
    blocks = data if wrapped else {"target": data}
    problems += [_located(where, line_of, p, msg) for p, msg in _tool_name_problems(blocks)]
    _refresh_target_file()
    try:
        TargetFile.model_validate(blocks)
    except ValidationError as exc:
        located = line_of if wrapped else (lambda loc: line_of(tuple(loc[1:])))
        problems.extend(format_validation_error(exc, TargetFile, where, located))
    if problems:
        raise ConfigError(problems)
    target = dict(blocks["target"])
    prompt_file = target.get("system_prompt_file")
    if isinstance(prompt_file, str) and not Path(prompt_file).expanduser().is_absolute():
        target["system_prompt_file"] = str(path.resolve().parent / prompt_file)
    callable_ref = target.get("callable")  # a python agent: its file is relative to this file too
    if isinstance(callable_ref, str) and ":" in callable_ref:
        file_part, _, function = callable_ref.rpartition(":")
        if not Path(file_part).expanduser().is_absolute():
            target["callable"] = f"{path.resolve().parent / file_part}:{function}"
    return {**blocks, "target": target}

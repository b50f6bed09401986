"""suite.yaml -> SuiteSpec: safe YAML, env expansion, strict validation, every problem with file:line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from evals_cli.errors import ConfigError
from evals_cli.mcp.spec import McpServerSpec
from evals_cli.models.base import StrictModel
from evals_cli.models.specs import JudgeSpec, cross_check_raw
from evals_cli.models.tools import NO_RESULT, ToolSpec, tool_name_problem
from evals_cli.suite.actors import shared_names
from evals_cli.suite.letta import letta_reason, remap_lines, rename_fields, translate
from evals_cli.suite.problems import Loc, format_validation_error
from evals_cli.suite.source import SuiteSource
from evals_cli.suite.spec import DEFAULT_TARGET, SuiteSpec, current_unions
from evals_cli.suite.yaml_file import (
    line_finder,
    problem_at,
    read_yaml_mapping,
    read_yaml_mapping_at_paths,
)
from evals_cli.targets.base import TARGETS


@dataclass(frozen=True)
class TargetOverride:
    """An OpenAI-compatible agent named on the command line (`--target FILE`, or `--base-url`/`--model`).

    letta-evals suites describe agents on a Letta server, which cannot run here: the override gives the agent
    to test instead, leaving the suite file as it is. `--target FILE` also points any suite at another agent.
    """

    file: Path | None = None
    base_url: str | None = None
    model: str | None = None


def load_suite(path: str | Path | SuiteSource, target: TargetOverride | None = None) -> SuiteSpec:
    """Load and validate a suite file (this project's format or letta-evals'); raises ConfigError listing every
    problem, each at the line the user wrote. `target` is the command line's agent, passed explicitly by every
    caller that has one (`evals run`, `evals validate`, `evals_cli.run`). A `SuiteSource` is the file as read
    already by the start of a run."""
    text = path.text() if isinstance(path, SuiteSource) else None
    path = path.path if isinstance(path, SuiteSource) else Path(path)
    where = str(path)
    defaults: dict[Loc, str] = {}
    data, lines, problems, env_problems = read_yaml_mapping_at_paths(path, "suite file",
                                                        "a mapping of suite keys (name, dataset, target, graders, ...)",
                                                        defaults, text=text)
    written_line_of = line_finder(lines)
    written = len(problems)
    moves: list[tuple[Loc, Loc]] = []
    letta_target = False
    letta_file = letta_reason(data) is not None
    if letta_file:
        translation = translate(data)
        data, moves, letta_target = translation.data, translation.moves, translation.letta_target
        problems += [problem_at(where, written_line_of, p, msg) for p, msg in translation.problems]
    written_blocks = {key: data.get(key) for key in ("target", "judge")}
    problems += _apply_target(data, target, letta_target, where, written_line_of)
    # a block the command line replaced whole (--target FILE's target, and its judge) is never read: its
    # variables are not needed, and a missing one is no problem (issue 24, item 8)
    replaced = {key for key, block in written_blocks.items() if key in data and data[key] is not block}
    kept = [problem_at(where, written_line_of, p, msg) for p, msg in env_problems if not (p and p[0] in replaced)]
    problems[written:written] = kept  # listed where they were: after duplicate keys, before the rest
    line_of = line_finder(remap_lines(lines, moves))
    problems += [problem_at(where, line_of, p, msg) for p, msg in _tool_name_problems(data)]
    problems += rename_fields([problem_at(where, line_of, p, msg) for p, msg in cross_check_raw(data)], where, moves)
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        problems.extend(rename_fields(format_validation_error(exc, SuiteSpec, where, line_of), where, moves))
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    spec._base_dir = path.resolve().parent
    spec._letta_format = letta_file
    spec._defaults = {p: name for p, name in defaults.items() if not (p and p[0] in replaced)}
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
    return [problem_at(where, line_of, ("target", "kind") if kind else ("target",),
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
    out: list[tuple[Loc, str]] = []
    for block in ("tools", "user_tools"):
        tools = data.get(block)
        if isinstance(tools, dict):
            out += [((block, name), problem) for name in tools if (problem := tool_name_problem(name)) is not None]
    return out + _user_tool_problems(data)


_ANSWERS = ("returns", "cases", "sequence", "error", "effect", "python")


def _user_tool_problems(data: dict[str, Any]) -> list[tuple[Loc, str]]:
    """A user tool or MCP server named like the agent's (suite/actors.py), and a user tool that answers nothing:
    no row can bring its own version of it, as a row can of an agent tool."""
    user_tools = data.get("user_tools")
    out: list[tuple[Loc, str]] = [*shared_names(data.get("tools"), user_tools, data.get("mcp_servers"),
                                                data.get("user_mcp_servers"))]
    if not isinstance(user_tools, dict):
        return out
    return out + [(("user_tools", name), f"user_tools.{name}: the tool {NO_RESULT}")
                  for name, spec in user_tools.items()
                  if isinstance(spec, dict) and not any(key in spec for key in _ANSWERS)]

if TYPE_CHECKING:
    from evals_cli.suite.spec import TargetSpec
else:
    TargetSpec = current_unions()[1]  # the kinds registered so far: every kind before a --target file is read


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
    problems += [problem_at(where, line_of, p, msg) for p, msg in _tool_name_problems(blocks)]
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

"""letta-evals suite files, mapped onto this project's schema before validation.

A translation layer rather than a second schema: one validator, one set of error messages and one runner
serve both formats, and what letta-evals says differently (`num_runs`, `kind: rubric`, `kind: tool`, `prompt_path`,
`metric:`, `conditions:`, `pass_threshold`, `reward:`) is renamed here. Every rename is recorded as a move
(original key path -> new key path) so that the loader can point errors at the line the user wrote, under
the name the user wrote. Letta targets (agents on a Letta server) cannot run here; the loader swaps them for
an OpenAI-compatible target given on the command line (see `evals_cli.suite.loader.TargetOverride`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

Loc = tuple[Any, ...]

LETTA_TARGET_KINDS = ("agent", "letta_agent", "letta_code")
# keys only a Letta target has (agent sources, model matrices, letta-code options)
LETTA_TARGET_KEYS = frozenset({
    "agent_id", "agent_file", "agent_script", "model_configs", "model_handles", "project_id", "working_dir",
    "sandbox", "allowed_tools", "disallowed_tools", "flags", "permission_mode", "memory_workspace", "memory_dir",
})
RENAMED_SUITE_KEYS = {"num_runs": "repeats", "max_concurrent": "concurrency"}
# letta-evals run settings with nothing to do here: where results go is -o, agents are not created or cleaned
# up, and nothing runs in a sandbox (tools are mocked)
DROPPED_SUITE_KEYS = frozenset({"output", "cleanup", "sandbox", "dataset_provenance"})
# judge settings of letta-evals' own LLM client; retries and timeout come from the suite's judge block here
# (`provider` and `system_prompt` are model_judge fields, kept because `_judge_has` finds them)
DROPPED_JUDGE_KEYS = ("max_retries", "timeout")
TOOL_NAME_EXTRACTORS = ("tool_arguments", "tool_output")


@dataclass
class Translation:
    """The suite as this project's schema reads it, and how it got there."""

    data: dict[str, Any]
    moves: list[tuple[Loc, Loc]] = field(default_factory=list)
    problems: list[tuple[Loc, str]] = field(default_factory=list)  # paths as the user wrote them
    letta_target: bool = False

    def move(self, old: Loc, new: Loc) -> None:
        self.moves.append((old, new))


def letta_reason(data: dict[str, Any]) -> str | None:
    """Why a suite reads as letta-evals format (None when it is this project's own)."""
    target = data.get("target")
    if isinstance(target, dict):
        if target.get("kind") in LETTA_TARGET_KINDS:
            return f"target.kind {target['kind']}"
        letta_keys = sorted(LETTA_TARGET_KEYS.intersection(target))
        if letta_keys:
            return f"target.{letta_keys[0]}"
    for key in ("reward", "num_runs", "setup_script", "max_concurrent", "cleanup"):
        if key in data:
            return key
    graders = data.get("graders")
    for name, grader in (graders.items() if isinstance(graders, dict) else ()):
        if isinstance(grader, dict) and grader.get("kind") in ("rubric", "letta_judge"):
            return f"graders.{name}.kind {grader['kind']}"
        if isinstance(grader, dict) and "prompt_path" in grader and not _judge_has("prompt_path"):
            return f"graders.{name}.prompt_path"
    gate = data.get("gate")
    if isinstance(gate, dict):
        if "kind" not in gate and ("metric_key" in gate or "metric" in gate):
            return "gate.metric_key" if "metric_key" in gate else "gate.metric"
        if _gate_mentions(gate, ("conditions", "pass_threshold")):
            return "gate.conditions" if _gate_mentions(gate, ("conditions",)) else "gate.pass_threshold"
    return None


def _gate_mentions(gate: Any, keys: tuple[str, ...]) -> bool:
    if not isinstance(gate, dict):
        return False
    if any(k in gate for k in keys):
        return True
    subs = gate.get("conditions", gate.get("gates"))
    return isinstance(subs, list) and any(_gate_mentions(s, keys) for s in subs)


def is_letta_target(target: Any, letta_file: bool) -> bool:
    """A target this project cannot run: a Letta kind, Letta-only keys, or (in a letta file) no kind and
    no model (letta-evals' current targets default to letta_code and name models in model_handles)."""
    if not isinstance(target, dict):
        return False
    kind = target.get("kind")
    if kind is not None:
        return kind in LETTA_TARGET_KINDS
    return bool(LETTA_TARGET_KEYS.intersection(target)) or (letta_file and "model" not in target)


def translate(data: dict[str, Any]) -> Translation:
    """Map a letta-evals suite (any era: gate or reward) onto this project's schema."""
    t = Translation(copy.deepcopy(data))
    out = t.data
    t.letta_target = is_letta_target(out.get("target"), letta_file=True)
    _suite_keys(t, out)
    graders = out.get("graders")
    if isinstance(graders, dict):
        for name, grader in graders.items():
            if isinstance(grader, dict):
                _grader(t, grader, ("graders", name))
    if "reward" in out:
        _reward(t, out, [str(g) for g in graders] if isinstance(graders, dict) else [])
    gate = out.get("gate")
    if isinstance(gate, dict):
        names = [str(g) for g in graders] if isinstance(graders, dict) else []
        out["gate"] = _gate(t, gate, ("gate",), ("gate",), names)
    return t


def _suite_keys(t: Translation, out: dict[str, Any]) -> None:
    for old, new in RENAMED_SUITE_KEYS.items():
        if old not in out:
            continue
        if new in out:
            t.problems.append(((old,), f"give {old} (letta-evals) or {new}, not both"))
        else:
            out[new] = out[old]
            t.move((old,), (new,))
        del out[old]
    for key in DROPPED_SUITE_KEYS.intersection(out):
        del out[key]
    if "setup_script" in out:
        t.problems.append((("setup_script",), "setup_script is not supported: evals-cli runs no Python before a "
                           "suite (in letta-evals it prepares a Letta server); remove it, and give the agent what "
                           "it needs through mocked tools or the target's system prompt"))
        del out["setup_script"]


def _reward(t: Translation, out: dict[str, Any], graders: list[str]) -> None:
    """`reward: {kind: metric, metric_key}` (letta-evals' current format) becomes a simple gate on that grader.
    letta-evals rewards carry no threshold: the gate's defaults apply (avg_score ≥ 0.7) unless the file also
    has a gate block, which then decides."""
    reward = out.pop("reward")
    if "gate" in out:
        return
    if not isinstance(reward, dict):
        t.problems.append((("reward",), "expected a mapping {kind: metric, metric_key: GRADER}"))
        return
    kind = reward.get("kind", "metric")
    if kind == "custom":
        _custom_reward(t, out, reward)
        return
    if kind != "metric":
        t.problems.append((("reward", "kind"), f"unknown reward kind '{kind}'; letta-evals rewards are metric or "
                           "custom"))
        return
    extra = sorted(set(reward) - {"kind", "metric_key"})
    if extra:
        t.problems.append((("reward", extra[0]), f"unknown key '{extra[0]}' in a metric reward; it has kind and "
                           "metric_key"))
        return
    if "metric_key" not in reward:
        t.problems.append((("reward",), "a metric reward needs metric_key (the grader whose score is the reward)"
                           + (f"; graders: {', '.join(graders)}" if graders else "")))
        return
    out["gate"] = {"kind": "simple", "metric_key": reward["metric_key"]}
    t.move(("reward",), ("gate",))


def _custom_reward(t: Translation, out: dict[str, Any], reward: dict[str, Any]) -> None:
    """`reward: {kind: custom, function: file.py:func}` becomes a custom gate: the function combines each
    sample's grades into its reward, a sample passes at a reward ≥ 0.7 (the gate's default, letta-evals has no
    threshold) and the run when 70% of the samples pass."""
    extra = sorted(set(reward) - {"kind", "function"})
    if extra:
        t.problems.append((("reward", extra[0]), f"unknown key '{extra[0]}' in a custom reward; it has kind and "
                           "function"))
        return
    if "function" not in reward:
        t.problems.append((("reward",), "a custom reward needs function: path/to/file.py:function (relative to "
                           "the suite)"))
        return
    out["gate"] = {"kind": "custom", "function": reward["function"]}
    t.move(("reward",), ("gate",))


def _grader(t: Translation, grader: dict[str, Any], path: Loc) -> None:
    kind = grader.get("kind")
    if kind == "rubric":
        grader["kind"] = kind = "model_judge"
    if kind == "tool":  # letta-evals' name for a function grader; ours is match (tool is its deprecated alias
        grader["kind"] = kind = "match"  # in this project's own suites, noted by evals validate; not here)
    if kind == "letta_judge":
        t.problems.append(((*path, "kind"), "letta_judge grades with a Letta agent, which evals-cli cannot run; "
                           "use kind: model_judge (an LLM judge on an OpenAI-compatible endpoint)"))
        return
    if "display_name" in grader and not _grader_has(kind, "display_name"):
        _rename(t, grader, path, "display_name", "description")
    _extractor(t, grader, path)
    if kind == "match" and grader.get("function") == "regex_match" and "case_sensitive" not in grader:
        grader["case_sensitive"] = True  # letta-evals' regex_match is case-sensitive, ours ignores case by default
    if kind == "model_judge":
        _judge(t, grader, path)


def _judge(t: Translation, grader: dict[str, Any], path: Loc) -> None:
    if "prompt_path" in grader and not _judge_has("prompt_path"):
        _rename(t, grader, path, "prompt_path", "rubric")
    if "scale" not in grader and _judge_has("scale"):
        grader["scale"] = "0-1"  # letta-evals judges answer with a score in [0, 1]
    if "rubric_vars" in grader and not _judge_has("rubric_vars"):
        # letta-evals' list of variables every sample must give; the rubric names them itself, and a
        # sample without one is reported by `evals validate` when the rubric is rendered
        del grader["rubric_vars"]
    for key in DROPPED_JUDGE_KEYS:
        if key in grader and not _judge_has(key):
            del grader[key]


def _extractor(t: Translation, grader: dict[str, Any], path: Loc) -> None:
    name = grader.get("extractor")
    config = grader.get("extractor_config")
    if "extractor_config" in grader and config is None:
        del grader["extractor_config"]  # letta-evals writes `extractor_config: null` for none
    if name == "memory_block":
        t.problems.append(((*path, "extractor"), "extractor memory_block reads a Letta agent's memory blocks, which "
                           "an OpenAI-compatible agent does not have; grade the answer (last_assistant) or a tool "
                           "call (tool_arguments) instead"))
        return
    if not isinstance(config, dict):
        return
    if name in TOOL_NAME_EXTRACTORS and "tool_name" in config:
        _rename(t, config, (*path, "extractor_config"), "tool_name", "tool")
    if name in ("pattern", "after_marker"):
        _letta_search(config)


def _letta_search(config: dict[str, Any]) -> None:
    """letta-evals' pattern and after_marker look through the assistant messages from the last back and take the
    first that has a match (ours: the last message unless `scope` says otherwise); its after_marker takes the
    text after the first marker of that message, and its pattern returns the whole match unless told otherwise
    (with search_all, `group` indexes the groups of each match from 0, and a one-group pattern gives group 1)."""
    config.setdefault("scope", "any_assistant")
    if "marker" in config:
        config.setdefault("occurrence", "first")
        return
    if not config.get("search_all"):
        config.setdefault("group", 0)
        return
    from evals_cli import regex_patterns

    try:
        groups = regex_patterns.compile(str(config.get("pattern"))).groups
    except regex_patterns.RegexError:
        return  # reported by the extractor check, at its line
    group = config.get("group", 0)
    if groups == 1:
        config["group"] = 1
    elif groups > 1 and type(group) is int:
        config["group"] = group + 1


def _gate(t: Translation, gate: dict[str, Any], old: Loc, new: Loc, graders: list[str]) -> dict[str, Any]:
    """One letta gate (or logical condition) as ours; `old`/`new` are its paths before and after."""
    if old != new:
        t.move(old, new)
    kind = gate.get("kind")
    if kind is None:  # a gate-era gate without kind, or a condition of a logical gate: one grader's metric
        gate = {"kind": "simple", **gate}
        if "metric_key" not in gate and len(graders) == 1:
            gate["metric_key"] = graders[0]
        elif "metric_key" not in gate:
            t.problems.append((old, "name the grader to gate on with metric_key (letta-evals uses the only "
                               f"grader when there is one; this suite has {len(graders)}: {', '.join(graders)})"))
            gate["kind"] = "weighted_average"  # still check the rest of the gate
        kind = gate["kind"]
    if kind == "logical":
        if "conditions" in gate and "gates" not in gate:
            conditions = gate.pop("conditions")
            gate["gates"] = conditions
            if isinstance(conditions, list):
                gate["gates"] = [_gate(t, c, (*old, "conditions", i), (*new, "gates", i), graders)
                                 if isinstance(c, dict) else c for i, c in enumerate(conditions)]
            t.move((*old, "conditions"), (*new, "gates"))
        return gate
    if "metric" in gate and "aggregation" not in gate:
        gate["aggregation"] = gate.pop("metric")
        t.move((*old, "metric"), (*new, "aggregation"))
    if "pass_threshold" in gate:
        gate["pass_value"] = gate.pop("pass_threshold")
        gate.setdefault("pass_op", "gte")
        t.move((*old, "pass_threshold"), (*new, "pass_value"))
    if gate.get("aggregation") == "accuracy" and gate.get("pass_value") is None:
        # letta-evals counts a sample towards accuracy only at a perfect score unless told otherwise
        gate["pass_op"], gate["pass_value"] = "gte", 1.0
    return gate


def _rename(t: Translation, mapping: dict[str, Any], path: Loc, old: str, new: str) -> None:
    if new in mapping:
        t.problems.append(((*path, old), f"give {old} (letta-evals) or {new}, not both"))
        del mapping[old]
        return
    mapping[new] = mapping.pop(old)
    t.move((*path, old), (*path, new))


def _judge_has(key: str) -> bool:
    return _grader_has("model_judge", key)


def _grader_has(kind: Any, key: str) -> bool:
    """Whether our spec of a grader kind has a field: the translation only renames what ours lacks."""
    from evals_cli.graders.base import GRADERS

    entry = GRADERS.get(kind) if isinstance(kind, str) else None
    return entry is not None and entry.spec is not None and key in entry.spec.model_fields


def remap_lines(lines: dict[Loc, int], moves: list[tuple[Loc, Loc]]) -> dict[Loc, int]:
    """Line numbers for the translated keys: every key under a moved path keeps its original line."""
    remapped = dict(lines)
    for old, new in moves:
        for path, line in lines.items():
            if path[: len(old)] == old:
                remapped.setdefault((*new, *path[len(old):]), line)
    return remapped


def original_field(dotted: str, moves: list[tuple[Loc, Loc]]) -> str:
    """A translated field path ('gate.gates.0.metric_key') as the user wrote it ('gate.conditions.0.metric_key')."""
    best: tuple[str, str] | None = None
    for old, new in moves:
        new_text, old_text = ".".join(map(str, new)), ".".join(map(str, old))
        if (dotted == new_text or dotted.startswith(new_text + ".")) and (best is None or len(new_text) > len(best[0])):
            best = (new_text, old_text)
    return dotted if best is None else best[1] + dotted[len(best[0]):]


def rename_fields(problems: list[str], where: str, moves: list[tuple[Loc, Loc]]) -> list[str]:
    """Problem lines (`file:line: field: message`) with translated field names put back as written."""
    if not moves:
        return problems
    pattern = re.compile(rf"^({re.escape(where)}(?::\d+)?: )([\w.\-]+)(: .*)$", re.DOTALL)
    out = []
    for problem in problems:
        match = pattern.match(problem)
        out.append(problem if match is None else
                   match.group(1) + original_field(match.group(2), moves) + match.group(3))
    return out

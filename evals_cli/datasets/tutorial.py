"""The JSON-array format of popular multi-turn tutorial harnesses, mapped onto Sample.

Shape: [{"data": {"prompt", "messages", "mock_tools", "config": {"max_steps" | "maxTurns", "model", ...}},
         "target": {"original_task", "expected_tool_order", "forbidden_tools", "mock_tool_results", "category"}}]
A tool's `mock_return` (in `data.mock_tools`) is what the mocked tool answers; `target.mock_tool_results` is what
the judge is shown as the tool results provided (`rubric_vars.mock_tool_results`), and, for older files whose
tools have no `mock_return`, the answer of the tool of that name. A tool with neither answers "", as the harnesses
of this format do (their files rely on it: seed 004's multi_turn.json has such a `writeFile`), and `evals
validate` notes it; in this project's own row format and in suite YAML such a tool is an error.
camelCase spellings (mockTools, originalTask, ...) are accepted too.
"""

from __future__ import annotations

from typing import Any


def _get(d: dict[str, Any], snake: str) -> Any:
    if snake in d:
        return d[snake]
    parts = snake.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    return d.get(camel)


def is_tutorial_item(item: Any) -> bool:
    return isinstance(item, dict) and "data" in item and set(item) <= {"data", "target", "id", "metadata"}


_NONE = object()


def _mock_return(tool: Any, function: Any) -> Any:
    """The tool's `mock_return` (or `mockReturn`), on the tool object or inside its `function`: what the mocked
    tool answers. `_NONE` when the file gives none (an explicit null is kept: it answers "")."""
    for holder in (tool, function):
        if isinstance(holder, dict):
            for key in ("mock_return", "mockReturn"):
                if key in holder:
                    return holder[key]
    return _NONE


def _tool_specs(mock_tools: Any, results: dict[str, Any], silent: list[str]) -> dict[str, Any]:
    """Tool definitions (OpenAI tool objects, bare functions, or a name mapping) + canned results; the names of
    tools given no result (they answer "") are added to `silent`."""
    specs: dict[str, Any] = {}
    if isinstance(mock_tools, dict):
        items = [{"name": k, **(v if isinstance(v, dict) else {"description": str(v)})} for k, v in mock_tools.items()]
    else:
        items = list(mock_tools or [])
    for tool in items:
        if isinstance(tool, str):
            tool = {"name": tool}
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        name = function.get("name")
        if not name:
            raise ValueError("data.mock_tools: every tool needs a 'name'")
        spec: dict[str, Any] = {"description": function.get("description", "")}
        params = function.get("parameters") or function.get("inputSchema") or function.get("input_schema")
        if params:
            spec["parameters"] = params
        mock_return = _mock_return(tool, function)
        if mock_return is not _NONE:
            spec["returns"] = mock_return
        elif name in results:  # older files put the tool's answer under target.mock_tool_results
            spec["returns"] = results[name]
        else:  # the harness's default: the call gets an empty result
            spec["returns"] = ""
            silent.append(str(name))
        specs[name] = spec
    for name, result in results.items():
        specs.setdefault(name, {"description": "", "returns": result})
    return specs


def silent_tools_note(names: list[str]) -> str:
    """What `evals validate` says about tutorial tools given no result (the same words for every row)."""
    shown = ", ".join(repr(n) for n in names)
    return (f"data.mock_tools: tool {shown} has no mock_return and no entry in target.mock_tool_results: it answers "
            "\"\" (an empty result), as the harnesses of this format do; give it a mock_return to answer something")


def tutorial_to_sample(item: dict[str, Any], index: int, notes: list[str] | None = None) -> dict[str, Any]:
    """A sample dict (validated later as Sample) from one tutorial item; what `evals validate` should note about
    it is appended to `notes`."""
    data = item.get("data") or {}
    target = item.get("target") or {}
    if not isinstance(data, dict) or not isinstance(target, dict):
        raise ValueError("'data' and 'target' must be objects")
    given = next((v for v in (item.get("id"), data.get("id")) if v not in (None, "")), None)
    sample: dict[str, Any] = {"id": f"item-{index + 1}" if given is None else str(given)}
    prompt = _get(data, "prompt")
    if prompt is not None:
        sample["input"] = prompt
    messages = _get(data, "messages")
    if messages:
        sample["messages"] = messages
    shown = _get(target, "mock_tool_results")  # what the judge is told the tools returned
    results = shown if isinstance(shown, dict) else {}
    silent: list[str] = []
    tools = _tool_specs(_get(data, "mock_tools"), results, silent)
    if silent and notes is not None:
        notes.append(silent_tools_note(silent))
    if tools:
        sample["tools"] = tools
    for key in ("expected_tool_order", "forbidden_tools", "category"):
        value = _get(target, key)
        if value is not None:
            sample[key] = value
    original = _get(target, "original_task")
    if original is not None:
        sample["rubric_vars"] = {"original_task": original}
    if shown is not None:  # the judge prompt's "tool results provided", available to rubrics
        sample.setdefault("rubric_vars", {})["mock_tool_results"] = shown
    config = _get(data, "config") or {}
    if isinstance(config, dict):
        max_steps = _get(config, "max_steps")
        if max_steps is None:
            max_steps = config.get("maxTurns")
        if max_steps is not None:
            sample["max_steps"] = max_steps
        model = config.get("model")
        if model is not None:  # seed 001's harness asks this item's agent with this model
            if not isinstance(model, str) or not model.strip():
                raise ValueError("data.config.model: expected the agent model's name as text")
            sample["agent_model"] = model.strip()
        if config:
            sample["metadata"] = {"config": config}
    if sample.get("category"):
        sample["tags"] = [sample["category"]]
    return sample

"""The expected world of a row that gives `expected_actions` (gold calls, as tau-bench derives its expected
database): the starting world with those calls applied by the suite's own tools (effects and tools with logic),
so an expected state is never written out by hand and cannot drift from what the tools do."""

from __future__ import annotations

import json
from collections.abc import Mapping

from evals_cli.environment.world import World
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.tools.mock import MockToolbox


class GoldActionError(Exception):
    """A gold call that cannot be applied (an unknown or live tool, or the tool refused it): the row is wrong."""


async def gold_world(sample: Sample, tools: Mapping[str, ToolSpec], start: World,
                     user_tools: Mapping[str, ToolSpec] | None = None) -> World:
    """The world after the row's expected_actions, applied in order to a copy of `start` (the starting state:
    the declared world after the environment's setup); an action with `requestor: user` is applied by the user's
    tools (dual control), over the same world."""
    world = start.copy()
    boxes = {"agent": MockToolbox(dict(tools), world),
             "user": MockToolbox(dict(user_tools or {}), world, actor="user")}
    for index, action in enumerate(sample.expected_actions or [], 1):
        box = boxes[action.requestor]
        spec = box.tools.get(action.tool)
        where = f"expected_actions[{index}] ({action.tool})"
        if spec is None:
            block = "user_tools" if action.requestor == "user" else "tools"
            raise GoldActionError(f"{where}: no such tool in the suite's {block} (requestor: {action.requestor}); "
                                  f"those tools: {', '.join(box.tools) or 'none'}")
        if spec.served_by is not None:
            raise GoldActionError(f"{where}: a live MCP tool cannot be replayed for the expected state; use "
                                  "expected_state")
        call = await box.call(f"gold_{index}", action.tool, json.dumps(action.arguments))
        if call.is_error:
            raise GoldActionError(f"{where}: the tool refused the gold call: {call.result}; fix the row")
    return world

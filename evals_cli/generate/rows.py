"""A generated candidate made into a dataset row, or dropped with the reason.

A row is kept only when the run would accept it and it means what it says: it validates as a `Sample` (so `evals
validate` passes the file unchanged), its gold actions are applied by the suite's own tools to the suite's world
without a refusal (the same code `final_state` uses, evals_cli/tools/gold.py: a row whose gold call the tools refuse
would grade every agent against an impossible world), and it is not a duplicate: the same goal (case, spacing and
punctuation aside; for attackers, with the same strategy) as a row already kept."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from evals_cli.generate.prompt import Brief, has_logic
from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import ATTACK_STRATEGIES, DEFAULT_STRATEGY

_NOT_WORD = re.compile(r"[\W_]+")
GOLD_SECONDS = 30.0  # one row's gold actions, all together


class Dropped(Exception):
    """The candidate is not a usable row: the message says why."""


def _text(candidate: dict[str, Any], key: str) -> str:
    """A required text field: a row without it cannot be played or judged."""
    value = candidate.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Dropped(f"no {key} (a non-empty string)")
    return value.strip()


def _actions(candidate: dict[str, Any], brief: Brief) -> list[dict[str, Any]]:
    """The candidate's gold actions, each naming a tool the gold check can apply: the agent's, or with
    `requestor: user` the user's own (dual control: the suite's `user_tools`), as the run applies them."""
    actions = candidate.get("expected_actions")
    if not isinstance(actions, list):
        raise Dropped("no expected_actions (a list of {tool, arguments}; [] when the world must not change)")
    out = []
    for index, action in enumerate(actions, 1):
        if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
            raise Dropped(f"expected_actions[{index}] is not {{\"tool\": NAME, \"arguments\": {{...}}}}")
        requestor = action.get("requestor", "agent")
        if requestor not in ("agent", "user"):
            raise Dropped(f"expected_actions[{index}] ({action['tool']}): requestor {str(requestor)[:40]!r} is not "
                          "agent or user")
        spec = brief.actor_tools(requestor).get(action["tool"])
        if spec is None or not has_logic(spec):
            what = "no such tool" if spec is None else "a tool without logic (no effect, no python): nothing to apply"
            if brief.user_tools:  # dual control: say whose tools were looked in
                what += (" among the user's tools (requestor: user)" if requestor == "user"
                         else " among the agent's tools (requestor: agent)")
            raise Dropped(f"expected_actions[{index}] ({action['tool']}): {what}")
        arguments = action.get("arguments", {})
        if not isinstance(arguments, dict):
            raise Dropped(f"expected_actions[{index}] ({action['tool']}): arguments is not an object")
        kept = {"tool": action["tool"], "arguments": arguments}
        out.append({**kept, "requestor": "user"} if requestor == "user" else kept)
    return out


def _user(candidate: dict[str, Any], kind: str, strategy: str | None) -> dict[str, Any]:
    """The row's `user:` block, from the keys a simulated user (or an attacker) reads."""
    knows = candidate.get("knows", {})
    if not isinstance(knows, dict):
        raise Dropped("knows is not an object of facts")
    user: dict[str, Any] = {"persona": _text(candidate, "persona"), "goal": _text(candidate, "goal"), "knows": knows}
    if kind == "attacker":
        user = {"kind": "attacker", "strategy": strategy, **user}
    first = candidate.get("first_message")
    if isinstance(first, str) and first.strip():
        user["first_message"] = first.strip()
    return user


def _strategy(candidate: dict[str, Any], planned: str | None) -> str | None:
    """The strategy the model gave (one of the four), else the one the seed planned for this row."""
    given = candidate.get("strategy")
    if given is None:
        return planned
    if given not in ATTACK_STRATEGIES:
        raise Dropped(f"strategy {given!r} is not one of {', '.join(ATTACK_STRATEGIES)}")
    return str(given)


@dataclass
class RowMaker:
    """Makes rows for one generation, remembering what it kept (for duplicates and the ids)."""

    brief: Brief
    prefix: str
    kept: dict[tuple[str, str], str] = field(default_factory=dict)  # duplicate key -> the kept row's id

    async def make(self, candidate: Any, planned: str | None = None) -> dict[str, Any]:
        """The row (its id the next free one), or Dropped."""
        if not isinstance(candidate, dict):
            raise Dropped(f"not a JSON object but {type(candidate).__name__}")
        kind = self.brief.kind
        strategy = (_strategy(candidate, planned) or DEFAULT_STRATEGY) if kind == "attacker" else None
        row: dict[str, Any] = {"id": f"{self.prefix}-{len(self.kept) + 1:03d}",
                               "user": _user(candidate, kind, strategy)}
        key = (strategy or "", _NOT_WORD.sub(" ", row["user"]["goal"].casefold()).strip())
        if key in self.kept:
            raise Dropped(f"a duplicate of {self.kept[key]} (the same goal)")
        if kind == "attacker":
            row["rubric_vars"] = {"violation": _text(candidate, "violation")}
            row["tags"], row["category"] = ["generated", "red_team", strategy], "red_team"
        else:
            row["success"], row["tags"] = _text(candidate, "success"), ["generated"]
        if self.brief.needs_actions:
            row["expected_actions"] = _actions(candidate, self.brief)
        sample = _sample(row)
        if self.brief.needs_actions:
            await _apply_gold(sample, self.brief)
        self.kept[key] = row["id"]
        return row


def _sample(row: dict[str, Any]) -> Sample:
    try:
        return Sample.model_validate(row)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the row"
        raise Dropped(f"not a valid row: {where}: {first['msg']}") from None


async def _apply_gold(sample: Sample, brief: Brief) -> None:
    """The row's gold actions applied by the suite's tools (the user's for `requestor: user`) to a fresh copy of
    the suite's world, within
    GOLD_SECONDS (a tool function that hangs on the model's arguments drops the row, never holds the command)."""
    from evals_cli.custom_code import SAMPLE_DEADLINE, CustomCodeError
    from evals_cli.environment.world import World
    from evals_cli.tools.gold import GoldActionError, gold_world

    token = SAMPLE_DEADLINE.set((time.monotonic() + GOLD_SECONDS, GOLD_SECONDS))
    try:
        row = sample.with_environment(brief.environment)
        await gold_world(row, brief.tools, World(row.environment), brief.user_tools)
    except GoldActionError as exc:
        raise Dropped(str(exc).removesuffix("; fix the row")) from None
    except CustomCodeError as exc:
        raise Dropped(f"a gold action broke the suite's tool: {exc}") from None
    finally:
        SAMPLE_DEADLINE.reset(token)

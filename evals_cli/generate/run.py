"""The generation loop: requests to the generator model until `count` rows are kept or the request bound is
reached, every reply read and every candidate checked (evals_cli/generate/rows.py).

Seeded: request i sends `seed + i` (servers that honour a seed answer alike again), and the seed orders what each
request shows (the tools' order) and which strategies attacker rows are asked for, so one seed gives one sequence
of requests, and the kept rows keep the order they were accepted in. Bounded: at most `max_requests` calls (by
default twice the batches needed, plus two), each with the client's own retries; a malformed reply spends its
request. An endpoint that fails ends the loop: what was kept is still returned, with the error."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals_cli.endpoints.clients import ModelClients
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.generate.prompt import Brief, render_request
from evals_cli.generate.replies import MalformedReply, read_rows
from evals_cli.generate.rows import Dropped, RowMaker
from evals_cli.models.simulated_user import ATTACK_STRATEGIES
from evals_cli.models.trajectory import Usage

SYSTEM = ("You write test cases for evaluating AI agents. Reply with JSON only, exactly in the shape asked for, "
          "with no text around it.")
KINDS = ("task", "attacker")


@dataclass(frozen=True)
class GenerateRequest:
    """What to generate: `count` rows of `kind` from the `brief`, with `template`."""

    brief: Brief
    template: str
    count: int
    seed: int = 0
    batch: int = 5
    max_requests: int | None = None
    temperature: float | None = 0.7
    max_tokens: int | None = 4096

    @property
    def request_bound(self) -> int:
        return self.max_requests or 2 * math.ceil(self.count / self.batch) + 2


@dataclass
class GenerateOutcome:
    """The rows kept (in order), why others were not, and what it cost."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # "request 2, row 3: <why>": a candidate not kept
    malformed: list[str] = field(default_factory=list)  # "request 1: <why>": a reply with no rows to read
    requests: int = 0
    surplus: int = 0  # candidates not read: the count was reached before them
    usage: Usage = field(default_factory=Usage)
    error: str | None = None  # the endpoint failed: the loop stopped here


def _strategy_order(seed: int) -> list[str]:
    """The four strategies in the seed's order: attacker rows are asked for in turn, so each gets its share."""
    order = list(ATTACK_STRATEGIES)
    random.Random(seed).shuffle(order)
    return order


def _body(request: GenerateRequest, endpoint: Endpoint, prompt: str, index: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": endpoint.model, "seed": request.seed + index,
                            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
                            "user": f"evals-generate:{request.seed}:{index}"}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


async def _ask(pool: ModelClients, endpoint: Endpoint, body: dict[str, Any], outcome: GenerateOutcome) -> str:
    """The reply's text; raises what the client raised."""
    response = await pool.client(endpoint).chat.completions.create(**body)
    usage = getattr(response, "usage", None)
    outcome.usage.add(Usage(prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                            completion_tokens=getattr(usage, "completion_tokens", 0) or 0))
    choice = response.choices[0] if response.choices else None
    return (choice.message.content or "") if choice is not None and choice.message is not None else ""


async def generate(request: GenerateRequest, endpoint: Endpoint, pool: ModelClients) -> GenerateOutcome:
    """Ask, read and check until `count` rows are kept or the request bound is reached."""
    from evals_cli.endpoints.errors import classify

    outcome = GenerateOutcome()
    brief = request.brief
    maker = RowMaker(brief, "attack" if brief.kind == "attacker" else "gen")
    order = _strategy_order(request.seed)
    for index in range(request.request_bound):
        if len(outcome.rows) >= request.count:
            break
        want = min(request.batch, request.count - len(outcome.rows))
        planned = [order[(len(outcome.rows) + j) % len(order)] for j in range(want)] \
            if brief.kind == "attacker" else []
        tools = list(brief.tools)
        random.Random(f"{request.seed}:{index}").shuffle(tools)
        goals = [row["user"]["goal"] for row in outcome.rows]
        prompt = render_request(request.template, brief, want, planned, goals, tools)
        outcome.requests += 1
        try:
            reply = await _ask(pool, endpoint, _body(request, endpoint, prompt, index), outcome)
        except Exception as exc:  # the client already retried what can be retried
            outcome.error = classify(exc, endpoint).message
            break
        try:
            candidates = read_rows(reply)
        except MalformedReply as exc:
            outcome.malformed.append(f"request {index + 1}: {exc}")
            continue
        await _keep(candidates, planned, maker, outcome, request.count, index)
    return outcome


async def _keep(candidates: list[Any], planned: list[str], maker: RowMaker, outcome: GenerateOutcome, count: int,
          index: int) -> None:
    """Check one reply's candidates in order, until the count is reached (the rest are counted as surplus)."""
    for number, candidate in enumerate(candidates, 1):
        if len(outcome.rows) >= count:
            outcome.surplus += len(candidates) - number + 1
            return
        strategy = planned[number - 1] if number - 1 < len(planned) else None
        try:
            outcome.rows.append(await maker.make(candidate, strategy))
        except Dropped as exc:
            outcome.dropped.append(f"request {index + 1}, row {number}: {exc}")


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """The rows as JSONL, one per line, in the order they were kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")

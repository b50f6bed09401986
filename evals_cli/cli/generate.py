"""`evals generate`: dataset rows written by a model from a policy (`generate.api.generate_rows`), what was
dropped said on stderr.

`evals --help` imports every command's module: the generator is imported when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals_cli.cli.printing import notes


def generate(
    policy: Annotated[Path, typer.Option("--from", metavar="POLICY", help="The agent's policy (text or Markdown) the rows are written from.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the rows (JSONL).")],
    tools: Annotated[Path | None, typer.Option("--tools", metavar="SUITE", help="The suite whose tools and world the rows are for; rows then give expected_actions its tools accept.")] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=1000, help="Rows to write.")] = 10,
    kind: Annotated[str, typer.Option("--kind", metavar="task|attacker", help="task: users with goals the agent should meet; attacker: red-team users (user.kind attacker).")] = "task",
    seed: Annotated[int, typer.Option("--seed", help="Sent with each request (seed + request index); also orders the tools shown and the attack strategies asked for.")] = 0,
    template: Annotated[Path | None, typer.Option("--template", help="Your own Jinja2 template for the request (default: the built-in one).")] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="MODEL", help="The generator model; NAME@URL on its own endpoint (default: the suite's judge, EVAL_JUDGE_MODEL).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="The generator's endpoint.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="The generator's key (prefer EVAL_JUDGE_API_KEY).")] = None,
    max_requests: Annotated[int | None, typer.Option("--max-requests", min=1, help="Requests at most (default: twice the batches needed, plus two).")] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, max=50, help="Rows asked for per request.")] = 5,
    temperature: Annotated[float, typer.Option("--temperature", min=0, max=2, help="The generator's sampling temperature.")] = 0.7,
    record: Annotated[Path | None, typer.Option("--record", help="Record the generator's calls to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve the generator's calls from a recording; no network.")] = None,
) -> None:
    """Write dataset rows (simulated users, or attackers with --kind attacker) from a policy with a model; rows whose gold actions the suite's tools refuse are dropped."""
    from evals_cli.generate.api import GenerateOptions, generate_rows

    done = generate_rows(GenerateOptions(
        policy=policy, tools=tools, count=count, output=output, kind=kind, seed=seed, template=template, model=model,
        base_url=base_url, api_key=api_key, max_requests=max_requests, batch=batch, temperature=temperature,
        record=record, replay=replay))
    notes(done.notes(), prefix="")
    if done.summary() is not None:
        print(done.summary())
    raise typer.Exit(done.exit_code)

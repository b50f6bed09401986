"""What `evals generate` does once its arguments are parsed: read the inputs, run the library's loop
(evals_cli/generate/), write the rows, say what was dropped and why, and exit 0 only when every row asked for was
written (3 when fewer were: the rows kept are still written, and the message says how many and why)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals_cli.errors import EXIT_INCOMPLETE, EXIT_PASSED
from evals_cli.generate.run import GenerateOutcome, GenerateRequest, generate, write_rows


@dataclass(frozen=True)
class GenerateOptions:
    """The command's options, as parsed."""

    policy: Path
    tools: Path | None
    count: int
    output: Path
    kind: str = "task"
    seed: int = 0
    template: Path | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_requests: int | None = None
    batch: int = 5
    temperature: float | None = 0.7
    record: Path | None = None
    replay: Path | None = None


def generate_command(options: GenerateOptions) -> int:
    """Generate, write and report; the exit code."""
    import asyncio

    from evals_cli.endpoints.pool import ClientPool
    from evals_cli.generate.endpoint import generator_endpoint
    from evals_cli.generate.inputs import brief_for
    from evals_cli.generate.prompt import load_template

    brief, suite = brief_for(options.policy, options.tools, options.kind)
    template = load_template(options.template)
    endpoint = generator_endpoint(suite, options.model, options.base_url, options.api_key)
    request = GenerateRequest(brief, template, options.count, options.seed, options.batch, options.max_requests,
                              options.temperature)

    async def go() -> GenerateOutcome:
        pool = ClientPool(record=options.record, replay=options.replay, concurrency=1)
        try:
            return await generate(request, endpoint, pool)
        finally:
            await pool.aclose()

    outcome = asyncio.run(go())
    if outcome.rows:
        write_rows(options.output, outcome.rows)
    return _report(outcome, request, endpoint.describe(), options.output)


def _report(outcome: GenerateOutcome, request: GenerateRequest, where: str, output: Path) -> int:
    """Print what was dropped and why, then the one line that says what was written; the exit code."""
    from evals_cli.display.console import make_console

    err = make_console(stderr=True)

    def say(line: str) -> None:
        err.print(line, markup=False, highlight=False, soft_wrap=True)

    for line in outcome.malformed:
        say(f"malformed reply: {line}")
    for line in outcome.dropped:
        say(f"dropped: {line}")
    kept, asked = len(outcome.rows), request.count
    cost = (f"{outcome.requests} request{'s' if outcome.requests != 1 else ''} to the {where}, "
            f"{outcome.usage.total_tokens} tokens; {_count(len(outcome.dropped), 'row')} dropped, "
            f"{_count(len(outcome.malformed), 'reply', 'replies')} malformed)")
    written = f"wrote {_count(kept, 'row')} to {output}" if kept else "wrote no rows"
    if outcome.error is not None:
        say(f"error: the generator failed: {outcome.error}")
    if kept >= asked and outcome.error is None:
        print(f"{written} ({cost}")
        return EXIT_PASSED
    why = outcome.error and "the generator failed" or f"the bound of {request.request_bound} requests was reached"
    say(f"error: {written}, {asked} asked for: {why} ({cost}; try another --seed, raise --max-requests, or "
        "read the reasons above")
    return EXIT_INCOMPLETE


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"

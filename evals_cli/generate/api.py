"""`generate_rows`: the whole of `evals generate` as a library call (read the policy and the suite, find the
generator model, ask, check, write), returning what happened and the words for it. The command only parses its
options into `GenerateOptions` and prints the `Generated` it gets back (its notes, its summary, its exit code).

    from pathlib import Path
    from evals_cli.generate.api import GenerateOptions, generate_rows

    done = generate_rows(GenerateOptions(policy=Path("policy.md"), tools=Path("suite.yaml"), count=20,
                                         output=Path("rows.jsonl"), model="qwen2.5-7b-instruct@http://localhost:8080/v1"))
    assert done.complete, done.notes()
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals_cli.errors import EXIT_INCOMPLETE, EXIT_PASSED
from evals_cli.generate.run import GenerateOutcome, GenerateRequest


@dataclass(frozen=True)
class GenerateOptions:
    """What to generate and with which model (the command's options)."""

    policy: Path
    output: Path
    tools: Path | None = None
    count: int = 10
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


@dataclass(frozen=True)
class Generated:
    """The outcome, the request it answered, and the generator endpoint as messages name it."""

    outcome: GenerateOutcome
    request: GenerateRequest
    endpoint: str

    output: Path | None = None

    @property
    def complete(self) -> bool:
        """Every row asked for was kept, and the generator never failed."""
        return len(self.outcome.rows) >= self.request.count and self.outcome.error is None

    @property
    def exit_code(self) -> int:
        """0 when every row asked for was written; 3 when fewer were (the rows kept are written all the same)."""
        return EXIT_PASSED if self.complete else EXIT_INCOMPLETE

    def notes(self) -> list[str]:
        """What to tell the user on stderr: each reply that held no rows, each row dropped and why, the failure."""
        outcome = self.outcome
        lines = [f"malformed reply: {line}" for line in outcome.malformed]
        lines += [f"dropped: {line}" for line in outcome.dropped]
        if outcome.error is not None:
            lines.append(f"error: the generator failed: {outcome.error}")
        if not self.complete:
            lines.append(f"error: {self._written()}, {self.request.count} asked for: {self._why()} ({self._cost()})")
        return lines

    def _why(self) -> str:
        """The cause of an incomplete generation and what to do about it: an endpoint that failed is fixed at the
        endpoint (another seed asks the same server); rows the model would not give, by asking again."""
        if self.outcome.error is not None:
            return (f"the generator failed at request {self.outcome.requests} (the error above); fix the endpoint "
                    "(--model NAME@URL, --base-url) and run the command again")
        return (f"the bound of {self.request.request_bound} requests was reached; try another --seed, raise "
                "--max-requests, or read the reasons above")

    def summary(self) -> str | None:
        """The closing line of a complete generation (None: the notes said what happened)."""
        return f"{self._written()} ({self._cost()})" if self.complete else None

    def _written(self) -> str:
        kept = len(self.outcome.rows)
        return f"wrote {_count(kept, 'row')} to {self.output}" if kept else "wrote no rows"

    def _cost(self) -> str:
        outcome = self.outcome
        return (f"{_count(outcome.requests, 'request')} to the {self.endpoint}, {outcome.usage.total_tokens} tokens; "
                f"{_count(len(outcome.dropped), 'row')} dropped, "
                f"{_count(len(outcome.malformed), 'reply', 'replies')} malformed"
                + (f", {outcome.surplus} past the count not read" if outcome.surplus else ""))


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def generate_rows(options: GenerateOptions) -> Generated:
    """Generate and write the rows kept (the file always: with none kept it is empty, never an older file left in
    place as if it were this one); ConfigError (exit 2) for bad input, before any model call."""
    import asyncio

    from evals_cli.endpoints.pool import ClientPool
    from evals_cli.generate.endpoint import generator_endpoint
    from evals_cli.generate.inputs import brief_for
    from evals_cli.generate.prompt import load_template
    from evals_cli.generate.run import generate, write_rows

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
    write_rows(options.output, outcome.rows)
    return Generated(outcome, request, endpoint.describe(), options.output)

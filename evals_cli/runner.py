"""Async orchestration: prepare everything that can fail before the first call, then stream samples
through the target and the graders with bounded concurrency, writing each result as it completes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals_cli.datasets.reader import check_dataset, iter_samples, select_samples
from evals_cli.endpoints.errors import classify
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint, resolve_agent
from evals_cli.errors import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_PASSED,
    ConfigError,
    RunAborted,
)
from evals_cli.gate import Accumulator, Gate
from evals_cli.graders.base import Grader
from evals_cli.graders.build import build_graders
from evals_cli.graders.grading import grade_sample
from evals_cli.models.results import ErrorInfo, RunSummary, SampleResult
from evals_cli.models.sample import Sample
from evals_cli.models.specs import SuiteSpec
from evals_cli.models.trajectory import Trajectory, Usage
from evals_cli.output.files import ResultsWriter, default_output_dir
from evals_cli.targets.base import SampleFailed, Target
from evals_cli.targets.openai_chat import OpenAIChat
from evals_cli.tools.mock import merge_tools
from evals_cli.validate import check_rubrics

ResultCallback = Callable[[SampleResult], None]


@dataclass
class RunOptions:
    """Everything the CLI can override; None means 'as the suite says'."""

    output: Path | None = None
    concurrency: int | None = None
    max_samples: int | None = None
    tags: list[str] | None = None
    no_judge: bool = False
    record: Path | None = None
    replay: Path | None = None
    base_url: str | None = None
    model: str | None = None
    max_error_rate: float = 0.2
    precheck: bool = True


@dataclass
class RunOutcome:
    summary: RunSummary
    output_dir: Path
    exit_code: int
    messages: list[str] = field(default_factory=list)


def _read_system_prompt(suite: SuiteSpec) -> str | None:
    target = suite.target
    if target.system_prompt_file is None:
        return target.system_prompt
    path = suite.resolve(target.system_prompt_file)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"target.system_prompt_file: cannot read {path}: {exc}") from None


class PreparedRun:
    """A suite with its target, graders, gate and dataset checked: nothing left to fail but the endpoints."""

    def __init__(self, suite: SuiteSpec, options: RunOptions) -> None:
        self.suite = suite
        self.options = options
        crossed = suite.cross_check()
        if crossed:
            raise ConfigError([f"{'.'.join(path)}: {message}" for path, message in crossed])
        self.dataset = suite.resolve(suite.dataset)
        self.pool = ClientPool(record=options.record, replay=options.replay)
        overrides = {"base_url": options.base_url, "model": options.model}
        self.agent: Endpoint = resolve_agent(suite.target, overrides)
        self.target: Target = OpenAIChat(suite.target, suite.tools, self.agent, self.pool, _read_system_prompt(suite))
        self.graders: dict[str, Grader] = build_graders(suite, self.pool, self.agent, no_judge=options.no_judge)
        self.gate = Gate(suite.gate, self.graders)
        self.tags = options.tags if options.tags is not None else suite.sample_tags
        self.max_samples = options.max_samples or suite.max_samples
        self.concurrency = options.concurrency or suite.concurrency
        self.expected: int | None = None
        if options.precheck:
            self._precheck()

    def _precheck(self) -> None:
        _, problems = check_dataset(self.dataset)
        if problems:
            raise ConfigError(problems)
        samples = list(select_samples(iter_samples(self.dataset), self.tags, self.max_samples)) \
            if self._small() else None
        if samples is not None:
            self.expected = len(samples)
            problems = check_rubrics(self.suite, samples, self.graders)
            if problems:
                raise ConfigError(problems)
            if not samples:
                raise ConfigError(f"{self.dataset}: no sample carries the tags {', '.join(self.tags or [])}")

    def _small(self) -> bool:
        return self.dataset.stat().st_size < 20_000_000

    def samples(self):
        return select_samples(iter_samples(self.dataset), self.tags, self.max_samples)

    async def execute(self, on_result: ResultCallback | None = None) -> RunOutcome:
        return await _Execution(self, on_result).run()


class _Execution:
    def __init__(self, prepared: PreparedRun, on_result: ResultCallback | None) -> None:
        self.p = prepared
        self.on_result = on_result
        self.output_dir = prepared.options.output or default_output_dir(prepared.suite.name)
        self.writer = ResultsWriter(self.output_dir)
        self.acc = Accumulator(prepared.gate, prepared.suite.name, prepared.graders)
        self.any_success = False
        self.abort_reason: str | None = None
        self.stop = False

    async def run(self) -> RunOutcome:
        started = time.time()
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        iterator = iter(self.p.samples())
        status = "completed"
        try:
            workers = [asyncio.create_task(self._worker(iterator)) for _ in range(self.p.concurrency)]
            await asyncio.gather(*workers)
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
        finally:
            self.writer.close()
            await self.p.pool.aclose()
        summary = self.acc.summary()
        summary.started_at = started_at
        summary.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        summary.duration_s = time.time() - started
        if self.abort_reason:
            status = "aborted"
        summary.status = status  # type: ignore[assignment]
        summary.abort_reason = self.abort_reason
        summary.exit_code = self._exit_code(summary)
        self.writer.write_summary(summary)
        messages = [summary.abort_reason] if summary.abort_reason else []
        return RunOutcome(summary, self.output_dir, summary.exit_code, messages)

    def _exit_code(self, summary: RunSummary) -> int:
        if summary.status == "interrupted":
            return EXIT_INTERRUPTED
        if summary.status == "aborted":
            return EXIT_INCOMPLETE
        if summary.total and summary.errored / summary.total > self.p.options.max_error_rate:
            summary.abort_reason = (f"{summary.errored}/{summary.total} samples errored, more than "
                                    f"--max-error-rate {self.p.options.max_error_rate:g}")
            return EXIT_INCOMPLETE
        if summary.gate is None or summary.gate.passed is None:
            return EXIT_INCOMPLETE
        return EXIT_PASSED if summary.gate.passed else EXIT_GATE_FAILED

    async def _worker(self, iterator: Any) -> None:
        while not self.stop:
            try:
                sample = next(iterator)
            except StopIteration:
                return
            result = await self._run_sample(sample)
            self.writer.write(result)
            self.acc.add(result)
            if self.on_result is not None:
                self.on_result(result)
            self._check_error_rate()

    def _check_error_rate(self) -> None:
        acc = self.acc
        if acc.total >= 10 and acc.errored / acc.total > self.p.options.max_error_rate and not self.stop:
            self.stop = True
            self.abort_reason = (f"{acc.errored}/{acc.total} samples errored, more than --max-error-rate "
                                 f"{self.p.options.max_error_rate:g}; stopped scheduling")

    async def _run_sample(self, sample: Sample) -> SampleResult:
        started = time.perf_counter()
        result = SampleResult(sample_id=sample.id or "", tags=sample.tags, input=sample.input_text())
        try:
            trajectory = await self.p.target.run(sample)
            self.any_success = True
        except SampleFailed as failed:
            result.trajectory = failed.trajectory
            result.usage = failed.trajectory.usage()
            found = classify(failed.cause, self.p.agent)
            result.error = ErrorInfo(category=found.category, message=found.message)  # type: ignore[arg-type]
            if found.fatal and (found.fatal_after_success or not self.any_success):
                self._abort(found.message)
            result.latency_s = time.perf_counter() - started
            return result
        result.trajectory = trajectory
        result.usage = trajectory.usage()
        tools = merge_tools(self.p.suite.tools, sample.tools)
        result.grades = await grade_sample(self.p.graders, sample, trajectory, self.p.gate.passes, tools)
        result.score, result.passed = self.p.gate.score_sample(result.grades)
        judge = Usage()
        for grade in result.grades.values():
            judge.add(Usage.model_validate(grade.metadata.get("usage", {})))
        result.judge_usage = judge
        result.latency_s = time.perf_counter() - started
        return result

    def _abort(self, message: str) -> None:
        if not self.stop:
            self.stop = True
            self.abort_reason = message


def run_suite(suite: SuiteSpec, options: RunOptions | None = None,
              on_result: ResultCallback | None = None) -> RunOutcome:
    """Run a loaded suite to the end (the library entry point behind `evals run`)."""
    prepared = PreparedRun(suite, options or RunOptions())
    return asyncio.run(prepared.execute(on_result))


__all__ = ["PreparedRun", "RunAborted", "RunOptions", "RunOutcome", "Trajectory", "run_suite"]

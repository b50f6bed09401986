"""The `evals watch` process: the endpoint takes spans, the assembler holds them until each conversation is
finished, the sampler and the budget choose what is graded, a bounded queue feeds the graders, and every result
goes to the window's results file, the rolling gate, /metrics and (optionally) back out as OTLP.

Nothing is dropped unseen: a trace not sampled, shed (the queue or the span bound full), over budget, already
graded before a restart, holding no LLM spans, or cut at shutdown is counted in /metrics and in `watch.json`.
SIGTERM (or SIGINT) stops taking spans (503: the exporter sends them to another replica or retries), grades what
had finished, counts what had not, writes the last window's summary and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from evals_cli.calibration.judges import judge_records
from evals_cli.endpoints.secrets import Redactor
from evals_cli.errors import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_PASSED
from evals_cli.output.manifest import Manifest
from evals_cli.output.summary import Accumulator
from evals_cli.run_options import RunOptions
from evals_cli.runner.interrupts import interrupts_to
from evals_cli.runner.prepare import PreparedRun
from evals_cli.runner.suite_fingerprint import fingerprint
from evals_cli.watch.alerts import Alerts
from evals_cli.watch.assembler import Assembler, Finished
from evals_cli.watch.budget import Budget
from evals_cli.watch.export import GradeExporter, evaluation_span
from evals_cli.watch.metrics import Exposition
from evals_cli.watch.rolling import RollingGate
from evals_cli.watch.sampler import sampled
from evals_cli.watch.server import Endpoints, Listen, WatchServer
from evals_cli.watch.suite import LIVE, WatchSuite
from evals_cli.watch.verdict import WindowVerdict
from evals_cli.watch.windows import Windows

GRACE_S = 10.0  # what finished conversations get to be graded after SIGTERM
STATE_NAME = "watch.json"


class Grading(Protocol):
    """What grades a finished trace (grading.ConversationGrader, handed in by the command)."""

    async def grade(self, finished: Finished) -> Any: ...


GraderFactory = Callable[[Any, dict[str, Any], Any, Redactor], Grading]  # (suite, graders, gate, redact)


@dataclass
class WatchOptions:
    output: Path
    listen: Listen
    once: float | None = None  # stop after this many seconds and exit with the window's gate
    exit_on_fail: bool = False  # stop (exit 1) as soon as the window's gate fails
    run: RunOptions = field(default_factory=RunOptions)  # the judge options: --judge-model, --no-judge, ...
    grace_s: float = GRACE_S
    stderr: TextIO = field(default_factory=lambda: sys.stderr)


@dataclass
class Tally:
    """What happened to every trace that finished, and to every result."""

    finished: int = 0
    not_sampled: int = 0
    sampled: int = 0
    already_graded: int = 0  # graded before a restart (its spans sent again)
    no_conversation: int = 0  # a trace with no LLM spans
    graded: int = 0  # conversations with a result (errored ones included)
    errored: int = 0
    passed: int = 0
    failed: int = 0
    shed_queue: int = 0
    cut_at_shutdown: int = 0
    finished_by: Counter[str] = field(default_factory=Counter)  # quiet, max_age, shutdown
    over_budget: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)  # requests refused, by HTTP status


class Watch:
    def __init__(self, ws: WatchSuite, options: WatchOptions, grader: GraderFactory) -> None:
        """`grader` builds what grades a trace from the run's graders and gate (grading.ConversationGrader)."""
        self.ws, self.options, self.spec = ws, options, ws.watch
        suite = ws.suite
        run = options.run.model_copy(update={"output": options.output, "precheck": False})
        self.prepared = PreparedRun(suite, run, build_target=False)
        p = self.prepared
        self.redact = Redactor(p.secrets())
        self.grader = grader(p.suite, p.graders, p.gate, self.redact)
        pricing = {m: (price.input, price.output) for m, price in suite.pricing.items()}
        self.accumulator = lambda: Accumulator(p.gate, suite.name, p.graders, 1, pricing)
        replica = self.spec.replica or socket.gethostname() or "watch"
        self.folder = options.output / replica
        manifest = Manifest(suite=suite.name, fingerprint=fingerprint(p.suite, Path(LIVE), "live-otlp"),
                            gate=suite.gate.model_dump(), graders=list(p.graders), repeats=1, model=LIVE,
                            started_with=p.started_with(), judges=judge_records(p.graders, p.gate),
                            pricing=pricing)
        self.windows = Windows(self.folder, manifest, self.accumulator, rotate_s=self.spec.rotate,
                               rotate_results=self.spec.rotate_results, redact=self.redact)
        self.rolling = RollingGate(self.spec.window, self.accumulator, run.max_error_rate)
        self.budget = Budget(self.spec.max_judge_calls_per_minute, self.spec.max_cost_per_hour)
        self.alerts = Alerts(suite.name, self.spec.webhook, options.stderr, self.redact)
        self.exporter = GradeExporter(self.spec.export) if self.spec.export else None
        self.tally = Tally()
        self.verdict: WindowVerdict | None = None
        self.assembler = Assembler(self.spec.quiet, self.spec.max_age, self.spec.max_spans,
                                   keep=lambda trace: sampled(trace, self.spec.sample))
        self.taking = True
        self.server = WatchServer(options.listen, Endpoints(spans=self.assembler.add, metrics=self.metrics_text,
                                                            taking=lambda: self.taking, refused=self._refused))
        self.queue: asyncio.Queue[Finished] = asyncio.Queue(self.spec.queue)
        self.resumed = 0
        self._grading = 0  # conversations being graded now
        self._stop: asyncio.Event | None = None
        self.stopped_by: str | None = None
        self.code: int | None = None

    def _refused(self, status: int) -> None:
        self.tally.refused[str(status)] += 1

    # --- the loop -------------------------------------------------------------------------------------

    async def run(self) -> int:
        """Until SIGTERM, --once's time or --exit-on-fail's failure; the exit code."""
        self._stop = asyncio.Event()
        self.resumed = self.windows.resume()
        self.server.start()
        self._say(f"evals watch: taking OTLP/HTTP at {self.server.url}/v1/traces (metrics at {self.server.url}"
                  f"/metrics), grading {self.spec.sample:.0%} of conversations into {self.folder}"
                  + (f"; {self.resumed} results already on disk, their traces are not graded again"
                     if self.resumed else ""))
        workers = [asyncio.create_task(self._work()) for _ in range(self.spec.concurrency)]
        try:
            with interrupts_to(self._interrupt):
                await self._watch()
        finally:
            await self._shut_down(workers)
        return self._exit_code()

    async def _watch(self) -> None:
        assert self._stop is not None
        tick = max(0.01, min(0.25, self.spec.quiet / 4, self.spec.evaluate_every))
        started = next_decision = time.monotonic()
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), tick)
            self._collect(self.assembler.due())
            now = time.monotonic()
            if now >= next_decision:
                next_decision = now + self.spec.evaluate_every
                self._decide()
            if self.options.once is not None and now - started >= self.options.once:
                self.stopped_by = self.stopped_by or "once"
                self._stop.set()

    def _interrupt(self, sig: signal.Signals) -> None:
        self.stopped_by = sig.name
        if self._stop is not None:
            self._stop.set()

    def _collect(self, finished: list[Finished]) -> None:
        for item in finished:
            t = self.tally
            t.finished += 1
            t.finished_by[item.reason] += 1
            if not item.sampled:
                t.not_sampled += 1
                continue
            t.sampled += 1
            if item.trace_id in self.windows.graded_traces:
                t.already_graded += 1
                continue
            try:
                self.queue.put_nowait(item)
            except asyncio.QueueFull:
                t.shed_queue += 1

    async def _work(self) -> None:
        while True:
            item = await self.queue.get()
            self._grading += 1
            try:
                await self._grade(item)
            finally:
                self._grading -= 1
                self.queue.task_done()

    async def _grade(self, item: Finished) -> None:
        over = self.budget.over()
        if over is not None:
            self.tally.over_budget[over] += 1
            return
        graded = await self.grader.grade(item)
        if not graded.results:
            self.tally.no_conversation += 1
        for result in graded.results:
            self.windows.write(result)
            self.rolling.add(result)
            self.budget.spent(result)
            t = self.tally
            t.graded += 1
            t.errored += result.error is not None
            t.passed += result.error is None and result.passed is True
            t.failed += result.error is None and result.passed is False
            if self.exporter is not None:
                self.exporter.send(evaluation_span(result, self.ws.suite.name, item.trace_id, item.root_id))

    def _decide(self) -> None:
        self.verdict = self.rolling.decide()
        self.alerts.observe(self.verdict)
        if self.options.exit_on_fail and self.verdict.state == "failed" and self._stop is not None:
            self.stopped_by = self.stopped_by or "exit_on_fail"
            self._stop.set()

    async def _shut_down(self, workers: list[asyncio.Task[None]]) -> None:
        self.taking = False
        self.server.stop()
        cut = 0
        for item in self.assembler.drain():  # what was still open: graded only if its root span had ended
            if item.root_ended:
                self._collect([item])
            elif item.sampled:
                cut += 1
        try:
            await asyncio.wait_for(self.queue.join(), self.options.grace_s)
        except TimeoutError:
            pass
        cut += self.queue.qsize() + self._grading  # still waiting, or cancelled mid-grade: no result
        self.tally.cut_at_shutdown = cut
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        self._decide()
        status = "interrupted" if cut else "completed"
        self.windows.close(status, f"{cut} conversation(s) were not finished or not graded at shutdown"
                           if cut else None)
        if self.exporter is not None:
            self.exporter.close()
        self.alerts.wait()
        await self.prepared.pool.aclose()
        self._write_state()
        if self.verdict is not None:
            self._say(f"evals watch: stopped ({self.stopped_by}); the window's gate: {self.verdict.message}")

    def _exit_code(self) -> int:
        verdict = self.verdict
        asked = self.options.once is not None or self.options.exit_on_fail
        if self.stopped_by in ("SIGINT", "SIGTERM") and not asked:
            return EXIT_PASSED  # a service stopped: no verdict was asked of it
        if self.stopped_by in ("SIGINT", "SIGTERM") and self.options.once is not None:
            return EXIT_INTERRUPTED
        if verdict is None or verdict.state in ("pending", "no_verdict"):
            return EXIT_INCOMPLETE
        return EXIT_PASSED if verdict.state == "passed" else EXIT_GATE_FAILED

    def _say(self, line: str) -> None:
        print(self.redact(line), file=self.options.stderr, flush=True)

    def _write_state(self) -> None:
        """The process's counts, for whoever reads the folder after it stopped."""
        t = self.tally
        counts = {k: dict(v) if isinstance(v, Counter) else v for k, v in vars(t).items()}
        state = {**counts, "traces": self.assembler.counts.traces,
                 "spans": self.assembler.counts.spans, "late_spans": self.assembler.counts.late_spans,
                 "shed_traces": self.assembler.counts.shed_traces, "judge_calls": self.budget.calls,
                 "stopped_by": self.stopped_by,
                 "window_gate": self.verdict.message if self.verdict is not None else None}
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / STATE_NAME).write_text(json.dumps(state, indent=2, default=str), encoding="utf-8")

    # --- /metrics -------------------------------------------------------------------------------------

    def metrics_text(self) -> str:
        m, t, a = Exposition(), self.tally, self.assembler.counts
        m.counter("traces_total", "Traces whose spans arrived.", a.traces)
        m.counter("spans_total", "Spans received.", a.spans)
        m.counter("late_spans_total", "Spans of a trace already finished (not graded).", a.late_spans)
        m.counter("conversations_finished_total", "Traces finished (quiet after the root span, max_age, shutdown).",
                  t.finished)
        m.counter("conversations_not_sampled_total", "Finished traces outside the sampled share.", t.not_sampled)
        m.counter("conversations_sampled_total", "Finished traces in the sampled share.", t.sampled)
        m.counter("conversations_graded_total", "Conversations with a result (errored ones included).", t.graded)
        m.counter("conversations_errored_total", "Results with an error (no score: never a zero).", t.errored)
        m.counter("conversations_passed_total", "Results that passed.", t.passed)
        m.counter("conversations_failed_total", "Results that failed.", t.failed)
        m.counter("conversations_already_graded_total", "Traces graded before a restart, sent again.",
                  t.already_graded)
        m.counter("conversations_without_llm_total", "Finished traces holding no LLM spans.", t.no_conversation)
        m.counter("conversations_shed_total", "Conversations not graded for a bound.", t.shed_queue, reason="queue")
        m.counter("conversations_shed_total", "", a.shed_traces, reason="max_spans")
        for bound in ("judge_calls_per_minute", "cost_per_hour"):
            m.counter("conversations_over_budget_total", "Conversations not graded for the budget.",
                      t.over_budget[bound], budget=bound)
        m.counter("requests_refused_total", "OTLP requests refused, by HTTP status.", None)
        for status, n in sorted(t.refused.items()):
            m.counter("requests_refused_total", "", n, status=status)
        m.counter("judge_calls_total", "Judge calls made.", self.budget.calls)
        m.counter("judge_cost_total", "Judge spend at the suite's pricing.", self.budget.cost)
        m.gauge("queue_depth", "Finished conversations waiting to be graded.",
                self.queue.qsize())
        m.gauge("spans_held", "Spans held for conversations not finished.", self.assembler.held)
        m.gauge("traces_pending", "Traces not finished yet.", self.assembler.pending)
        self._window_metrics(m)
        return m.text()

    def _window_metrics(self, m: Exposition) -> None:
        verdict = self.verdict
        summary = verdict.summary if verdict is not None else None
        m.gauge("window_conversations", "Results in the rolling gate's window.",
                verdict.samples if verdict is not None else None)
        decided = summary is not None and summary.passed + summary.failed > 0
        m.gauge("window_pass_rate", "Share of the window's conversations with a verdict that passed.",
                summary.passed / (summary.passed + summary.failed) if summary is not None and decided else None)
        gate = summary.gate if summary is not None else None
        m.gauge("window_gate_metric", "The gate's metric over the window.", gate.metric if gate else None)
        state = verdict.state if verdict is not None else None
        m.gauge("window_gate_passed", "1 the window's gate passed, 0 it failed (absent: no verdict yet).",
                {"passed": 1.0, "failed": 0.0}.get(state or ""))
        if verdict is not None and verdict.interval is not None:
            m.gauge("window_pass_rate_ci_low", "Lower bound of the pass rate's exact 95% interval.",
                    verdict.interval[0])
            m.gauge("window_pass_rate_ci_high", "Upper bound of the pass rate's exact 95% interval.",
                    verdict.interval[1])
        m.gauge("window_grader_avg_score", "Each grader's average over the window.", None)
        for name, agg in (summary.graders.items() if summary is not None else ()):
            m.gauge("window_grader_avg_score", "", agg.avg_score, grader=name)

"""The run itself: (sample, repeat) pairs stream through the target and the graders with bounded
concurrency; each result is written the moment it completes. Ctrl-C (or SIGTERM) stops scheduling and
gives in-flight samples a grace period; a second one cancels them at once. Either way the summary is
written, marked `interrupted`.

What the display may watch while it runs: `in_flight()` (the samples being run, with their turn and step), and
`on_interrupt` (told at once, on each Ctrl-C, how many samples are still in flight)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from evals_cli.calibration.judges import judge_records
from evals_cli.concurrency import Workers
from evals_cli.custom_code import SAMPLE_DEADLINE
from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.endpoints.errors import classify
from evals_cli.endpoints.secrets import Redactor
from evals_cli.environment.excerpts import store_changes
from evals_cli.errors import ConfigError, DatasetChanged, RunAborted, WorkspaceTooLarge
from evals_cli.graders.grading import grade_sample
from evals_cli.models.calibration import JudgeCalibration
from evals_cli.models.pricing import price_of
from evals_cli.models.results import CacheCount, CacheUse, Coverage, ErrorInfo, Grade, RoleUse, SampleResult
from evals_cli.models.sample import Sample
from evals_cli.models.target_specs import sample_limit
from evals_cli.models.trajectory import Trajectory, Usage
from evals_cli.output.exit_codes import exit_code_for, progress
from evals_cli.output.files import RESULTS_NAME, SUMMARY_NAME, ResultsWriter, default_output_dir
from evals_cli.output.manifest import Manifest, folder_error, make_run_folder, write_manifest
from evals_cli.output.summary import Accumulator
from evals_cli.run_options import ResultCallback, RunOutcome
from evals_cli.runner.in_flight import InFlight
from evals_cli.runner.interrupts import interrupts_to
from evals_cli.runner.prepare import PreparedRun
from evals_cli.runner.resume import load_for_resume
from evals_cli.runner.suite_fingerprint import fingerprint
from evals_cli.simulation.player import UserSimulatorError
from evals_cli.targets.base import SampleFailed
from evals_cli.targets.episode import Episode
from evals_cli.telemetry import make_telemetry, otel_requested
from evals_cli.tools.mock import merge_tools

InterruptCallback = Callable[[int, int], None]  # (which Ctrl-C: 1, 2, ...; samples in flight)


class Execution:
    def __init__(self, prepared: PreparedRun, on_result: ResultCallback | None,
                 on_interrupt: InterruptCallback | None = None) -> None:
        self.p = prepared
        self.on_result = on_result
        self.on_interrupt = on_interrupt
        self._flight: dict[asyncio.Task[None], InFlight] = {}
        self.resumed = 0  # results kept from an earlier run (--resume): counted at once, not at this run's pace
        options = prepared.options
        self.fingerprint = fingerprint(prepared.suite, prepared.dataset, prepared.dataset_digest)
        self.started_with = prepared.started_with()
        self.resume = None
        if options.resume is not None:
            self.resume = load_for_resume(options.resume, self.fingerprint, options.retry_errors, self.started_with,
                                          list(prepared.graders))
            self.output_dir = self.resume.directory
        elif options.output is not None:
            self.output_dir = options.output
            if not prepared.target.replaces_results:  # recorded data with no resume: its begin_run starts over
                _refuse_earlier_run(options.output)
        else:
            try:
                self.output_dir = default_output_dir(prepared.suite.name)
            except OSError as exc:  # ./results is a file, read-only, the disk is full, ...
                raise folder_error(Path("results"), exc, "the default output folder") from None
        pricing = {m: (p.input, p.output) for m, p in prepared.suite.pricing.items()}
        self.acc = Accumulator(prepared.gate, prepared.suite.name, prepared.graders, prepared.repeats, pricing)
        self.redact = Redactor(prepared.secrets())
        self.telemetry = make_telemetry(otel_requested(options.otel), options.tracer_provider)
        self.any_success = False
        self.abort_reason: str | None = None
        self.stop = False
        self.interrupts = 0
        self.signal_name = "SIGINT"
        self.samples_seen: set[str] = set()  # distinct sample ids with a result, for "N of M" (repeats > 1)
        self.messages: list[str] = []
        self.disk_error: str | None = None  # the first failed write of a result: the disk is full, or going away
        # a run over several models runs one Execution per model at once: they share one limit of samples in flight
        # (the matrix sets `workers.slots`), and one signal handler (the matrix's) tells each through `interrupt`
        self.handle_signals = True
        self.workers: Workers[tuple[Sample, int]] = Workers(prepared.concurrency, stop=lambda: self.stop)

    # --- the run --------------------------------------------------------------------------------------

    async def run(self) -> RunOutcome:
        self.p.dataset_unchanged()  # rows read back from the file must be the rows the precheck checked
        await self._check_agent()
        await self._check_simulator()
        started = time.time()
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        if self.resume is None and self.p.target.replaces_results:  # recorded data: nothing to resume, no run.json
            make_run_folder(self.output_dir, "-o")
            self.p.target.begin_run(self.output_dir)
        elif self.resume is None:
            write_manifest(self.output_dir, Manifest(
                suite=self.p.suite.name, fingerprint=self.fingerprint, gate=self.p.suite.gate.model_dump(),
                graders=list(self.p.graders), repeats=self.p.repeats, shard=self.p.options.shard,
                model=self.p.agent.model, started_with=self.started_with,
                judges=judge_records(self.p.graders, self.p.gate),
                pricing={m: (p.input, p.output) for m, p in self.p.suite.pricing.items()}))
        try:
            self.writer = ResultsWriter(self.output_dir, self.redact)
        except OSError as exc:  # a resumed folder that is read-only, or a full disk
            raise folder_error(self.output_dir, exc, "--resume" if self.resume else "-o") from None
        self.telemetry.run_started(self.p.suite.name, self.p.agent.model)
        skip: set[tuple[str, int]] = set()
        if self.p.pool.cache is not None and self.p.pool.cache.note:
            self.messages.append(self.p.pool.cache.note)
        if self.resume is not None:
            if self.resume.repaired:
                self.messages.append(self.resume.repaired)
            for result in self.resume.kept:
                self._account(result)
            self.resumed = len(self.resume.kept)
            skip = self.resume.skip
            self.resume.kept = []
        work = ((s, r) for s, r in self.p.work() if (str(s.id), r) not in skip)
        signals = interrupts_to(self.interrupt) if self.handle_signals else contextlib.nullcontext()
        try:
            with signals:  # a context per worker: in_flight() reads the step the target set in it
                failures = await self.workers.run(work, self._next)
        finally:
            try:
                self.writer.close()
            except OSError:  # the flush of a line that could not be written: already reported by _save
                pass
            self.p.close_servers()  # MCP servers: stopped on the run's end, Ctrl-C, SIGTERM and errors alike
            await self.p.pool.aclose()
        for failed in failures:  # a worker that died must not make its samples vanish from the counts
            if isinstance(failed, DatasetChanged):  # a row read back is not the row checked: not run, no verdict
                self._abort(self.redact(f"{failed}; the {self.acc.total} finished results are kept in "
                                        f"{self.output_dir}"))
            elif isinstance(failed, Exception):  # an interrupted match (a BaseException) is the interrupt's doing
                self._abort(self.redact(f"internal error in a worker: {type(failed).__name__}: {failed}"))
        return self._finish(started, started_at)

    async def _check_agent(self) -> None:
        """A live run pointed at no agent endpoint stops before its first sample (exit 2): none set anywhere, or
        only a suite's `${VAR:-default}` with the variable unset and nothing listening at the default."""
        options = self.p.options
        if options.replay is not None or options.cache is not None \
                or not type(self.p.target).agent_is_model(self.p.suite.target):
            return
        from evals_cli.simulation.endpoint import unconfigured

        why = await unconfigured(self.p.agent, self.p.suite.defaulted("target", "base_url"))
        if why is not None:
            await self.p.pool.aclose()
            raise ConfigError(why)

    async def _check_simulator(self) -> None:
        """With simulated-user samples to run, something must listen at the simulator's endpoint: otherwise the
        run stops before its first sample (exit 3, one message). A replay calls no server."""
        endpoint = self.p.user_endpoint
        if not self.p.simulated or endpoint is None or self.p.options.replay is not None \
                or self.p.options.cache is not None:  # the cache may hold every answer: misses fail per sample
            return
        from evals_cli.simulation.endpoint import unreachable, unreachable_message

        why = await unreachable(endpoint)
        if why is not None:
            await self.p.pool.aclose()
            raise RunAborted(unreachable_message(endpoint, why, self.p.simulated))

    def _finish(self, started: float, started_at: str) -> RunOutcome:
        summary = self.acc.summary()
        summary.started_at = started_at
        summary.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        summary.duration_s = time.time() - started
        # recorded data (recorded sessions) has no plan to measure against: its summary carries none, as it never did
        summary.coverage = None if self.p.target.replaces_results else self._coverage()
        summary.cache = self._cache_use()
        if self.interrupts:
            summary.status = "interrupted"
            again = ("run it again (recorded data has no resume)" if self.p.target.replaces_results else
                     f"resume with --resume {self.output_dir}")
            summary.abort_reason = (f"stopped by {self.signal_name} after {progress(summary)}; the finished "
                                    f"samples are kept in {self.output_dir}: {again}")
        elif self.abort_reason:
            summary.status = "aborted"
            summary.abort_reason = self.abort_reason
        elif (reason := self._graders_incomplete()) is not None:  # e.g. too few verdicts from a grader's judge
            summary.status, summary.abort_reason = "aborted", self.redact(reason)
        # an incomplete run (exit 3 or 130) gets no gate verdict: see exit_codes
        cov = summary.coverage
        if summary.status == "completed" and cov is not None and cov.expected_results is not None \
                and summary.total < cov.expected_results:
            summary.status = "aborted"  # never a verdict over fewer samples than were planned, without a word
            summary.abort_reason = f"only {progress(summary)} finished, for no recorded reason"
        summary.exit_code = exit_code_for(summary, self.p.options.max_error_rate)
        if summary.status == "completed":
            summary.calibration = self._calibrations()
        try:
            self.writer.write_summary(summary)
        except OSError as exc:
            # the results are on disk; the summary is not: without it the run is incomplete (exit 3, no verdict)
            summary.status = "aborted"
            summary.abort_reason = (f"{self.disk_error + '; ' if self.disk_error else ''}could not write "
                                    f"{self.output_dir / SUMMARY_NAME} ({exc.strerror or type(exc).__name__}); "
                                    f"{summary.total} results are saved in {self.writer.path}: free some space, then "
                                    f"resume with --resume {self.output_dir} (it reruns nothing that finished)")
            summary.exit_code = exit_code_for(summary, self.p.options.max_error_rate)
        self.telemetry.run_finished(summary)
        if summary.abort_reason and not (self.interrupts and summary.status == "interrupted"):
            # an interrupt is the user's own doing: the summary's footer says it once, with the resume command;
            # repeated as an "error" on stderr it read as a second, different problem
            self.messages.append(summary.abort_reason)
        return RunOutcome(summary, self.output_dir, summary.exit_code, self.messages)

    def _graders_incomplete(self) -> str | None:
        """Why the graders, over every sample they graded, leave the run without a verdict (the first said)."""
        rate = self.p.options.max_error_rate
        return next((r for g in self.p.graders.values() if (r := g.incomplete_run(rate)) is not None), None)

    def _calibrations(self) -> dict[str, JudgeCalibration]:
        """The finished run's grades handed to calibration (calibration/finished_run.py), a consumer of them."""
        if not any(getattr(grader, "calibration", None) is not None for grader in self.p.graders.values()):
            return {}
        from evals_cli.calibration.finished_run import calibrate_finished_run  # the maths only for a suite with labels

        found, problem = calibrate_finished_run(self.p.graders, self.p.gate, self.writer.path)
        if problem:
            self.messages.append(problem)
        return found

    def _cache_use(self) -> CacheUse | None:
        cache = self.p.pool.cache
        if cache is None:
            return None
        roles = {role: CacheCount(hits=cache.hits[role], misses=cache.misses[role])
                 for role in sorted(set(cache.hits) | set(cache.misses))}
        return CacheUse(file=str(cache.path), hits=sum(cache.hits.values()), misses=sum(cache.misses.values()),
                        roles=roles)

    def _coverage(self) -> Coverage:
        """The plan the precheck counted (rows, tag filter, -n, shard) and how much of it ran."""
        plan = self.p.coverage
        cov = plan.model_copy(deep=True) if plan is not None else Coverage(
            tags=list(self.p.tags or []), max_samples=self.p.max_samples, shard=self.p.options.shard)
        cov.results = self.acc.total
        cov.run = len(self.samples_seen) if self.p.repeats > 1 else self.acc.total
        return cov

    # --- interruption ---------------------------------------------------------------------------------

    def interrupt(self, sig: signal.Signals) -> None:
        """A Ctrl-C (or SIGTERM): the first stops scheduling and gives in-flight samples the grace period, a
        second cancels them at once."""
        loop = asyncio.get_running_loop()
        self.interrupts += 1
        self.stop = True
        if self.interrupts == 1:
            self.signal_name = sig.name
            loop.call_later(self.p.options.grace_s, self._cancel)
        else:
            self._cancel()
        if self.on_interrupt is not None:  # said at once: the run may take up to the grace period to stop
            try:
                self.on_interrupt(self.interrupts, len(self._flight))
            except Exception:  # a display problem must not turn an interrupt into a crash
                pass

    def _cancel(self) -> None:
        self.workers.cancel()

    # --- what is in flight ----------------------------------------------------------------------------

    def in_flight(self) -> list[InFlight]:
        """The samples being run now, oldest first, each with its turn and step (read from the call context the
        targets set on every step). Safe to call from another thread (the live view refreshes from its own)."""
        try:
            entries = list(self._flight.items())
        except RuntimeError:  # changed while being copied: the next refresh will show it
            return []
        shown = []
        for task, entry in entries:
            where = entry.where
            if where != "grading":
                found = self.workers.contexts.get(task)
                context = found.get(CALL_CONTEXT, "") if found is not None else ""
                prefix = f"sample {entry.sample_id}, "
                if context.startswith(prefix):
                    where = context[len(prefix):]
            shown.append(InFlight(entry.sample_id, entry.repeat, entry.started, where))
        return sorted(shown, key=lambda e: e.started)

    # --- one (sample, repeat) -------------------------------------------------------------------------

    async def _next(self, work: tuple[Sample, int]) -> bool:
        """Run one (sample, repeat) and write its result; False when it could not be written (no more for this
        worker: the run stops, see _save)."""
        task = asyncio.current_task()
        sample, repeat = work
        started = time.time_ns()
        CALL_CONTEXT.set(f"sample {sample.id}, starting")  # not the previous sample's last step
        if task is not None:
            self._flight[task] = InFlight(str(sample.id), repeat, time.monotonic())
        try:
            result = await self._run_sample(sample, repeat)
        except RunAborted as exc:  # a grader's model became unusable (the sessions' judge): stop, this one unsaved
            self._abort(self.redact(str(exc)))
            return True
        except Exception as exc:  # a bug must not make a row vanish: it is recorded as an errored sample
            result = SampleResult(sample_id=str(sample.id), repeat=repeat, tags=sample.tags,
                                  input=sample.input_text(), error=ErrorInfo(
                                      category="internal", message=self.redact(f"{type(exc).__name__}: {exc}")))
        finally:
            if task is not None:
                self._flight.pop(task, None)
        if not self._save(result):
            return False
        self.telemetry.sample_finished(result, started, time.time_ns())
        self._account(result)
        self._check_error_rate()
        self._check_spend()
        return True

    def _save(self, result: SampleResult) -> bool:
        """Append the result; on a full disk (or any failed write) stop the run, saying what was saved and how to
        go on. The result that could not be written is not counted: the counts are what the file holds."""
        try:
            store_changes(result.trajectory.state_changes)  # graded on the whole world; stored as what changed
            store_changes(result.trajectory.setup_changes)
            self.writer.write(result)
            return True
        except OSError as exc:
            if self.disk_error is None:
                self.disk_error = (f"could not write {self.writer.path} ({exc.strerror or type(exc).__name__})")
                self._abort(f"{self.disk_error}: the disk is full or failing; the {self.acc.total} results written "
                            f"before are saved there; free some space, then resume with --resume {self.output_dir}")
            return False

    def _account(self, result: SampleResult) -> None:
        self.acc.add(result)
        if self.p.repeats > 1:
            self.samples_seen.add(result.sample_id)
        if self.on_result is not None:
            self.on_result(result)

    def _check_error_rate(self) -> None:
        acc = self.acc
        if acc.total >= 10 and acc.errored / acc.total > self.p.options.max_error_rate and not self.stop:
            self._abort(f"{acc.errored}/{acc.total} samples errored, more than --max-error-rate "
                        f"{self.p.options.max_error_rate:g}; stopped scheduling")

    def _check_spend(self) -> None:
        cap = self.p.suite.max_cost
        if cap is not None and self.acc.cost >= cap and not self.stop:
            self._abort(f"spend cap max_cost {cap:g} reached ({self.acc.cost:.4f} after {self.acc.total} samples); "
                        "stopped scheduling new samples")

    def _cost(self, result: SampleResult, grading_s: float = 0.0) -> float | None:
        """Fill `result.roles` (agent, judge, user simulator: tokens, seconds, calls, cost) and return the
        sample's cost: agent tokens at the agent model's price, judge tokens at each judge model's price, the
        simulator's at its model's price. The spend cap adds these up, so it counts all three roles."""
        pricing = self.p.suite.pricing
        trajectory = result.trajectory

        def priced(model: object, usage: Usage) -> float | None:
            return price_of(pricing, model, usage)

        steps = [step for turn in trajectory.turns for step in turn.steps]
        roles = {"agent": RoleUse(usage=result.usage, latency_s=sum(s.latency_s for s in steps), calls=len(steps),
                                  cost=priced(trajectory.agent_model or self.p.agent.model, result.usage))}
        judged = [g for g in result.grades.values() if g.metadata.get("judge")]
        if judged or result.judge_usage.total_tokens:
            judge = RoleUse(latency_s=grading_s, calls=len(judged))
            for grade in judged:
                usage = Usage.model_validate(grade.metadata.get("usage", {}))
                judge.add(RoleUse(usage=usage, cost=priced(grade.metadata.get("judge"), usage)))
            judge.calls = sum(_verdicts_asked(grade) for grade in judged)
            roles["judge"] = judge
        if trajectory.user_calls or trajectory.user_usage.total_tokens:
            model = self.p.user_endpoint.model if self.p.user_endpoint is not None else None
            roles["user"] = RoleUse(usage=trajectory.user_usage, latency_s=trajectory.user_latency_s,
                                    calls=trajectory.user_calls, cost=priced(model, trajectory.user_usage))
        result.roles = roles
        result.user_usage = trajectory.user_usage
        if not pricing:
            return None
        return sum(use.cost or 0.0 for use in roles.values())

    def _abort(self, message: str) -> None:
        if not self.stop:
            self.stop = True
            self.abort_reason = message

    async def _run_sample(self, sample: Sample, repeat: int) -> SampleResult:
        # one episode per (sample, repeat): its own world and toolbox, and its own user player
        episode = Episode(self.p.target, sample, repeat, self.p.user_players, Trajectory(),
                          sandboxes=self.p.sandboxes)
        try:
            return await self._run_episode(episode, sample, repeat)
        finally:  # its sandbox stays up through grading (checks run inside), then goes, however the sample ended
            await asyncio.shield(episode.close())

    async def _run_episode(self, episode: Episode, sample: Sample, repeat: int) -> SampleResult:
        started = time.perf_counter()
        result = SampleResult(sample_id=str(sample.id), repeat=repeat, tags=sample.tags, input=sample.input_text())
        trajectory = episode.trajectory
        # not every kind bounds one; 0 or null turns the default bound off
        limit = sample_limit(getattr(self.p.suite.target, "sample_timeout", None))
        # the suite's own code (custom extractors, graders, rewards) gets what is left of it (custom_code.py)
        SAMPLE_DEADLINE.set(None if limit is None else (time.monotonic() + limit, limit))
        try:
            async with asyncio.timeout(limit):  # a deadline on this task (no task of its own); None: no limit
                await episode.run()
            self.any_success = True
        except (SampleFailed, TimeoutError, WorkspaceTooLarge) as failed:  # the last: raised reading it back
            trajectory.stop_reason = "error"
            error = self._sample_error(failed, sample, limit)
            result.trajectory, result.usage, result.error = trajectory, trajectory.usage(), error
            result.latency_s = time.perf_counter() - started
            result.cost = self._cost(result)
            return result
        result.trajectory = trajectory
        result.usage = trajectory.usage()
        entry = self._flight.get(asyncio.current_task())  # type: ignore[arg-type]
        if entry is not None:
            entry.where = "grading"
        tools = merge_tools(self.p.suite.tools, sample.tools, sample.inject)
        grading_started = time.perf_counter()
        # the graders score; the gate alone counts turns passed and decides (settle, then judge_sample)
        grades = self.p.gate.settle(await grade_sample(self.p.graders, sample, trajectory, tools,
                                                             user_tools=self.p.suite.user_tools,
                                                             computer=episode.computer))
        result.grades = {name: self._redacted(g) for name, g in grades.items()}
        # one rule decides the sample (gate.judge_sample): weighted rule + required graders + offered tools;
        # a missing grade the verdict needs makes the sample incomplete (errored), never passed on the rest
        verdict = await self.p.gate.ajudge_sample(result.grades, trajectory, sample)
        result.score, result.passed, result.failed_by = verdict.score, verdict.passed, verdict.failed_by
        result.score_note = verdict.note
        if verdict.incomplete is not None:
            result.error = verdict.incomplete
        judge = Usage()
        for grade in result.grades.values():
            if "usage" in grade.metadata:  # a judge's grade (without one, a zero: nothing to add)
                judge.add(Usage.model_validate(grade.metadata["usage"]))
        result.judge_usage = judge
        result.cost = self._cost(result, time.perf_counter() - grading_started)
        result.latency_s = time.perf_counter() - started
        self.p.target.recorded_result(sample, result)
        return result

    def _sample_error(self, failed: Exception, sample: Sample, limit: float | None) -> ErrorInfo:
        """Why an episode failed, as the sample's error; a fatal cause (before any success) aborts the run."""
        if isinstance(failed, TimeoutError):
            return ErrorInfo(category="timeout", message=f"sample {sample.id} took longer than sample_timeout "
                                                         f"{limit or 0:g}s; raise target.sample_timeout (0: no limit)")
        elif isinstance(cause := getattr(failed, "cause", failed), UserSimulatorError):  # the user, not the
            # agent: never the agent's zero
            error = ErrorInfo(category="user_simulator", message=self.redact(cause.message))
            if cause.fatal and (cause.fatal_after_success or not self.any_success):
                self._abort(error.message)
        else:
            found = classify(cause, self.p.agent)
            error = ErrorInfo(category=found.category, message=self.redact(found.message))
            if found.fatal and (found.fatal_after_success or not self.any_success):
                self._abort(error.message)
        return error

    def _redacted(self, grade: Grade) -> Grade:
        if grade.error:
            grade.error = self.redact(grade.error)
            grade.rationale = self.redact(grade.rationale)
        return grade


def _verdicts_asked(grade: Grade) -> int:
    """The judge verdicts behind one grade: one per turn or reply judged (per-turn, `scope: reply`), times the
    samples and panel judges asked for each; a grade is not one call (counting graders undercounted the judge)."""
    per_turn = grade.metadata.get("turn_calls")
    if isinstance(per_turn, list) and per_turn:
        return sum(max(len(call.get("verdicts") or []), 1) for call in per_turn if isinstance(call, dict))
    return max(len(grade.metadata.get("verdicts") or []), 1)


def _refuse_earlier_run(directory: Path) -> None:
    """-o on a folder that already holds results would append a second run to the first one's file: its counts,
    report and resume would mix both. Continuing a run is --resume; a new run gets a new folder."""
    results = directory / RESULTS_NAME
    if directory.is_dir() and results.is_file() and results.stat().st_size > 0:
        raise ConfigError(f"-o {directory}: already holds the results of a run; continue it with --resume "
                          f"{directory}, or give a new folder")

"""Resume a killed or interrupted run: keep what finished, repair a torn last line, refuse a changed suite or
endpoints that now resolve elsewhere (the options it continues with are in started_with.py); and what
`--rerun-failed` reruns, refusing a run that never finished."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from evals_cli.errors import ConfigError, refuse_newer
from evals_cli.models.results import SCHEMA_VERSION, SampleResult
from evals_cli.output.files import RESULTS_NAME, results_path
from evals_cli.output.fingerprint import Fingerprint
from evals_cli.output.manifest import MANIFEST_NAME, Manifest, StartedWith, folder_error, read_manifest
from evals_cli.runner.started_with import FailedSamples, resume_command, started_manifest


class RecordedUsers(Protocol):
    """What `unreplayable` reads of a --replay-user run (simulation/replay_user.py: RecordedRun)."""

    @property
    def path(self) -> Path: ...

    @property
    def results(self) -> int: ...

    @property
    def samples(self) -> frozenset[str]: ...

    @property
    def replayable(self) -> frozenset[str]: ...


@dataclass
class ResumeState:
    directory: Path
    kept: list[SampleResult] = field(default_factory=list)
    skip: set[tuple[str, int]] = field(default_factory=set)
    repaired: str | None = None


def _a_run_folder(target: Path, directory: Path) -> None:
    """ConfigError (exit 2) unless `target` is the folder (or the results file) of a run `evals run` started."""
    if not target.exists():
        raise ConfigError(f"--resume {target}: no such folder; give the folder of an earlier `evals run` (the one "
                          "that holds its run.json and results.jsonl, printed as 'results: DIR' at the end of the run)")
    if not target.is_dir() and target.name != RESULTS_NAME:
        raise ConfigError(f"--resume {target}: is a file, not a run folder; give the folder of an earlier `evals "
                          f"run` or its {RESULTS_NAME}")
    if not (directory / MANIFEST_NAME).is_file():
        raise ConfigError(f"--resume {target}: {directory} holds no {MANIFEST_NAME}, so it is not the folder of a run "
                          f"started by `evals run`; give that folder (or its {RESULTS_NAME})")


def load_for_resume(target: Path, fp: Fingerprint, retry_errors: bool, now: StartedWith | None = None,
                    graders: list[str] | None = None) -> ResumeState:
    """Read the earlier results; with `retry_errors`, errored lines are dropped so their reruns do not
    duplicate them. The results file is rewritten (atomically) only when something must go. `now` and `graders`
    (what this resume resolved: endpoints, graders) are checked against what the run started with."""
    path = results_path(target)
    directory = path.parent
    _a_run_folder(target, directory)
    manifest = read_manifest(directory)
    old = manifest.fingerprint
    changed = [what for what in ("suite", "dataset") if getattr(old, what) != getattr(fp, what)]
    if changed:
        raise ConfigError(f"{directory}: cannot resume: the {' and the '.join(changed)} changed since this run "
                          "started, so old and new results would not be comparable; start a new run (-o NEW_DIR)")
    _same_resolution(directory, manifest, now, graders)
    state = ResumeState(directory=directory)
    if not path.is_file():
        return state
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    keep_lines: list[str] = []
    dropped = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            refuse_newer(data, SCHEMA_VERSION, f"{path}:{number}", "results line")
            result = SampleResult.model_validate(data)
        except (ValueError, ValidationError):
            if number == len(lines):
                state.repaired = f"{path}:{number}: torn last line removed (the run was killed while writing)"
                dropped += 1
                continue
            raise ConfigError(f"{path}:{number}: not a results line; cannot resume from a damaged file") from None
        key = (result.sample_id, result.repeat)
        if key in state.skip:
            dropped += 1
            continue  # a duplicate from an older resume: keep the first
        if result.error is not None and retry_errors:
            dropped += 1
            continue
        state.skip.add(key)
        state.kept.append(result)
        keep_lines.append(line if line.endswith("\n") else line + "\n")
    if dropped:
        _rewrite(directory, path, keep_lines)
    return state


def _rewrite(directory: Path, path: Path, keep_lines: list[str]) -> None:
    """The results file with only the kept lines, replaced atomically."""
    tmp = directory / (RESULTS_NAME + ".tmp")
    try:
        tmp.write_text("".join(keep_lines), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # nothing is lost: the old file stays whole until os.replace
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise folder_error(directory, exc, "--resume") from None


def _same_resolution(directory: Path, manifest: Manifest, now: StartedWith | None, graders: list[str] | None) -> None:
    """Refuse a resume whose endpoints or graders resolved differently from the run's: the options are the
    run's own by now (`resumed_options`), but the suite's URLs and the EVAL_* variables are read afresh, and
    results from another judge or agent endpoint must not be merged into one verdict."""
    problems: list[str] = []
    if graders is not None and manifest.graders and sorted(graders) != sorted(manifest.graders):
        problems.append(f"--resume {directory}: that run graded with {', '.join(manifest.graders)}; this resume "
                        f"would grade with {', '.join(graders) or 'none'}; start a new run (-o NEW_DIR)")
    started = manifest.started_with
    if now is not None and started is not None:
        for role in dict.fromkeys([*started.endpoints, *now.endpoints]):
            then, here = started.endpoints.get(role), now.endpoints.get(role)
            if then != here:
                problems.append(f"--resume {directory}: the {role} is {here or 'none'}, but that run started with "
                                f"{then or 'none'}; set it back (the suite, --base-url, --judge-model, "
                                "--judge-base-url or the EVAL_* variables), or start a new run (-o NEW_DIR)")
    if problems:
        raise ConfigError(problems)


@dataclass(frozen=True)
class Unfinished:
    """A run that did not run every sample it planned: how it ended and how much never ran (None: unknown)."""

    how: str
    never_ran: int | None
    planned: int | None

    def describe(self) -> str:
        if self.never_ran is not None and self.planned is not None:
            return f"{self.how}: {self.never_ran} of its {self.planned} samples never ran"
        return self.how


def unfinished_run(directory: Path, results: int, samples: int) -> Unfinished | None:
    """Whether the run in `directory`, whose results file holds `results` lines over `samples` distinct samples,
    stopped before it ran every sample it planned: from its summary.json, or, when it has none (killed), from
    the plan its run.json keeps. None when it finished, or when the folder says nothing of a plan (a bare
    results file)."""
    from evals_cli.output.files import SUMMARY_NAME

    summary_path = directory / SUMMARY_NAME
    if summary_path.is_file():
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
            refuse_newer(summary, SCHEMA_VERSION, str(summary_path), "summary")
            cov = summary.get("coverage") or {}
            expected, total = cov.get("expected_results"), int(summary.get("total", results))
            status = str(summary.get("status") or "stopped")
        except (OSError, ValueError, TypeError, AttributeError):
            return Unfinished("its summary.json is unreadable", None, None)
        if expected is None or total >= int(expected):
            return None
        selected, ran = cov.get("selected"), cov.get("run")
        never = int(selected) - int(ran) if selected is not None and ran is not None else None
        return Unfinished(f"{status} after {total} of {expected} sample runs", never,
                          int(selected) if selected is not None else None)
    if not (directory / MANIFEST_NAME).is_file():
        return None
    try:
        started = read_manifest(directory).started_with
    except ConfigError:
        started = None
    how = "stopped before it finished (no summary.json)"
    if started is None or started.planned_results is None:
        return Unfinished(how, None, None)
    if results >= started.planned_results:
        return None  # killed after its last result, before its summary: every sample ran
    planned = started.planned_samples
    return Unfinished(how, planned - samples if planned is not None else None, planned)


def failed_samples(target: Path) -> FailedSamples:
    """The samples of an earlier run (its folder or results.jsonl) to run again: a sample counts as failed when
    any of its repeats failed the gate's per-sample rule or errored. Only the ids are read, line by line; a torn
    last line (a killed run) is skipped. A run that never finished is refused (ConfigError, saying how many
    samples never ran and the command that finishes it): its samples that never ran have no result to fail, and
    "nothing to rerun" of such a run read as "nothing failed"."""
    path = results_path(target)
    if not target.exists():
        raise ConfigError(f"--rerun-failed {target}: no such folder; give the folder of an earlier `evals run` (printed "
                          "as 'results: DIR' at the end of the run) or its results.jsonl")
    if not path.is_file():
        raise ConfigError(f"--rerun-failed {target}: no {RESULTS_NAME} there, so it is not the folder of a run; give "
                          f"the folder of an earlier `evals run` or its {RESULTS_NAME}")
    failed: dict[str, None] = {}
    seen: set[str] = set()
    lines = 0
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    refuse_newer(row, SCHEMA_VERSION, f"{path}:{number}", "results line")
                    sample_id = str(row["sample_id"])
                except (ValueError, KeyError, TypeError):
                    if fh.readline() == "":  # the last line, torn by a kill: the results before it stand
                        break
                    raise ConfigError(f"{path}:{number}: not a results line; --rerun-failed needs the results of a "
                                      "run") from None
                seen.add(sample_id)
                lines += 1
                if row.get("error") is not None or row.get("passed") is False:
                    failed[sample_id] = None
    except OSError as exc:
        raise ConfigError(f"--rerun-failed {target}: cannot read {path} ({exc.strerror or type(exc).__name__})") \
            from None
    unfinished = unfinished_run(path.parent, lines, len(seen))
    if unfinished is not None:  # samples that never ran have no result to fail: "nothing to rerun" would lie
        finish = resume_command("SUITE", path.parent, comment=False)
        raise ConfigError(f"--rerun-failed {target}: that run never finished ({unfinished.describe()}), so whether "
                          f"those samples fail is not known; finish it first ({finish}), then rerun its failures "
                          f"with --rerun-failed {target}")
    return FailedSamples(path=path, ids=list(failed), samples=len(seen))


def resumed_rerun(target: Path) -> FailedSamples | None:
    """The samples a resumed `--rerun-failed` run keeps: those its run.json says it selected when it started (the
    run it read them from may have changed since); None for a run that was not a rerun."""
    manifest = started_manifest(target)
    started = manifest.started_with if manifest is not None else None
    if started is None or started.rerun_ids is None:
        return None
    return FailedSamples(path=Path(started.rerun_failed or target), ids=list(started.rerun_ids),
                         samples=len(started.rerun_ids))


def unreplayable(run: RecordedUsers | None, simulated_ids: list[str]) -> list[str]:
    """Under --replay-user: the selected simulated samples RUN holds no conversation of, as one problem (they
    would be played by the simulator afresh, next to replayed ones, with nothing said)."""
    if run is None or not simulated_ids:
        return []
    missing = [i for i in simulated_ids if i not in run.replayable]
    if not missing:
        return []
    never = [i for i in missing if i not in run.samples]
    shown = ", ".join(missing[:10]) + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else "")
    why, fix = [], "run only the samples it holds (--sample-id)"
    if never:
        unfinished = unfinished_run(run.path.parent, run.results, len(run.samples))
        why.append(f"{len(never)} never ran there" + (f": that run never finished ({unfinished.describe()})"
                                                     if unfinished is not None else ""))
        if unfinished is not None:
            finish = resume_command("SUITE", run.path.parent, comment=False)
            fix = f"finish that run first ({finish}), or {fix}"
    if len(never) < len(missing):
        why.append(f"{len(missing) - len(never)} have a result there but no recorded conversation")
    return [f"--replay-user {run.path}: {len(missing)} of the {len(simulated_ids)} simulated "
            f"conversations this run would play have no recorded user to replay ({'; '.join(why)}): {shown}; "
            f"{fix}"]

"""Resume a killed or interrupted run: keep what finished, repair a torn last line, refuse a changed suite."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from evals_cli.errors import ConfigError
from evals_cli.models.results import SampleResult
from evals_cli.output.files import RESULTS_NAME, results_path
from evals_cli.output.fingerprint import Fingerprint
from evals_cli.output.manifest import MANIFEST_NAME, folder_error, read_manifest
from evals_cli.runner.options import RunOptions


def resumed_options(options: RunOptions) -> RunOptions:
    """The options a resumed run continues with: the agent model and the repeats the run started with, from its
    run.json. Without this, `--resume RUN` resolved the model afresh (the suite's default, EVAL_AGENT_MODEL) and
    filed another model's results under the run's model, and ran the suite's repeats instead of the run's, so the
    missing repeats never ran. A different --model is refused; an explicit --repeats still wins."""
    if options.resume is None:
        return options
    directory = results_path(options.resume).parent
    if not (directory / MANIFEST_NAME).is_file():
        return options  # load_for_resume says what is wrong with the folder
    manifest = read_manifest(directory)
    update: dict[str, object] = {}
    if manifest.model is not None:
        if options.model is not None and options.model != manifest.model:
            raise ConfigError(f"--resume {options.resume}: that run's agent model is {manifest.model}, not "
                              f"{options.model}; resume it without --model, or start a new run for {options.model} "
                              "(-o NEW_DIR)")
        update["model"] = manifest.model
    if options.repeats is None:
        update["repeats"] = manifest.repeats
    return options.model_copy(update=update) if update else options


@dataclass
class ResumeState:
    directory: Path
    kept: list[SampleResult] = field(default_factory=list)
    skip: set[tuple[str, int]] = field(default_factory=set)
    repaired: str | None = None


def load_for_resume(target: Path, fp: Fingerprint, retry_errors: bool) -> ResumeState:
    """Read the earlier results; with `retry_errors`, errored lines are dropped so their reruns do not
    duplicate them. The results file is rewritten (atomically) only when something must go."""
    path = results_path(target)
    directory = path.parent
    if not target.exists():
        raise ConfigError(f"--resume {target}: no such folder; give the folder of an earlier `evals run` (the one "
                          "that holds its run.json and results.jsonl, printed as 'results: DIR' at the end of the run)")
    if not target.is_dir() and target.name != RESULTS_NAME:
        raise ConfigError(f"--resume {target}: is a file, not a run folder; give the folder of an earlier `evals "
                          f"run` or its {RESULTS_NAME}")
    if not (directory / MANIFEST_NAME).is_file():
        raise ConfigError(f"--resume {target}: {directory} holds no {MANIFEST_NAME}, so it is not the folder of a run "
                          f"started by `evals run`; give that folder (or its {RESULTS_NAME})")
    old = read_manifest(directory).fingerprint
    changed = [what for what in ("suite", "dataset") if getattr(old, what) != getattr(fp, what)]
    if changed:
        raise ConfigError(f"{directory}: cannot resume: the {' and the '.join(changed)} changed since this run "
                          "started, so old and new results would not be comparable; start a new run (-o NEW_DIR)")
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
            result = SampleResult.model_validate(json.loads(line))
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
        tmp = directory / (RESULTS_NAME + ".tmp")
        try:
            tmp.write_text("".join(keep_lines), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # nothing is lost: the old file stays whole until os.replace
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise folder_error(directory, exc, "--resume") from None
    return state


@dataclass
class FailedSamples:
    """What `--rerun-failed RUN` reruns: the samples that failed or errored in any repeat, in first-seen order."""

    path: Path
    ids: list[str]
    samples: int  # distinct samples with a result in that run


def failed_samples(target: Path) -> FailedSamples:
    """The samples of an earlier run (its folder or results.jsonl) to run again: a sample counts as failed when
    any of its repeats failed the gate's per-sample rule or errored. Only the ids are read, line by line; a torn
    last line (a killed run) is skipped."""
    path = results_path(target)
    if not target.exists():
        raise ConfigError(f"--rerun-failed {target}: no such folder; give the folder of an earlier `evals run` (printed "
                          "as 'results: DIR' at the end of the run) or its results.jsonl")
    if not path.is_file():
        raise ConfigError(f"--rerun-failed {target}: no {RESULTS_NAME} there, so it is not the folder of a run; give "
                          f"the folder of an earlier `evals run` or its {RESULTS_NAME}")
    failed: dict[str, None] = {}
    seen: set[str] = set()
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    sample_id = str(row["sample_id"])
                except (ValueError, KeyError, TypeError):
                    if fh.readline() == "":  # the last line, torn by a kill: the results before it stand
                        break
                    raise ConfigError(f"{path}:{number}: not a results line; --rerun-failed needs the results of a "
                                      "run") from None
                seen.add(sample_id)
                if row.get("error") is not None or row.get("passed") is False:
                    failed[sample_id] = None
    except OSError as exc:
        raise ConfigError(f"--rerun-failed {target}: cannot read {path} ({exc.strerror or type(exc).__name__})") \
            from None
    return FailedSamples(path=path, ids=list(failed), samples=len(seen))

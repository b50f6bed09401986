"""What a run started with and how `--resume` continues with it: the options run.json keeps (`StartedWith`), the
options a resume takes from there or refuses, and the command printed to continue a run.

A resume continues the run it names, with the options that run started with; it never mixes results made with
other settings into one verdict. The resolved endpoints and graders are checked where the results are read
(`resume.load_for_resume`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.invocation import command
from evals_cli.output.files import RESULTS_NAME, results_path
from evals_cli.output.manifest import MANIFEST_NAME, Manifest, StartedWith, read_manifest, read_matrix
from evals_cli.run_options import RunOptions

# The options a resume takes from run.json when they are not given, and refuses when given with another value:
# (RunOptions field, the flag as it is typed). The agent model, the repeats and the shard are kept in run.json's
# own fields (a merge reads them too).
_TAKEN: tuple[tuple[str, str], ...] = (
    ("sample_ids", "--sample-id"), ("max_samples", "-n/--max-samples"), ("tags", "--tag"),
    ("no_judge", "--no-judge"), ("base_url", "--base-url"), ("judge_model", "--judge-model"),
    ("judge_base_url", "--judge-base-url"), ("target_file", "--target"), ("replay", "--replay"),
    ("replay_user", "--replay-user"), ("on_divergence", "--on-divergence"), ("max_error_rate", "--max-error-rate"),
)
_PATHS = {"target_file", "replay", "record", "replay_user"}
_URLS = {"base_url": "--base-url", "judge_base_url": "--judge-base-url"}
_SETS = {"sample_ids", "tags"}
# what the resume hint writes for an option whose value run.json does not keep
_PLACEHOLDERS = {"--judge-api-key": "KEY", "--base-url": "URL", "--judge-base-url": "URL"}


def _given(options: RunOptions, name: str) -> bool:
    """Whether the caller set this option: None and False mean 'not given' (a flag has no 'off' spelling);
    --max-error-rate has a default, so it counts as given only when set explicitly."""
    if name == "max_error_rate":
        return name in options.model_fields_set
    value = getattr(options, name)
    return value is not None and value is not False


def _kept(name: str, value: Any) -> Any:
    """An option as run.json keeps it: paths absolute, URLs with credentials masked, lists without repeats."""
    if value is None:
        return None
    if name in _PATHS:
        return str(Path(value).expanduser().resolve())
    if name in _URLS:
        from evals_cli.endpoints.secrets import mask_url

        return mask_url(str(value))
    if name in _SETS:
        return list(dict.fromkeys(str(v) for v in value))
    return value


def _same(name: str, now: Any, stored: Any) -> bool:
    now = _kept(name, now)
    if name in _SETS and now is not None and stored is not None:
        return sorted(now) == sorted(stored)
    return bool(now == stored)


def _shown(name: str, value: Any) -> str:
    if name in _SETS:
        return " ".join(shlex.quote(str(v)) for v in value)
    return str(value)


@dataclass
class FailedSamples:
    """What `--rerun-failed RUN` reruns: the samples that failed or errored in any repeat, in first-seen order."""

    path: Path
    ids: list[str]
    samples: int  # distinct samples with a result in that run


def record_options(options: RunOptions, endpoints: dict[str, str], rerun: FailedSamples | None,
                   planned_samples: int | None, planned_results: int | None, *, unsharded_samples: int | None = None,
                   planned_ids: list[str] | None = None) -> StartedWith:
    """What run.json keeps of the options a run starts with (see `StartedWith`); a key is kept only as 'it was
    given', a URL holding credentials only masked, and both go to `needs_again`."""
    data: dict[str, Any] = {name: _kept(name, getattr(options, name)) for name, _ in _TAKEN}
    data["record"] = _kept("record", options.record)
    again = [flag for name, flag in _URLS.items()
             if getattr(options, name) is not None and data[name] != getattr(options, name)]
    if options.judge_api_key:
        again.insert(0, "--judge-api-key")
    return StartedWith(**data, needs_again=again, endpoints=endpoints, planned_samples=planned_samples,
                       planned_results=planned_results, unsharded_samples=unsharded_samples, planned_ids=planned_ids,
                       rerun_failed=str(rerun.path) if rerun is not None else None,
                       rerun_ids=list(rerun.ids) if rerun is not None else None)


def started_manifest(target: Path) -> Manifest | None:
    """The run.json of the run in `target` (its folder or results.jsonl; for the top folder of a run over several
    models, the first model's, which holds the options every model started with); None when there is none."""
    if not (target.is_dir() or (target.name == RESULTS_NAME and target.is_file())):
        return None  # not a run folder: load_for_resume says what it is
    directory = results_path(target).parent
    matrix = read_matrix(directory) if directory.is_dir() else None
    if matrix is not None:
        folders = [directory / run.folder for run in matrix.models]
        directory = next((f for f in folders if (f / MANIFEST_NAME).is_file()), directory)
    if not (directory / MANIFEST_NAME).is_file():
        return None
    return read_manifest(directory)


def _started_with(options: RunOptions, started: StartedWith, where: str, problems: list[str], update: dict[str, Any],
                  differs: Callable[[str, str, str | None], None]) -> None:
    """The options run.json kept (`started_with`): each not given is taken from there (`update`), each given
    with another value is a problem, and each given with credentials run.json does not keep must be given again."""
    for name, flag in _TAKEN:
        stored = getattr(started, name)
        if _given(options, name):
            if not _same(name, getattr(options, name), stored):
                if name == "no_judge":
                    problems.append(f"{where}: --no-judge: that run started with the judge on (its model_judge "
                                    "graders grade every sample); a resume continues with the run's own "
                                    "options: leave --no-judge out, or start a new run (-o NEW_DIR)")
                else:
                    differs(flag, _shown(name, _kept(name, getattr(options, name))),
                            None if stored is None else _shown(name, stored))
        elif flag in started.needs_again:
            problems.append(f"{where}: that run started with {flag} given on the command line, with "
                            f"credentials run.json does not keep; give it again: {flag} "
                            f"{_PLACEHOLDERS[flag]}")
        elif stored is not None and stored is not False:
            update[name] = Path(stored) if name in _PATHS else stored
    if started.record is not None and options.record is None and options.replay is None:
        update["record"] = Path(started.record)  # the recording goes on (appended), as the run did
    if "--judge-api-key" in started.needs_again and not options.judge_api_key:
        problems.append(f"{where}: that run started with --judge-api-key given on the command line; run.json "
                        "does not keep keys, so give it again: --judge-api-key KEY")


def resumed_options(options: RunOptions) -> RunOptions:
    """The options a resumed run continues with: those its run started with, from its run.json. An option not
    given is taken from there, not from the default: a pasted `--resume DIR` of a run started with
    `--sample-id 'good*' --no-judge --base-url X` once ran every sample, with the judge, against the suite's
    endpoint, and merged them into one verdict. An option given with another value is refused (ConfigError,
    exit 2, one problem per option): a run continues as it started, or a new run starts. A key (and a URL with
    credentials) given on the command line is not stored, so it must be given again."""
    if options.resume is None:
        return options
    manifest = started_manifest(options.resume)
    if manifest is None:
        return options  # load_for_resume says what is wrong with the folder
    where = f"--resume {options.resume}"
    matrix = read_matrix(options.resume) if options.resume.is_dir() else None
    problems: list[str] = []
    update: dict[str, Any] = {}

    def differs(flag: str, now: str, then: str | None) -> None:
        started = f"{flag} {then}" if then is not None else f"without {flag}"
        problems.append(f"{where}: {flag} {now} is not what that run started with ({started}); a resume "
                        f"continues with the run's own options (its run.json): leave {flag} out, or start a new "
                        "run (-o NEW_DIR)")

    if matrix is not None:  # --gate decides the combined verdict: kept in matrix.json (given: see _given)
        if "gate" in options.model_fields_set and options.gate != matrix.gate_mode:
            differs("--gate", options.gate, matrix.gate_mode)
        update["gate"] = matrix.gate_mode
    if manifest.model is not None and matrix is None:  # a run over several models checks its models itself
        if options.model is not None and options.model != manifest.model:
            problems.append(f"{where}: that run's agent model is {manifest.model}, not {options.model}; resume it "
                            f"without --model, or start a new run for {options.model} (-o NEW_DIR)")
        update["model"] = manifest.model
    if options.repeats is not None and options.repeats != manifest.repeats:
        differs("--repeats", str(options.repeats), str(manifest.repeats))
    update["repeats"] = manifest.repeats
    if options.shard is not None and options.shard != manifest.shard:
        differs("--shard", options.shard, manifest.shard)
    update["shard"] = manifest.shard
    if manifest.started_with is not None:  # older run.json files kept only the model and the repeats
        _started_with(options, manifest.started_with, where, problems, update, differs)
    if problems:
        raise ConfigError(problems)
    return type(options)(**{**dict(options), **update})  # checked again, as if given: the combinations hold


def resume_command(suite: Path | str, folder: Path, *, retry_errors: bool = False, comment: bool = True) -> str:
    """The command that continues the run in `folder`, as printed after a run that did not finish (the one place
    it is built). Every option the run started with is in its run.json and taken from there; what run.json does
    not keep (a --judge-api-key, a URL with credentials, given on the command line) is written as a placeholder,
    with a shell comment saying so (`comment`; off inside a sentence), since the line without it is refused."""
    words = ["run", str(suite), "--resume", str(folder)] + (["--retry-errors"] if retry_errors else [])
    try:
        manifest = started_manifest(folder)
    except ConfigError:  # an unreadable run.json: the resume itself will say so
        manifest = None
    again = manifest.started_with.needs_again if manifest is not None and manifest.started_with else []
    line = command(*words)
    if again:
        line += "".join(f" {flag} {_PLACEHOLDERS[flag]}" for flag in again)
        if comment:
            line += (f"  # {', '.join(_PLACEHOLDERS[flag] + ' for ' + flag for flag in again)}: the value the "
                        "run started with (run.json keeps no keys or credentials)")
    return line

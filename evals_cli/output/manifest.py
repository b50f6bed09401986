"""`run.json`, written when a run starts: what makes its results comparable (fingerprint), what is
needed to summarise them again without the suite (gate, graders, repeats, pricing, shard), and the options it
was started with (`started_with`). Resume checks the fingerprint and continues with those options (or refuses
different ones); merge checks the fingerprint across shards and rebuilds one summary from it."""

from __future__ import annotations

import errno
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evals_cli.errors import ConfigError, EvalsError
from evals_cli.models.calibration import JudgeRecord
from evals_cli.models.results import MatrixSummary
from evals_cli.output.files import read_versioned
from evals_cli.output.fingerprint import Fingerprint

MANIFEST_NAME = "run.json"
MATRIX_NAME = "matrix.json"
"""The top file of a run over several models: which model ran in which subfolder (each an ordinary run folder)."""
_RESERVED = {name.casefold() for name in (MATRIX_NAME, MANIFEST_NAME, "results.jsonl", "summary.json")}


MANIFEST_VERSION = 1


class StartedWith(BaseModel):
    """The options a run started with, so that `--resume` continues with them instead of the defaults: without
    them a pasted `--resume DIR` ran every sample, with the judge, against the suite's endpoint, into the results
    of a filtered `--no-judge` run against another. Paths are absolute (a resume may start in another folder);
    URLs have their credentials masked and keys are never stored: `needs_again` names the options whose value
    was not stored, which a resume must be given again. `endpoints` (role -> model and masked URL, as resolved)
    and the planned counts are checked and reported, never taken."""

    sample_ids: list[str] | None = None
    max_samples: int | None = None
    tags: list[str] | None = None
    no_judge: bool = False
    base_url: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    target_file: str | None = None
    replay: str | None = None
    record: str | None = None
    replay_user: str | None = None
    on_divergence: str | None = None
    max_error_rate: float | None = None
    rerun_failed: str | None = None  # the run --rerun-failed read: named in messages
    rerun_ids: list[str] | None = None  # the samples it selected, which a resume keeps (that run may change since)
    needs_again: list[str] = Field(default_factory=list)
    endpoints: dict[str, str] = Field(default_factory=dict)
    planned_samples: int | None = None  # samples selected to run (after filters, -n and shard)
    planned_results: int | None = None  # planned_samples x repeats
    # the whole run's plan a shard was cut from, and the shard's own ids, which `evals merge` checks each part
    # against (its rows, the other parts); None in the run.json of older versions, and the ids without --shard
    unsharded_samples: int | None = None  # samples the filters and -n kept, before the split
    planned_ids: list[str] | None = None  # a shard's samples, in dataset order


class Manifest(BaseModel):
    schema_version: int = MANIFEST_VERSION
    suite: str
    fingerprint: Fingerprint
    gate: dict[str, Any] = Field(default_factory=dict)
    graders: list[str] = Field(default_factory=list)
    repeats: int = 1
    pricing: dict[str, tuple[float, float]] = Field(default_factory=dict)
    shard: str | None = None
    model: str | None = None  # the agent's model: which column of a run over several models this folder is
    started_with: StartedWith | None = None  # None in the run.json of older versions
    judges: dict[str, JudgeRecord] = Field(default_factory=dict)  # each judge's pass mark and fingerprint (labels)


def is_matrix(folder: Path) -> bool:
    """Whether `folder` is the top folder of a run over several models."""
    return folder.is_dir() and (folder / MATRIX_NAME).is_file()


def folder_names(models: Sequence[str]) -> dict[str, str]:
    """model -> its subfolder name: the name with anything but letters, digits, `_`, `.` and `-` made `-`
    (`openai/gpt-4o` -> `openai-gpt-4o`), at most 80 characters; names that then collide, even only in case
    (macOS and Windows folders ignore case), get `-2`, `-3`, ..."""
    names: dict[str, str] = {}
    taken = set(_RESERVED)
    for model in models:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-.")[:80].strip("-.") or "model"
        name, n = base, 2
        while name.casefold() in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name.casefold())
        names[model] = name
    return names


def read_matrix(folder: Path) -> MatrixSummary | None:
    """The matrix.json of a run over several models; None when `folder` is not one."""
    path = folder / MATRIX_NAME
    if not folder.is_dir() or not path.is_file():
        return None
    matrix = read_versioned(path, MatrixSummary, "matrix.json")
    if matrix is None:
        raise ConfigError(f"{path}: unreadable; it should say which model ran in which subfolder")
    return matrix


def write_matrix(folder: Path, summary: MatrixSummary) -> None:
    path = folder / MATRIX_NAME
    tmp = folder / (MATRIX_NAME + ".tmp")
    try:
        tmp.write_text(summary.model_dump_json(indent=2), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise folder_error(folder, exc) from None


def write_manifest(directory: Path, manifest: Manifest, flag: str = "-o") -> None:
    """Create the run folder and write run.json: the first write of a run, so a folder that cannot be a run
    folder (a file, under a file, unwritable, a full disk) is refused here, before any model call."""
    make_run_folder(directory, flag)
    path = directory / MANIFEST_NAME
    try:
        path.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    except OSError as exc:
        raise folder_error(directory, exc, flag) from None


def make_run_folder(directory: Path, flag: str = "-o") -> None:
    """mkdir -p, with every way it can fail said in words that name the path and the fix."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{flag} {directory}: is a file, not a folder; give a folder path (it is created if "
                          "missing), e.g. results/my-run")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise folder_error(directory, exc, flag) from None


def _file_ancestor(path: Path) -> Path | None:
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.is_dir():
            return parent
    return None


DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def folder_error(directory: Path, exc: OSError, flag: str = "-o") -> EvalsError:
    """The message for an OSError on a run folder: exit 2 when the path is wrong (a file, under a file,
    unwritable), exit 3 when the disk is (full, over quota, failing)."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in DISK_ERRNOS:
        return EvalsError(f"{flag} {directory}: cannot write ({reason}); free some space or choose a folder on "
                          "another disk")
    blocker = _file_ancestor(directory)
    if blocker is not None and blocker != directory:
        return ConfigError(f"{flag} {directory}: {blocker} is a file, so no folder can be made under it; choose "
                           "another path")
    if blocker == directory:
        return ConfigError(f"{flag} {directory}: is a file, not a folder; give a folder path")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ConfigError(f"{flag} {directory}: cannot write there ({reason}); choose a folder you can write to")
    return ConfigError(f"{flag} {directory}: cannot create or write this folder ({reason}); choose a folder "
                       "you can write to")


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_NAME
    if not path.is_file():
        raise ConfigError(f"{directory}: no {MANIFEST_NAME}; give the folder of a run started by `evals run`")
    manifest = read_versioned(path, Manifest, "run manifest")
    if manifest is None:
        raise ConfigError(f"{path}: unreadable run manifest")
    return manifest

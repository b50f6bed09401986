"""What `evals merge` compares across parts before it writes anything: the whole run's plan each part was cut from.

A shard plans only its share of the samples, so its planned count and ids differ from the other parts'. What
must be alike is the plan they were all cut from: the suite and dataset (the fingerprint), the filters
(`--sample-id`, `--tag`, `-n`, the ids `--rerun-failed` chose), the repeats, the graders, and the number of
samples the filters kept before the split. Parts that differ in any of these are not one run: their union holds
samples one run would not have, or lacks some it would, and a verdict over it would read as the run's. The models
of a run over several models are compared the same way, the model aside: they stand side by side only when they
ran the same samples.

Each fact is read from run.json. A run.json of an older evals, without `started_with` (the options) or without
`unsharded_samples`, gives what its summary.json's coverage says instead; a fact recorded in one part and not in
another is refused, since the merge cannot tell whether they agree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals_cli.models.results import RunSummary
from evals_cli.output.manifest import Manifest

PlanFacts = dict[str, object]
"""Where a fact of the plan is read ("run.json field `repeats`") -> its value, as compared."""

_FIX = "merge parts of one plan (every part run with the same suite, dataset and options, only --shard differing)"


@dataclass(frozen=True)
class Part:
    """One folder given to the merge, as its messages name it: `shard 2 of 3 (runs/x)`, or the folder alone."""

    directory: Path
    shard: tuple[int, int] | None
    model: str | None = None

    @property
    def short(self) -> str:
        if self.model is not None:
            return f"model {self.model}"
        return f"shard {self.shard[0]}" if self.shard is not None else str(self.directory)

    @property
    def label(self) -> str:
        if self.model is not None:
            return f"model {self.model} ({self.directory})"
        if self.shard is not None:
            return f"shard {self.shard[0]} of {self.shard[1]} ({self.directory})"
        return str(self.directory)


def plan_facts(manifest: Manifest, summary: RunSummary | None) -> PlanFacts:
    """The facts of the whole run's plan this part records (the part's own share left out)."""
    facts: PlanFacts = {
        "run.json field `suite`": manifest.suite,
        "run.json field `fingerprint.suite`": manifest.fingerprint.suite,
        "run.json field `fingerprint.dataset`": manifest.fingerprint.dataset,
        "run.json field `repeats`": manifest.repeats,
        "run.json field `graders`": sorted(manifest.graders),
    }
    started = manifest.started_with
    cov = summary.coverage if summary is not None else None
    if started is not None:
        for name in ("sample_ids", "tags", "rerun_ids"):  # a selection: the same ids in any order
            value = getattr(started, name)
            facts[f"run.json field `started_with.{name}`"] = sorted(value) if value is not None else None
        facts["run.json field `started_with.max_samples`"] = started.max_samples
        facts["run.json field `started_with.no_judge`"] = started.no_judge
    elif cov is not None:  # an older run.json: the filters as the part's summary counted them
        facts["summary.json field `coverage.tags`"] = sorted(cov.tags)
        facts["summary.json field `coverage.id_filter`"] = cov.id_filter
        facts["summary.json field `coverage.max_samples`"] = cov.max_samples
    if started is not None and started.unsharded_samples is not None:
        facts["run.json field `started_with.unsharded_samples`"] = started.unsharded_samples
    elif cov is not None and cov.limited is not None:
        facts["summary.json field `coverage.limited`"] = cov.limited
    return facts


def plan_differences(parts: list[Part], facts: list[PlanFacts], fix: str = _FIX) -> list[str]:
    """Each part's facts that differ from the first part's, one problem per fact, naming the part and the field;
    `fix` says what to merge instead."""
    first, first_facts = parts[0], facts[0]
    problems = []
    for part, own in zip(parts[1:], facts[1:], strict=True):
        for field in dict.fromkeys([*first_facts, *own]):
            if field not in own:
                problems.append(f"{part.label}: {field} is not recorded (written by an older evals) where "
                                f"{first.short} has {_shown(first_facts[field])}; {fix}")
            elif field not in first_facts:
                problems.append(f"{part.label}: {field} is {_shown(own[field])} where {first.short} does not record "
                                f"it (written by an older evals); {fix}")
            elif own[field] != first_facts[field]:
                problems.append(f"{part.label}: {field} is {_shown(own[field])} where {first.short} has "
                                f"{_shown(first_facts[field])}; {fix}")
    return problems


def split_differences(parts: list[Part], manifests: list[Manifest]) -> list[str]:
    """Every part of one split, alike: their own planned samples must add up to the whole run's (each sample is
    in exactly one part). Parts that plan more or fewer between them were not cut from one plan."""
    started = [m.started_with for m in manifests]
    own = [s.planned_samples if s is not None else None for s in started]
    whole = started[0].unsharded_samples if started[0] is not None else None
    if whole is None or any(n is None for n in own):
        return []
    total = sum(n for n in own if n is not None)
    if total == whole:
        return []
    shown = ", ".join(f"{p.short}: {n}" for p, n in zip(parts, own, strict=True))
    return [f"evals merge: the parts plan {total} samples between them (run.json field `started_with.planned_samples`"
            f": {shown}) where the run planned {whole} before the split (`started_with.unsharded_samples`); {_FIX}"]


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(repr(v) for v in value[:10]) + (f", ... ({len(value)} in all)" if len(value) > 10
                                                             else "") + "]"
    return str(value)

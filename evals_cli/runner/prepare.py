"""Everything that can fail before the first model call is checked here: suite, endpoints, graders,
every dataset row, every rubric against every sample. Streaming, so a huge dataset costs no memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from evals_cli.datasets.reader import check_dataset, iter_samples, select_samples
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import NO_KEY, Endpoint
from evals_cli.errors import ConfigError
from evals_cli.gate import Gate
from evals_cli.graders.base import Grader
from evals_cli.graders.build import build_graders
from evals_cli.models.results import Coverage
from evals_cli.models.sample import Sample
from evals_cli.models.specs import SuiteSpec
from evals_cli.runner.options import RunOptions
from evals_cli.runner.shard import in_shard, parse_shard
from evals_cli.targets.base import Target
from evals_cli.targets.factory import build_target, judge_fallback, resolve_target_endpoint


def read_system_prompt(suite: SuiteSpec) -> str | None:
    target = suite.target
    if target.system_prompt_file is None:
        return target.system_prompt
    path = suite.resolve(target.system_prompt_file)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"target.system_prompt_file: {target.system_prompt_file} not found "
                          "(the path is relative to the suite file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"target.system_prompt_file: cannot read {path}: {type(exc).__name__}") from None


def _with_overrides(suite: SuiteSpec, options: RunOptions) -> SuiteSpec:
    """CLI overrides of target settings, validated like the YAML (a bad value is a ConfigError)."""
    update = {k: v for k, v in (("timeout", options.timeout), ("sample_timeout", options.sample_timeout),
                                ("max_retries", options.max_retries))
              if v is not None and k in type(suite.target).model_fields}  # only settings this kind has
    if not update:
        return suite
    target = suite.target.model_validate({**suite.target.model_dump(), **update})
    copy = suite.model_copy(update={"target": target})
    copy._base_dir = suite.base_dir
    return copy


class PreparedRun:
    """A suite with its target, graders, gate and dataset checked: nothing left to fail but the endpoints."""

    def __init__(self, suite: SuiteSpec, options: RunOptions) -> None:
        crossed = suite.cross_check()
        if crossed:
            raise ConfigError([f"{'.'.join(map(str, path))}: {message}" for path, message in crossed])
        self.suite = _with_overrides(suite, options)
        self.options = options
        self.dataset: Path = suite.resolve(suite.dataset)
        # one limit per server for every model call (agent and judges alike): the run's concurrency
        self.pool = ClientPool(record=options.record, replay=options.replay,
                               concurrency=options.concurrency or suite.concurrency)
        overrides = {"base_url": options.base_url, "model": options.model}
        self.agent: Endpoint = resolve_target_endpoint(self.suite.target, overrides)
        self.target: Target = build_target(self.suite, self.agent, self.pool, read_system_prompt(suite))
        self.graders: dict[str, Grader] = build_graders(self.suite, self.pool, judge_fallback(self.suite.target, self.agent),
                                                        no_judge=options.no_judge)
        self.gate = Gate(suite.gate, self.graders)
        self.pool.redactor.add(self.secrets())  # recordings mask what the outputs mask
        self.tags = options.tags if options.tags is not None else suite.sample_tags
        self.max_samples = options.max_samples or suite.max_samples
        self.concurrency = options.concurrency or suite.concurrency
        self.repeats = options.repeats or suite.repeats
        self.shard = parse_shard(options.shard) if options.shard else None
        self.expected: int | None = None
        self.coverage: Coverage | None = None  # rows, tag filter, -n, shard: counted by the precheck
        if options.precheck:
            self._precheck()

    def secrets(self) -> list[str]:
        """Everything secret the run knows, for the Redactor of every output: the resolved keys and URL
        credentials of the agent and of every judge (from the suite, the CLI or the environment), and what the
        suite states (api_key, base_url credentials, secret-looking extra_body values)."""
        from evals_cli.endpoints.secrets import spec_secrets

        endpoints: list[Endpoint] = [self.agent]
        for grader in self.graders.values():
            endpoints += [e for e in getattr(grader, "endpoints", None) or [getattr(grader, "endpoint", None)]
                          if isinstance(e, Endpoint)]
        found = {s for e in endpoints for s in e.secrets()}
        found.update(spec_secrets(self.suite.model_dump(mode="json")))
        return sorted(s for s in found if s and s != NO_KEY)

    def _precheck(self) -> None:
        from evals_cli.validate import RowChecks  # the per-row checks of `evals validate`, the same ones

        checker = RowChecks(self.suite, self.graders, "suite")
        wanted = set(self.tags or [])
        selected = tagged = limited = 0

        def on_sample(sample: Sample, where: str) -> list[str]:
            # counted in the order `work` drops rows (tag filter, then -n, then shard), so "N of M" is exact
            nonlocal selected, tagged, limited
            if not wanted or wanted.intersection(sample.tags):
                tagged += 1
                if self.max_samples is None or tagged <= self.max_samples:
                    limited += 1
                    if self.shard is None or in_shard(str(sample.id), self.shard):
                        selected += 1
                return checker(sample, where)
            return []

        rows, problems = check_dataset(self.dataset, on_sample=on_sample)
        problems.extend(checker.problems())
        if problems:
            raise ConfigError(problems)
        if selected == 0 and self.shard is None:
            raise ConfigError(f"{self.dataset}: no sample carries any of the tags {', '.join(sorted(wanted))}")
        self.expected = selected * self.repeats
        self.coverage = Coverage(dataset_rows=rows, tagged=tagged, limited=limited, selected=selected,
                                 expected_results=self.expected, tags=sorted(wanted), max_samples=self.max_samples,
                                 shard=self.options.shard)

    def work(self) -> Iterator[tuple[Sample, int]]:
        """(sample, repeat) pairs in dataset order; repeats of a sample run back to back."""
        for sample in select_samples(iter_samples(self.dataset), self.tags, self.max_samples):
            if self.shard is not None and not in_shard(str(sample.id), self.shard):
                continue
            for repeat in range(self.repeats):
                yield sample, repeat

"""What `evals merge` checks of each part's rows as it joins them: they are the rows the part planned, each
once, and they say what the part's own summary says.

A part's results.jsonl is all the merge reads of its verdicts, and only this check ties that file to the run that
wrote it. A finished part whose file lost a row (a line deleted, a copy cut short), holds a row twice, or holds
a row its plan does not (another part's, a repeat the run never made) would give a verdict over other samples
than the run's: it is refused with no verdict (exit 3, `PartMismatch`), naming the part and the rows. A part
whose rows are its plan's but whose verdicts or scores differ from its summary.json (a `passed` flipped) was
changed after it ran: refused as bad input (exit 2).

The plan is the part's run.json: the ids a shard planned (`started_with.planned_ids`) and the repeats. A run.json
of an older evals lists no ids; the planned count (its `planned_results`, else summary.json's
`coverage.expected_results`) and the shard's hash stand in: lost rows are then counted, and named only where a
sample kept some of its repeats. A part that did not finish is expected to lack rows (merge.py says so, with no
verdict); its duplicated and foreign rows are still refused."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from evals_cli.errors import EvalsError
from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.output.merge_plan import Part
from evals_cli.output.summary import Accumulator
from evals_cli.sharding import in_shard

Key = tuple[str, int]  # (sample id, repeat): one row of a results file
_SHOWN = 5  # rows named in a message; the rest are counted


class PartMismatch(EvalsError):
    """Parts whose rows are not their plan's: no verdict (exit 3), one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass
class PartRows:
    """One part's rows as the merge reads them: those its plan holds (joined, and counted again on their own
    for the comparison with its summary), those it holds twice, and those its plan does not hold."""

    part: Part
    repeats: int
    planned_ids: list[str] | None
    planned_results: int | None
    finished: bool
    recount: Accumulator
    summary: RunSummary | None  # the part's own summary.json
    seen: set[Key] = field(default_factory=set)
    repeated: Counter[Key] = field(default_factory=Counter)
    foreign: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._planned = set(self.planned_ids) if self.planned_ids is not None else None

    def add(self, result: SampleResult) -> bool:
        """Whether the row is one of the plan's, seen for the first time: only such a row is joined."""
        key = (result.sample_id, result.repeat)
        if key in self.seen:
            self.repeated[key] += 1
            return False
        why = self._not_planned(key)
        if why is not None:
            self.foreign.append(f"{_row(key, self.repeats)} ({why})")
            return False
        self.seen.add(key)
        self.recount.add(result)
        return True

    def _not_planned(self, key: Key) -> str | None:
        sample, repeat = key
        if not 0 <= repeat < self.repeats:
            return f"the part ran {self.repeats} repeat{'s' if self.repeats > 1 else ''}, 0 to {self.repeats - 1}"
        if self._planned is not None and sample not in self._planned:
            return "not one of the samples its run.json planned"
        shard = self.part.shard
        if shard is not None and not in_shard(sample, shard):
            owner = next(k for k in range(1, shard[1] + 1) if in_shard(sample, (k, shard[1])))
            return f"a sample of shard {owner} of {shard[1]}"
        return None

    def problems(self) -> list[str]:
        """Why the part's rows are not its plan's (the exit 3 problems), each naming the part and a few rows."""
        out = []
        if len(self.repeated) == 1:
            (sample, repeat), extra = next(iter(self.repeated.items()))
            out.append(f"{self.part.label}: the row `{sample}` repeat {repeat} appears {_times(extra + 1)} in its "
                       "results.jsonl")
        elif self.repeated:
            rows = [f"`{s}` repeat {r} ({_times(n + 1)})" for (s, r), n in self.repeated.items()]
            out.append(f"{self.part.label}: {len(rows)} rows appear more than once in its results.jsonl: {_few(rows)}")
        if self.foreign:
            out.append(f"{self.part.label}: its results.jsonl holds {_count(len(self.foreign), 'row')} its plan "
                       f"does not: {_few(self.foreign)}")
        if self.finished:
            out += self._lost()
        return out

    def _lost(self) -> list[str]:
        """The planned rows a finished part does not hold: named from its planned ids, else counted (and named
        where a sample kept some of its repeats)."""
        if self.planned_ids is not None:
            planned = len(self.planned_ids) * self.repeats
            missing = [(s, r) for s in self.planned_ids for r in range(self.repeats) if (s, r) not in self.seen]
            lost = len(missing)
        elif self.planned_results is not None:
            planned = self.planned_results
            if len(self.seen) > planned:
                return [f"{self.part.label}: its results.jsonl holds {len(self.seen)} results where its plan holds "
                        f"{planned}"]
            kept = Counter(s for s, _ in self.seen)
            missing = [(s, r) for s in kept if kept[s] < self.repeats for r in range(self.repeats)
                       if (s, r) not in self.seen]
            lost = planned - len(self.seen)
        else:
            return []
        if lost <= 0:
            return []
        shown = [_few([_row(key, self.repeats) for key in missing])] if missing else []
        if lost > len(missing):
            shown.append(f"{lost - len(missing)} not named: its run.json, of an older evals, lists no planned samples")
        verb = "is" if lost == 1 else "are"
        return [f"{self.part.label}: {lost} of the {planned} results its plan holds {verb} not in its results.jsonl: "
                + "; ".join(shown)]

    def disagreements(self) -> list[str]:
        """Where the part's rows, counted again, differ from its summary.json (a finished part only)."""
        summary = self.summary
        if not self.finished or summary is None:
            return []
        rebuilt = self.recount.summary()
        pairs: list[tuple[str, float | None, float | None]] = [
            (name, getattr(rebuilt, name), getattr(summary, name))
            for name in ("total", "passed", "failed", "errored", "unchecked", "grades_missing")]
        for grader in sorted(set(rebuilt.graders) | set(summary.graders)):
            mine, theirs = rebuilt.graders.get(grader), summary.graders.get(grader)
            pairs += [(f"graders.{grader}.{name}", getattr(mine, name, None), getattr(theirs, name, None))
                      for name in ("count", "errors", "avg_score")]
        mine_rel, their_rel = rebuilt.reliability, summary.reliability
        pairs += [(f"reliability.{name}", getattr(mine_rel, name, None), getattr(their_rel, name, None))
                  for name in ("pass_at_k", "pass_hat_k")]
        differ = [f"`{name}` is {_number(mine)} in its results.jsonl where its summary.json says {_number(theirs)}"
                  for name, mine, theirs in pairs if not _same(mine, theirs)]
        if not differ:
            return []
        return [f"{self.part.label}: its results.jsonl disagrees with its summary.json: {'; '.join(differ)}; one of "
                f"them was changed after the part ran: run that part again into a new folder ({self.rerun()}), "
                "then merge again"]

    def rerun(self) -> str:
        """The command that runs this part again."""
        shard = self.part.shard
        return f"evals run SUITE{f' --shard {shard[0]}/{shard[1]}' if shard else ''} -o NEW_DIR"


def _same(mine: float | None, theirs: float | None) -> bool:
    if mine is None or theirs is None:
        return mine is theirs
    return math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12)


def _number(value: float | None) -> str:
    if value is None:
        return "none"
    return str(value) if isinstance(value, int) else f"{value:.6g}"


def _row(key: Key, repeats: int) -> str:
    sample, repeat = key
    return f"`{sample}`" + (f" repeat {repeat}" if repeats > 1 or repeat else "")


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _few(items: list[str]) -> str:
    return ", ".join(items[:_SHOWN]) + (f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else "")

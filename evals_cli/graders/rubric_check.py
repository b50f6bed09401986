"""Render every judge rubric for every sample before any model is called, so that a missing variable or
a template error shows at once, listed with the samples it affects."""

from __future__ import annotations

from evals_cli.graders.base import Grader
from evals_cli.graders.rubric import (
    RubricError,
    RubricLimitError,
    RubricPathError,
    compile_rubric,
    is_letta_style,
    render_rubric,
)
from evals_cli.graders.rubric_vars import rubric_variables
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory

_EMPTY = Trajectory()


class SampleChecker:
    """Every grader's per-sample checks and the rubric rendering, as one `check_dataset(on_sample=...)` hook."""

    def __init__(self, graders: dict[str, Grader]) -> None:
        self.graders = graders
        self.rubrics = RubricChecker(graders)

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        problems = [f"{where}: {p}" if where else p for g in self.graders.values() for p in g.check_sample(sample)]
        return problems + self.rubrics(sample)

    def problems(self) -> list[str]:
        return self.rubrics.problems()


class RubricChecker:
    """Feed it samples (it fits `check_dataset(on_sample=...)`), then read `problems()`."""

    def __init__(self, graders: dict[str, Grader]) -> None:
        self.judges: dict[str, Grader] = {}
        self._syntax: list[str] = []
        self._missing: dict[tuple[str, str], list[str]] = {}
        self._bounded: set[str] = set()  # graders whose own rubric went past a render bound: reported once
        for name, grader in graders.items():
            text = getattr(grader, "rubric_text", None)
            if text is None:
                continue
            try:
                if not is_letta_style(text):
                    compile_rubric(text)
            except RubricError as exc:
                self._syntax.append(f"graders.{name}: rubric {self._name(grader)}: {exc}")
                continue
            self.judges[name] = grader

    @staticmethod
    def _name(grader: Grader) -> str:
        return getattr(grader.spec, "rubric", None) or "(inline prompt)"

    def __call__(self, sample: Sample) -> list[str]:
        turns = range(len(sample.user_turns)) if sample.per_turn else [None]
        for name, grader in self.judges.items():
            if name in self._bounded and not sample.rubric:
                continue
            for turn in turns:
                variables = rubric_variables(sample, _EMPTY, "", sample.ground_truth_for(turn), turn)
                try:
                    render_rubric(grader.rubric_for(sample), variables)  # type: ignore[attr-defined]
                except RubricPathError:
                    break  # the grader's check_sample names the row (file:line)
                except RubricLimitError as exc:
                    # a bound is a property of the rubric: past it once, it would be past it for every sample
                    # (each costing up to the render timeout)
                    self._missing.setdefault((name, str(exc)), []).append(str(sample.id))
                    if not sample.rubric:
                        self._bounded.add(name)
                    break
                except (RubricError, ValueError) as exc:
                    self._missing.setdefault((name, str(exc)), []).append(str(sample.id))
                    break
        return []

    def problems(self) -> list[str]:
        out = list(self._syntax)
        for (name, problem), ids in self._missing.items():
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            out.append(f"graders.{name}: rubric {self._name(self.judges[name])}: {problem} (samples: {shown})")
        return out

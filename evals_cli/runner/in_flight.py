"""A sample being run, as the progress view shows it: the record a run of one model keeps for each of its samples
in flight (execution.py), and the matrix shows for every model's at once, each named with its model
(models_matrix.py), one type for both."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class InFlight:
    """One (sample, repeat) being run."""

    sample_id: str
    repeat: int
    started: float
    where: str = "starting"  # "turn 1, step 2" while the agent runs, "grading" after

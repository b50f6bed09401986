"""The simulation study of the corrected pass rate's interval (bench/calibration_coverage.py): synthetic judges of
known tpr and tnr, labels and runs drawn from an agent of known pass probability, and the interval `evals calibrate`
gives checked against that truth. The default run checks a few cells where the old bootstrap failed (unanimous
runs, a weak judge, a small run); the full grid is behind the `slow` marker (`make test-slow`) and its table is in
docs/measuring-the-judge.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOOR = 0.93


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("calibration_coverage", ROOT / "bench" / "calibration_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("calibration_coverage", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("cell", [
    (0.99, 0.8, 0.95, 200, 10),  # most runs unanimous: the bootstrap's [1.00, 1.00]
    (0.55, 0.8, 0.5, 20, 500),  # a weak judge on few labels: the doubt is in tpr, not in the run
    (0.99, 0.8, 0.05, 200, 10),  # a small run: a Jeffreys posterior for its pass share covered 91.5% here
])
def test_the_interval_covers_the_true_pass_rate_in_the_hard_cells(cell: tuple[float, float, float, int, int]) -> None:
    bench = _bench()
    found = bench.study(bench.Cell(*cell), reps=200, seed=1, draws=500)
    assert found.draws >= 150  # the cell is measured, not refused away
    assert found.rate >= FLOOR, f"{cell}: covered {found.covered} of {found.draws}"
    if cell[2] == 0.95:
        assert found.unanimous > found.draws / 2  # the cell is the one it says: mostly unanimous runs


_CELLS = list(enumerate(_bench().grid()))


@pytest.mark.slow  # the 108 cells at 1,000 draws each: 5-10 s a cell, 10-20 minutes in all on a shared 2-core machine
@pytest.mark.parametrize("index,cell", _CELLS, ids=[f"{i}-tpr{c.tpr}-tnr{c.tnr}-p{c.prevalence}-l{c.labels}-j{c.judged}"
                                                    for i, c in _CELLS])
def test_the_full_grid_holds_its_coverage_in_every_cell(index: int, cell) -> None:  # type: ignore[no-untyped-def]
    """One test per cell (each well inside the per-test timeout), with the seeds `bench/calibration_coverage.py`
    uses, so a failure names its cell and the figures are those of docs/measuring-the-judge.md."""
    bench = _bench()
    found = bench.study(cell, reps=1000, seed=index)
    if found.draws:
        assert found.rate >= FLOOR, f"{cell}: covered {found.covered} of {found.draws}"

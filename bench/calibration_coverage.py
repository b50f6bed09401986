"""The simulation study of the corrected pass rate's 95% interval (evals_cli.calibration.stats.corrected_interval):
does it cover the true pass rate as often as it claims?

Each draw of a cell makes a synthetic judge of known tpr and tnr and an agent of known pass probability (the
prevalence), then:

- labels: `labels` items, each truly passing with the prevalence (labelled from earlier runs of the same agent),
  each given the judge's verdict (right with probability tpr on a true pass, tnr on a true fail);
- the run: `judged` items drawn the same way, of which the judge passed some share (unanimous runs, all passed or
  all failed, happen often at the edges of the grid and are counted in the table);
- the interval, by the same code `evals calibrate` runs (`measure`), which refuses (no interval claimed) when the
  labels hold no item of a class or the measured judge is no better than chance.

The truth the interval claims to cover is the prevalence: the agent's pass probability on items like the run's,
what its pass rate estimates. The table also gives how often it covers the run's own true share of passes among
its judged items (a different, finite-sample quantity, for information).

    python bench/calibration_coverage.py                 # the full grid (108 cells; ~15 min on one core)
    python bench/calibration_coverage.py --reps 200      # quicker, noisier
    python bench/calibration_coverage.py --markdown      # the table of docs/measuring-the-judge.md
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals_cli.calibration.calibrate import measure  # noqa: E402

RATES = (0.55, 0.8, 0.99)  # tpr and tnr
PREVALENCES = (0.05, 0.5, 0.95)
LABELS = (20, 200)
JUDGED = (10, 500)
DRAWS = 1000  # posterior draws per interval: fewer than `evals calibrate` makes (20,000), for time; the same
# posterior, with more Monte Carlo noise in its bounds


@dataclass(frozen=True)
class Cell:
    tpr: float
    tnr: float
    prevalence: float
    labels: int
    judged: int


@dataclass
class Coverage:
    cell: Cell
    draws: int = 0  # intervals given
    refused: int = 0  # draws where the labels could not measure the judge (no interval claimed)
    covered: int = 0  # of `draws`, intervals holding the prevalence
    covered_share: int = 0  # of `draws`, intervals holding the run's own true share
    unanimous: int = 0  # of `draws`, runs whose judge passed all or none of the items
    width: float = 0.0  # summed widths

    @property
    def rate(self) -> float:
        return self.covered / self.draws if self.draws else float("nan")


def _judge(rng: random.Random, truth: bool, cell: Cell) -> bool:
    return rng.random() < cell.tpr if truth else rng.random() >= cell.tnr


def study(cell: Cell, reps: int, seed: int, draws: int = DRAWS) -> Coverage:
    """`reps` synthetic labellings and runs of one cell, each interval computed as `evals calibrate` does."""
    rng = random.Random(seed)
    out = Coverage(cell)
    for rep in range(reps):
        truths = [rng.random() < cell.prevalence for _ in range(cell.labels)]
        pairs = [(_judge(rng, t, cell), t) for t in truths]
        run = [rng.random() < cell.prevalence for _ in range(cell.judged)]
        passed = sum(1 for t in run if _judge(rng, t, cell))
        found = measure(pairs, passed, cell.judged, draws=draws, seed=rep)
        if found.ci is None:
            out.refused += 1
            continue
        low, high = found.ci
        out.draws += 1
        out.covered += low <= cell.prevalence <= high
        out.covered_share += low <= sum(run) / cell.judged <= high
        out.unanimous += passed in (0, cell.judged)
        out.width += high - low
    return out


def grid() -> list[Cell]:
    return [Cell(*values) for values in itertools.product(RATES, RATES, PREVALENCES, LABELS, JUDGED)]


def markdown(rows: list[Coverage], reps: int) -> str:
    head = ("| tpr | tnr | prevalence | labels | judged | intervals | refused | unanimous runs | covers the prevalence "
            "| covers the run's share | mean width |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(f"| {r.cell.tpr} | {r.cell.tnr} | {r.cell.prevalence} | {r.cell.labels} | {r.cell.judged} | "
                   f"{r.draws} | {r.refused} | {r.unanimous} | {r.rate:.1%} | "
                   f"{(r.covered_share / r.draws if r.draws else float('nan')):.1%} | "
                   f"{(r.width / r.draws if r.draws else float('nan')):.2f} |\n" for r in rows)
    return head + body + f"\n{reps} draws per cell; {DRAWS} posterior draws per interval.\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1000, help="draws per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--floor", type=float, default=0.93, help="exit 1 if a cell covers less often")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = []
    for i, cell in enumerate(grid()):
        rows.append(study(cell, args.reps, args.seed * 1000 + i))
        r = rows[-1]
        print(f"{cell}: {r.rate:.3f} of {r.draws} ({r.refused} refused, {r.unanimous} unanimous)", flush=True,
              file=sys.stderr if args.markdown else sys.stdout)
    if args.markdown:
        print(markdown(rows, args.reps))
    worst = min((r for r in rows if r.draws), key=lambda r: r.rate)
    print(f"lowest coverage {worst.rate:.3f} at {worst.cell}; {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0 if worst.rate >= args.floor else 1


if __name__ == "__main__":
    sys.exit(main())

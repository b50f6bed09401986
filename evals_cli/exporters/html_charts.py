"""Geometry for the HTML report's inline SVG charts, computed here so the template only draws (and escapes).

Charts are plain SVG in the page — no charting library, no CDN — so the report opens offline, in a CI
artifact viewer, or years later exactly as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evals_cli.models.results import GraderAggregate

BAR_WIDTH = 360  # pixels of the 0..1 scale in the bar chart
LABEL_WIDTH = 170
ROW_HEIGHT = 40


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    value: float | None
    label: str
    css: str


@dataclass
class BarRow:
    name: str
    y: float
    bars: list[Bar]


@dataclass
class BarChart:
    width: int
    height: int
    rows: list[BarRow]
    threshold_x: float | None
    threshold_label: str
    label_x: float = LABEL_WIDTH - 8  # grader names end here, right-aligned
    ticks: list[tuple[float, str]] = field(default_factory=list)


def score_bars(graders: dict[str, GraderAggregate], threshold: float | None = None) -> BarChart:
    """Two bars per grader: average score and accuracy (share of samples passing), both on 0..1."""
    rows = []
    for index, (name, agg) in enumerate(graders.items()):
        top = 10 + index * ROW_HEIGHT
        bars = []
        for offset, (value, label, css) in enumerate(((agg.avg_score, "avg score", "avg"),
                                                      (agg.accuracy, "accuracy", "acc"))):
            clamped = min(max(value or 0.0, 0.0), 1.0)
            bars.append(Bar(x=LABEL_WIDTH, y=top + offset * 15, width=round(clamped * BAR_WIDTH, 1), height=13,
                            value=value, label=label, css=css))
        rows.append(BarRow(name=name, y=top + 17, bars=bars))
    height = 10 + len(rows) * ROW_HEIGHT + 22
    ticks = [(LABEL_WIDTH + t * BAR_WIDTH, f"{t:g}") for t in (0, 0.25, 0.5, 0.75, 1.0)]
    threshold_x = None if threshold is None or not 0 <= threshold <= 1 else LABEL_WIDTH + threshold * BAR_WIDTH
    return BarChart(width=LABEL_WIDTH + BAR_WIDTH + 60, height=height, rows=rows,
                    threshold_x=threshold_x, threshold_label="" if threshold is None else f"gate {threshold:g}",
                    ticks=ticks)


@dataclass
class Bin:
    x: float
    y: float
    width: float
    height: float
    count: int
    label: str


@dataclass
class Histogram:
    title: str
    width: int
    height: int
    base_y: float
    bins: list[Bin]
    total: int
    missing: int


def bin_counts(scores: list[float], bins: int = 10) -> list[int]:
    """Counts per equal-width bin over 0..1; 1.0 goes into the last bin, out-of-range values are clamped."""
    counts = [0] * bins
    for score in scores:
        index = int(min(max(score, 0.0), 1.0) * bins)
        counts[min(index, bins - 1)] += 1
    return counts


def histogram(title: str, scores: list[float | None], bins: int = 10) -> Histogram:
    """A score histogram; scores of None (errors) are counted apart, never binned as 0."""
    present = [s for s in scores if s is not None]
    counts = bin_counts(present, bins)
    width, plot_h, base_y, bar_w = 260, 90, 104.0, 240 / bins
    peak = max(counts) or 1
    shapes = []
    for index, count in enumerate(counts):
        h = round(count / peak * plot_h, 1)
        low, high = index / bins, (index + 1) / bins
        shapes.append(Bin(x=10 + index * bar_w + 1, y=base_y - h, width=bar_w - 2, height=h, count=count,
                          label=f"{low:.1f}–{high:.1f}{']' if index == bins - 1 else ')'}"))
    return Histogram(title=title, width=width, height=130, base_y=base_y, bins=shapes, total=len(present),
                     missing=len(scores) - len(present))

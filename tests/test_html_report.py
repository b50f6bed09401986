"""The HTML report: self-contained, escaped, complete (summary, charts, table, conversations), working JS."""

from __future__ import annotations

import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from evals_cli.exporters import render_html, write_html
from evals_cli.exporters.common import tool_runs
from evals_cli.exporters.html_charts import bin_counts, histogram, score_bars
from evals_cli.models.results import FailedBy, Grade, GraderAggregate, Reliability, SampleResult
from evals_cli.output.files import read_results, read_summary
from tests.run_factory import XSS, make_result, make_summary, scripted_run, tool_call
from tests.scripted_server import ScriptedServer

CHROMIUM = Path("/usr/bin/chromium")
IMG = "<img src=x onerror=alert(2)>"
RESOURCE_ATTRS = ("src", "href", "xlink:href", "action", "poster", "data", "srcset", "formaction")


class Page(HTMLParser):
    """Every start tag with its attributes, every text node, and the text under each element id."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.data: list[str] = []
        self.doctype = ""
        self.feed(markup)
        self.close()

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.data.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        """Tags by name and attribute values (`class_` matches one of the classes)."""
        wanted = {k.rstrip("_"): v for k, v in attrs.items()}
        out = []
        for name, found in self.tags:
            if name != tag:
                continue
            if all((v in found.get(k, "").split()) if k == "class" else found.get(k) == v for k, v in wanted.items()):
                out.append(found)
        return out

    @property
    def text(self) -> str:
        return "\n".join(self.data)


def sample_run() -> list[SampleResult]:
    """Six samples: pass, fail with tool calls, per-turn, errored, ungraded, hostile content everywhere."""
    return [
        make_result("alpha", {"answer": 1.0, "order": 1.0}, calls=[tool_call("read_file", {"path": ".env"}, "DB=1")],
                    tags=["tools"], latency=0.2),
        make_result("beta", {"answer": 0.0, "order": 1.0}, answer="wrong", latency=0.4,
                    calls=[tool_call("read_file", {"path": "x"}, "file not found", is_error=True),
                           tool_call("nope", {}, "unknown tool 'nope'", unknown_tool=True)]),
        make_result("conv", {}, per_turn={"answer": [1.0, 0.0, 1.0]}, passed=False, latency=0.3),
        make_result("down", {}, error=("timeout", "agent endpoint timed out after 30s"), latency=0.5),
        make_result("ungraded", {"answer": None}, latency=0.1),
        make_result(f"evil{XSS}", {"answer": 0.5, "order": 0.75}, answer=f"Sure: {XSS}", user=f"ask {IMG}",
                    tags=[IMG], rationale=f"judge says {XSS}", latency=0.6,
                    calls=[tool_call("read_file", {"path": XSS}, f"content {IMG}")]),
    ]


@pytest.fixture
def page() -> Page:
    results = sample_run()
    return Page(render_html(results, make_summary(results, suite=f"suite {IMG}"), notes=[f"torn line {XSS}"]))


def test_self_contained_no_network_resources(page: Page) -> None:
    assert page.doctype.lower() == "doctype html"
    assert not page.find("link") and not page.find("iframe") and not page.find("img")
    for tag, attrs in page.tags:
        for name in RESOURCE_ATTRS:
            value = attrs.get(name, "").strip().lower()
            assert not value.startswith(("http:", "https:", "//")), (tag, name, value)
        if tag == "a":
            assert attrs["href"].startswith("#"), attrs
    [script] = page.find("script")
    assert "src" not in script
    assert len(page.find("style")) == 1
    markup = render_html(sample_run(), make_summary(sample_run()))
    assert "@import" not in markup and "url(" not in markup


def test_everything_from_the_run_is_escaped(page: Page) -> None:
    markup = render_html(sample_run(), make_summary(sample_run(), suite=f"suite {IMG}"), notes=[f"torn {XSS}"])
    assert XSS not in markup and IMG not in markup
    assert len(page.find("script")) == 1 and not page.find("img")
    text = page.text
    assert f"Sure: {XSS}" in text  # shown as text, exactly as the model wrote it
    assert f"judge says {XSS}" in text and f"ask {IMG}" in text and f"content {IMG}" in text
    assert f"suite {IMG}" in text and f"torn line {XSS}" in text
    assert page.find("tr", **{"data-sample": f"evil{XSS}"})


def test_summary_gate_and_grader_charts(page: Page) -> None:
    text = page.text
    assert "Gate FAILED" in text and page.find("section", id="gate", class_="fail")
    assert page.find("section", id="summary")
    assert len(page.find("svg", class_="bars")) == 1
    rects = [a for t, a in page.tags if t == "rect" and a.get("class") in ("avg", "acc")]
    assert len(rects) == 4  # two graders × (avg, accuracy)
    hists = page.find("svg", class_="histogram")
    assert len(hists) == 3  # answer, order, weighted score
    assert "(4 scored, 1 without a score)" in text  # the ungraded sample is counted apart, not binned as 0


def test_optional_summary_figures_appear_only_when_recorded() -> None:
    results = sample_run()
    plain = Page(render_html(results, make_summary(results))).text
    assert "latency p50" not in plain and "cost" not in plain and "pass@" not in plain
    summary = make_summary(results).model_copy(update={
        "latency_p50_s": 0.25, "latency_p95_s": 1.5, "cost": 0.0123,
        "reliability": Reliability(repeats=3, samples=2, pass_at_k=1.0, pass_hat_k=0.5)})
    text = Page(render_html(results, summary)).text
    assert "0.25 s" in text and "(p95 1.50 s)" in text and "0.0123" in text
    assert "1.00 / 0.50" in text and "pass@3 / pass^3 over 2 samples" in text


def test_sortable_table_one_row_per_sample(page: Page) -> None:
    assert len(page.find("table", id="samples", class_="sortable")) == 1
    keys = [a["data-key"] for t, a in page.tags if t == "th" and "data-key" in a]
    assert keys == ["index", "sample", "tags", "tools", "g1", "g2", "score", "result", "steps", "tokens", "latency"]
    rows = [a for t, a in page.tags if t == "tr" and "data-sample" in a]
    assert [r["data-sample"] for r in rows] == ["alpha", "beta", "conv", "down", "ungraded", f"evil{XSS}"]
    assert [r["data-status"] for r in rows] == ["passed", "failed", "failed", "errored", "ungraded", "failed"]


def test_conversations_with_tool_calls_errors_and_per_turn_grades(page: Page) -> None:
    samples = page.find("details", class_="sample")
    assert [s["id"] for s in samples] == [f"s-{i}" for i in range(1, 7)]
    opened = [s["id"] for s in samples if "open" in s]
    assert opened == ["s-2", "s-3", "s-4", "s-6"]  # failed and errored start expanded
    assert len(page.find("details", class_="tool")) == 4
    text = page.text
    assert '"path": ".env"' in text and "DB=1" in text and "unknown tool" in text
    assert "timeout" in text and "agent endpoint timed out after 30s" in text
    assert len(page.find("div", class_="turn")) == 3 + 5  # conv's three turns, one for each other sample
    assert len(page.find("details", class_="turn-grades")) == 3
    assert "turn 2 rationale" in text and "truth 2" in text
    assert len(page.find("span", class_="chip")) == 3
    assert page.find("details", class_="why") and "answer because" in text


def test_write_html_of_a_real_cli_run(server: ScriptedServer, tmp_path: Path) -> None:
    run = scripted_run(server, tmp_path)
    summary = read_summary(run)
    assert summary is not None
    path = write_html(read_results(run), summary, tmp_path / "out" / "report.html")
    markup = path.read_text(encoding="utf-8")
    assert XSS not in markup
    page = Page(markup)
    assert len([a for t, a in page.tags if t == "tr" and "data-sample" in a]) == 5
    assert "Gate FAILED" in page.text and "called forbidden tool(s): read_file" in page.text
    assert f"{XSS} & \"quotes\"" in page.text


def test_chart_geometry() -> None:
    assert bin_counts([0.0, 0.05, 0.1, 0.55, 0.95, 1.0, 1.2, -0.1]) == [3, 1, 0, 0, 0, 1, 0, 0, 0, 3]
    h = histogram("g", [1.0, 1.0, 0.0, None])
    assert h.total == 3 and h.missing == 1
    assert h.bins[-1].count == 2 and h.bins[-1].height == 90 and h.bins[0].height == 45
    chart = score_bars({"a": GraderAggregate(avg_score=0.5, accuracy=1.0), "b": GraderAggregate()}, threshold=0.75)
    assert [bar.width for bar in chart.rows[0].bars] == [180.0, 360.0]
    assert [bar.width for bar in chart.rows[1].bars] == [0.0, 0.0]
    assert chart.threshold_x == 170 + 270


def test_tools_column_keeps_repeated_calls() -> None:
    assert tool_runs(["read_file"] * 8) == ["read_file ×8"]
    assert tool_runs(["a", "b", "b", "a"]) == ["a", "b ×2", "a"]  # the order of the calls is kept
    loop = make_result("loop", {"answer": 0.0}, calls=[tool_call("read_file", {"path": "a"}, "x")] * 8)
    page = Page(render_html([loop], make_summary([loop])))
    [cell] = [a for t, a in page.tags if t == "td" and "tools" in a.get("class", "").split()]
    assert cell["data-calls"] == "8"
    assert "read_file ×8" in page.text and "8 tool calls" in page.text
    assert page.find("button", id="expand-tools") and page.find("button", class_="sample-tools")


def test_rows_and_conversations_share_an_anchor(page: Page) -> None:
    """What lets the filter hide a sample's conversation along with its row (the browser tests check it works)."""
    anchors = [a["data-anchor"] for t, a in page.tags if t == "tr" and "data-sample" in a]
    assert anchors == [d["id"] for d in page.find("details", class_="sample")]
    assert 'getElementById(row.getAttribute("data-anchor"))' in render_html(sample_run(), make_summary(sample_run()))


def threshold_run() -> list[SampleResult]:
    near = make_result("near", {"answer": 1.0, "order": 0.3}, passed=True)  # 0.65
    low = make_result("low", {"answer": 0.0, "order": 0.3}, passed=False)
    low.failed_by = [FailedBy(rule="weighted", score=0.15, threshold=0.6, reason="weighted score 0.15 not ≥ 0.6")]
    blocked = make_result("blocked", {"answer": 1.0, "avoided": 0.0}, passed=False)
    blocked.failed_by = [FailedBy(rule="required", grader="avoided", score=0.0, threshold=1.0,
                                  reason="avoided 0.00 < 1 (required)")]
    return [near, low, blocked]


def test_pass_threshold_stated_and_failing_graders_named() -> None:
    results = threshold_run()
    page = Page(render_html(results, make_summary(results)))
    assert len(page.find("p", id="pass-rule")) == 1
    assert "A sample passes when its weighted score is ≥ 0.6" in page.text  # the gate's own per-sample rule
    assert "failed: avoided" in page.text and "failed by avoided" in page.text
    assert "failed: weighted" in page.text
    [blamed] = page.find("tr", class_="fails-sample")
    assert blamed["data-grader"] == "avoided" and "fails the sample" in page.text


def test_a_passing_score_is_coloured_as_passing() -> None:
    results = threshold_run()
    markup = render_html(results, make_summary(results))
    # 0.65 passes the 0.6 rule: green (a fixed 0.5 split made it amber); 0.15 and 0.5 fail it: red
    assert '<td class="num good" data-sort="0.65" data-label="score">0.65</td>' in markup
    assert '<td class="num bad" data-sort="0.15" data-label="score">0.15</td>' in markup
    assert '<td class="num bad" data-sort="0.5" data-label="score">0.50</td>' in markup
    no_gate = make_summary(results).model_copy(update={"gate": None})
    for r in results:
        r.failed_by = []
    assert "not recorded with this run" in render_html(results, no_gate)  # and the fixed cut-offs are said


def judge_grade(**extra: object) -> Grade:
    return Grade(score=0.7, rationale="mostly right", metadata={
        "judge": "j-model", "raw_score": 7, "mode": "json_schema",
        "verdicts": [{"judge": "j-model", "score": 0.7, "raw": 7, "reason": "mostly right", "mode": "json_schema"}],
        **extra})


def test_judge_call_is_shown_collapsed() -> None:
    result = make_result("judged", {"answer": 1.0})
    result.grades["quality"] = judge_grade()
    page = Page(render_html([result], make_summary([result])))
    [call] = page.find("details", class_="judge-call")
    assert "open" not in call
    assert "judge call: j-model (1 verdict)" in " ".join(page.text.split())
    assert "answer: 7 → score 0.70" in page.text and "mode json_schema" in " ".join(page.text.split())
    assert "The rendered prompt is not stored in this results file." in page.text  # what the grader keeps today
    result.grades["quality"] = judge_grade(messages=[{"role": "system", "content": f"grade {XSS}"},
                                                     {"role": "user", "content": "Answer: localhost"}],
                                           reply='{"score": 7}')
    markup = render_html([result], make_summary([result]))
    page = Page(markup)
    assert XSS not in markup and f"grade {XSS}" in page.text and "Answer: localhost" in page.text
    assert '{"score": 7}' in page.text and len(page.find("pre", class_="judge-prompt")) == 2


# --- in a real browser (marked slow; skipped when Chromium is not installed) ----------------------------------

def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def needs_chromium(test: Any) -> Any:
    """A real Chromium, seconds to start: marked `slow` (left out of `make test`, run by `make test-slow`) and
    skipped where Chromium is not installed."""
    installed = CHROMIUM.exists() and shutil.which(str(CHROMIUM)) is not None
    return pytest.mark.slow(pytest.mark.skipif(not installed, reason="/usr/bin/chromium is not installed")(test))


def report_file(tmp_path: Path) -> Path:
    results = sample_run()
    return write_html(results, make_summary(results), tmp_path / "report.html")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@needs_chromium
def test_renders_in_headless_chromium(tmp_path: Path) -> None:
    html = report_file(tmp_path)
    shot = tmp_path / "shot.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", html.as_uri())
    assert shot.is_file(), done.stderr[-2000:]
    assert png_size(shot) == (1280, 2000)
    assert shot.stat().st_size > 20_000  # a blank page compresses to a few kB


def dump_dom(tmp_path: Path, url: str) -> Page:
    done = chromium(tmp_path, "--dump-dom", url)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return Page(done.stdout)


@needs_chromium
def test_script_runs_and_sorts_from_the_url(tmp_path: Path) -> None:
    html = report_file(tmp_path)
    page = dump_dom(tmp_path, html.as_uri() + "#sort=score:desc")
    [root] = page.find("html")
    assert root.get("data-report-ready") == "1" and "data-js-error" not in root
    [table] = page.find("table", id="samples")
    assert table.get("data-sorted-by") == "score:desc"
    rows = [a["data-sample"] for t, a in page.tags if t == "tr" and "data-sample" in a]
    # scores: alpha 1.0, beta 0.5, conv 0.67, evil 0.625; down and ungraded have none and sort last
    assert rows == ["alpha", "conv", f"evil{XSS}", "beta", "down", "ungraded"]
    [head] = [a for t, a in page.tags if t == "th" and a.get("data-key") == "score"]
    assert head.get("aria-sort") == "descending"
    assert not [a for t, a in page.tags if "needs-js" in a.get("class", "").split() and "hidden" in a]


@needs_chromium
def test_text_columns_sort_naturally_and_a_sample_link_opens_it(tmp_path: Path) -> None:
    html = report_file(tmp_path)
    page = dump_dom(tmp_path, html.as_uri() + "#sort=sample:asc")
    rows = [a["data-sample"] for t, a in page.tags if t == "tr" and "data-sample" in a]
    assert rows == sorted(rows, key=str.lower)
    opened = dump_dom(tmp_path, html.as_uri() + "#s-1")
    [first] = [a for a in opened.find("details", class_="sample") if a["id"] == "s-1"]
    assert "open" in first  # passed samples start closed; the link opens it


# --- the pages are template files ---------------------------------------------------------------------------

TEMPLATES = Path(__file__).resolve().parent.parent / "evals_cli" / "exporters" / "templates"


def test_the_pages_styles_and_script_are_template_files_shipped_as_package_data() -> None:
    """Edited as HTML, CSS and JS (not Python strings), shipped in the wheel, inlined whole into every report."""
    import fnmatch
    import tomllib

    names = {p.name for p in TEMPLATES.iterdir() if p.is_file()}
    assert {"run.html.j2", "sessions.html.j2", "report.css", "report.js"} <= names
    config = tomllib.loads((TEMPLATES.parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["evals_cli"]
    for name in names:  # every template is package data: an installed evals-cli can render its reports
        assert any(fnmatch.fnmatch(f"exporters/templates/{name}", glob) for glob in globs), name
    markup = render_html(sample_run(), make_summary(sample_run()))
    for asset in ("report.css", "report.js"):  # inlined as written: the report needs nothing beside it
        assert (TEMPLATES / asset).read_text(encoding="utf-8").strip() in markup
    python = "".join(p.read_text(encoding="utf-8") for p in TEMPLATES.parent.glob("*.py"))
    assert "<!DOCTYPE" not in python and "getElementById" not in python and "--fg:" not in python

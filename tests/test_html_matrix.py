"""Issue 29 item 2: the page of a run over several models says, per model, which samples did not pass and why
(the failing graders with their reasons, or the error), links each model's full report (written beside it), and
puts the models' answers to each sample side by side; the terminal's side-by-side view has why-lines too."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.scripted_server import ScriptedServer
from tests.test_many_models import MODELS, _models, _suite, script


class Blocks(HTMLParser):
    """The text under every element with an id or a data-model / data-sample attribute, by that key."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, str | None]] = []
        self.text: dict[str, list[str]] = {}
        self.hrefs: list[str] = []
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        key = a.get("id") or (f"model:{a['data-model']}" if a.get("data-model") else None)
        if a.get("href"):
            self.hrefs.append(a["href"] or "")
        if tag in ("br", "meta", "wbr", "input"):
            return
        self.open.append((tag, key))
        if key:
            self.text.setdefault(key, [])

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            name, _ = self.open.pop()
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, key in self.open:
            if key:
                self.text[key].append(data)

    def of(self, key: str) -> str:
        return " ".join(" ".join(self.text[key]).split())


def errored(run: Path) -> list[str]:
    lines = [json.loads(line) for line in (run / "down" / "results.jsonl").read_text().splitlines()]
    return [line["sample_id"] for line in lines if line["error"]]


@pytest.fixture(scope="module")
def models_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer(script).start()
    yield server
    server.stop()


# one sample at a time, down's first refusal stops it before the others start (one errored, two not run); at the
# default concurrency, how many were in flight is timing: both must read true
@pytest.fixture(scope="module", params=[1, 4], ids=["one-at-a-time", "concurrent"])
def run(models_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    tmp = tmp_path_factory.mktemp("models")
    out = tmp / "run"
    suite = _suite(tmp, models_server.url, concurrency=request.param)
    assert run_cli("run", str(suite), "-o", str(out), *_models(*MODELS)).returncode == 3
    return out


@pytest.fixture(scope="module")
def page(run: Path) -> tuple[Path, Blocks]:
    path = run.parent / "pages" / "matrix.html"
    report = run_cli("report", str(run), "--html", str(path))
    assert report.returncode == 0, report.stderr
    return path, Blocks(path.read_text(encoding="utf-8"))


def test_each_model_says_which_samples_failed_and_why(page: tuple[Path, Blocks]) -> None:
    _, blocks = page
    good, half, down = (blocks.of(f"m-{i}") for i in (1, 2, 3))
    assert "every sample passed" in good and "Gate PASSED" in good
    assert "Gate FAILED" in half
    assert "sum answer 0.00: '4' not found in the submission" in half
    assert "color answer 0.00: 'blue' not found in the submission" in half and "capital" not in half
    for sample in errored(page[0].parent.parent / "run"):  # the error of every sample of the model that failed
        assert re.search(rf"{sample} endpoint error: agent endpoint .*\(model down\): not found \(HTTP 404\)", down)


def test_each_models_full_report_is_written_beside_and_linked(page: tuple[Path, Blocks]) -> None:
    path, blocks = page
    for name in MODELS:
        full = path.with_name(f"matrix-{name}.html")
        assert full.is_file(), full
        assert f"matrix-{name}.html" in blocks.hrefs  # from the model's section and the table of numbers
        markup = full.read_text(encoding="utf-8")
        assert 'id="samples"' in markup and 'id="conversations"' in markup  # the report `evals report` writes
    half = Blocks(path.with_name("matrix-half.html").read_text(encoding="utf-8"))
    # a sample's "conversation" link opens that sample's own conversation in the model's report
    [link] = [h for h in page[1].hrefs if h.startswith("matrix-half.html#") and h in
              {f"matrix-half.html#{k}" for k in half.text if k.startswith("s-") and "sum" in half.of(k)}]
    assert "math: 2+2?" in half.of(link.split("#", 1)[1])


def test_every_sample_shows_the_models_answers_side_by_side(page: tuple[Path, Blocks]) -> None:
    _, blocks = page
    side = {key: blocks.of(key) for key in blocks.text if key.startswith("sample-")}
    [sums] = [text for text in side.values() if text.startswith("sum ")]
    assert "math: 2+2?" in sums  # what was asked, once
    # down stops at its first refusal: whether "sum" had started by then is timing, so it is an error or not run
    parts = re.split(r"(?= (?:good|half|down) (?:pass|fail|error|— not run))", sums)
    by_model = {p.split()[0]: p.strip() for p in parts[1:]}
    assert set(by_model) == set(MODELS), sums
    assert by_model["good"].startswith("good pass 4 ")
    assert by_model["half"].startswith("half fail no idea ") and "'4' not found" in by_model["half"]
    assert by_model["down"].startswith(("down error (no answer)", "down — not run")), by_model["down"]


def test_the_terminal_says_why_per_model_and_each_cause_once(run: Path) -> None:
    report = run_cli("report", str(run))
    out = " ".join(report.stdout.split())
    half = out[out.index("why 2 samples of half did not pass:"):out.index("full report: evals report")]
    # the order of the why-lines is the order the samples finished in: timing, at any concurrency above one
    assert "sum answer 0.00: '4' not found" in half and "color answer 0.00: 'blue' not found" in half, out
    ids = errored(run)  # the samples in flight when the endpoint failed: at least the first, the rest is timing
    cause = r"endpoint error: .*\(model down\): not found \(HTTP 404\)"
    if len(ids) == 1:
        said = rf"why 1 sample of down did not pass \(1 errored\): {ids[0]} {cause}"
    else:
        said = (rf"why {len(ids)} samples of down did not pass \({len(ids)} errored\): {len(ids)} samples: "
                rf"{cause}.* \({', '.join(ids)}\)")
    assert ids and re.search(said, out), out
    assert f"full report: evals report {run / 'half'} --html report.html" in out
    assert "down: no verdict: the endpoint error above" in out
    assert out.count("(model down): not found (HTTP 404)") == 1

"""docs/report.png, the first picture a newcomer sees, shows the demo as it runs today (issue 29 item 7: the
committed one said "Gate PASSED" long after the demo began to fail). scripts/make_screenshot.py makes it from a
demo replay and records a digest of that report's visible text in docs/report.png.json; here the demo is
replayed again and the digest recomputed, so a change to the demo's verdict, scores or reasons, or to the
report's wording, fails until the picture is made again."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

from tests.helpers import ROOT, load_script, run_cli

_script = load_script("make_screenshot")
REMAKE = "run `.venv/bin/python scripts/make_screenshot.py` and commit docs/report.png and docs/report.png.json"


def _cli(args: Sequence[str]) -> int:
    return run_cli(*args).returncode


def test_the_screenshot_is_of_the_demo_as_it_runs_today(tmp_path: Path) -> None:
    html = _script.demo_report(tmp_path, cli=_cli).read_text(encoding="utf-8")
    recorded = json.loads(_script.DIGEST.read_text(encoding="utf-8"))
    assert recorded["visible_text_sha256"] == _script.digest(html), f"docs/report.png is out of date: {REMAKE}"
    assert recorded["verdict"] == _script.verdict_line(html)
    assert recorded["verdict"].startswith("Gate FAILED: ")  # what `make demo` prints: the small model fails
    with (ROOT / "docs" / "report.png").open("rb") as png:
        header = png.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(struct.unpack(">II", header[16:24])) == recorded["window"] == [_script.WIDTH, _script.HEIGHT]


def _fill(page: str, **values: str) -> str:
    for key, value in values.items():
        page = page.replace("{" + key + "}", value)
    return page


def test_the_digest_leaves_out_timings_and_nothing_else() -> None:
    """Two replays differ in when they started and how long calls took; the digest must not, and must change with
    anything a reader would see differently."""
    page = ('<html><head><title>t</title><style>b{}</style></head><body><p>evals-cli report · started {when} · {dur}'
            '</p><h2>{verdict}</h2><table><tr><td data-label="time (s)">{lat}</td><td>0.75</td></tr></table>'
            '<script>var x = "{when}";</script></body></html>')
    one = _fill(page, when="2026-11-25T19:13:27+00:00", dur="1.2 s", lat="1.21", verdict="Gate FAILED: x")
    two = _fill(page, when="2026-11-26T08:00:01+00:00", dur="0.8s", lat="0.02", verdict="Gate FAILED: x")
    assert _script.digest(one) == _script.digest(two)
    assert "0.75" in _script.visible_text(one) and "Gate FAILED: x" in _script.visible_text(one)
    assert "var x" not in _script.visible_text(one) and "b{}" not in _script.visible_text(one)
    passed = _fill(page, when="2026-11-25T19:13:27+00:00", dur="1.2 s", lat="1.21", verdict="Gate PASSED: x")
    assert _script.digest(passed) != _script.digest(one)
    assert _script.digest(one.replace("0.75", "0.62")) != _script.digest(one)

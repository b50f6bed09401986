"""Re-create docs/report.png, the picture of the demo run that the README shows a newcomer first, and
docs/report.png.json, the digest of that report's visible text. A screenshot committed by hand went stale (it
showed "Gate PASSED" long after the demo began to fail), so the picture is made from the run it claims to show:

    .venv/bin/python scripts/make_screenshot.py

The demo suite is replayed from its recording as `make demo` does, its HTML report written with `--export
html=...`, and the report rendered by headless Debian Chromium (/usr/bin/chromium) at a fixed window size.
tests/test_screenshot.py replays the demo again and recomputes the digest: when the demo's verdict, scores,
reasons or the report's wording change, the test fails until this script is run again and both files are
committed. The digest leaves out only what differs between two replays of the same recording (when the run
started, durations and latencies) and no path, so it is the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PNG = ROOT / "docs" / "report.png"
DIGEST = ROOT / "docs" / "report.png.json"
CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1400, 2000  # a laptop's width; the verdict, the samples with their reasons and a conversation
DEMO = ("run", "suites/demo.yaml", "--replay", "suites/demo.recording.jsonl", "-q")
UNSEEN = {"script", "style", "template", "head"}  # markup that is never text on the page
TIME_CELL = "time (s)"  # the samples table's latency column: each cell is a measured duration
MASKS = (  # what two replays of one recording measure differently: masked, never part of the digest
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b"), "<seconds>"),
)


def run_evals(args: Sequence[str]) -> int:
    """The real `evals` command in a subprocess of this Python, run from the repository as a user runs it."""
    return subprocess.run([sys.executable, "-m", "evals_cli", *args], cwd=ROOT, check=False).returncode


def demo_report(folder: Path, cli: Callable[[Sequence[str]], int] = run_evals) -> Path:
    """The demo replayed into FOLDER/run with its HTML report at FOLDER/report.html (returned). The demo fails its
    gate (exit 1), which is what the picture must show; exit 2 or 3 means the demo itself is broken."""
    report = folder / "report.html"
    code = cli([*DEMO, "-o", str(folder / "run"), "--export", f"html={report}"])
    if code not in (0, 1) or not report.is_file():
        raise SystemExit(f"the demo replay exited {code} without a report: fix the demo first")
    return report


class _Text(HTMLParser):
    """The text a reader can see on the page or open (folded conversations included), in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.unseen = 0
        self.timed = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in UNSEEN:
            self.unseen += 1
        elif tag == "td" and dict(attrs).get("data-label") == TIME_CELL:
            self.timed += 1
            self.parts.append("<seconds>")

    def handle_endtag(self, tag: str) -> None:
        if tag in UNSEEN:
            self.unseen = max(0, self.unseen - 1)
        elif tag == "td" and self.timed:
            self.timed -= 1

    def handle_data(self, data: str) -> None:
        words = " ".join(data.split())
        if words and not self.unseen and not self.timed:
            self.parts.append(words)


def visible_text(html: str) -> str:
    """One line per text node, timings and timestamps masked."""
    parser = _Text()
    parser.feed(html)
    text = "\n".join(parser.parts)
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    return text


def digest(html: str) -> str:
    return hashlib.sha256(visible_text(html).encode("utf-8")).hexdigest()


def verdict_line(html: str) -> str:
    """The gate's line as the report shows it (kept in the JSON so a reviewer sees what the picture says)."""
    return next((line for line in visible_text(html).splitlines() if line.startswith("Gate ")), "")


def screenshot(report: Path, png: Path, profile: Path) -> None:
    """The report's first screen, as a browser window of WIDTH x HEIGHT shows it (its script has run)."""
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is not installed (Debian: apt-get install chromium)")
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=5000",
                    f"--screenshot={png}", report.as_uri()],
                   check=True, capture_output=True, timeout=120)
    if not png.is_file() or png.stat().st_size == 0:
        raise SystemExit("chromium wrote no screenshot")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        report = demo_report(folder)
        html = report.read_text(encoding="utf-8")
        screenshot(report, PNG, folder / "profile")
    DIGEST.write_text(json.dumps({
        "made_by": "scripts/make_screenshot.py",
        "run": "evals " + " ".join(DEMO),
        "window": [WIDTH, HEIGHT],
        "verdict": verdict_line(html),
        "visible_text_sha256": digest(html),
    }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {PNG.relative_to(ROOT)} and {DIGEST.relative_to(ROOT)}: {verdict_line(html)}")


if __name__ == "__main__":
    main()

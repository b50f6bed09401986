"""The HTML report as a person sees it, in a real headless Chromium driven over the DevTools protocol.

Each test opens a report, acts as a reader would (types in the filter, picks a status, clicks a conversation
open, presses "expand all tool calls") and checks what is then on screen: which table rows and conversations
are visible, the text of the section that opened, and the page's layout compared by structure (bounding
boxes of the key elements: stacked in order, not overlapping, hidden ones taking no room), never by pixels.

The DevTools protocol is spoken over a websocket-client connection (a maintained library, in the dev extra): an
HTTP GET for the page's websocket address, then one JSON message per command. The tests skip only when
/usr/bin/chromium is absent.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websocket

from evals_cli.exporters import write_html
from evals_cli.exporters.html_sessions import write_sessions_html
from evals_cli.models.results import FailedBy, Grade, SampleResult
from evals_cli.report import load_sessions
from tests.run_factory import XSS, make_result, make_summary, tool_call

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")

# a real browser, seconds to start: `slow` like the browser tests of test_html_report.py; skipped without Chromium
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHROMIUM.exists() and shutil.which(str(CHROMIUM))),
                                                   reason="/usr/bin/chromium is not installed")]


# --- a DevTools client (websocket-client carries the protocol's messages) -----------------------------------

class Browser:
    """One headless Chromium and one page in it; `call` sends a DevTools command and waits for its answer."""

    def __init__(self, profile: Path) -> None:
        self.proc = subprocess.Popen([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}",
                                      "--remote-debugging-port=0", "--window-size=1280,900", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            port = found.group(1) if found else None
            assert line or self.proc.poll() is None, "chromium exited before DevTools was up"
        assert port, "chromium did not report its DevTools port"
        # keep reading its log, so a chatty browser never blocks on a full pipe
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            targets = json.loads(response.read())
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return dict(message.get("result") or {})
            if message.get("method") == "Runtime.exceptionThrown":
                raise AssertionError(f"script error in the report: {message['params']}")

    def js(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.js("document.readyState === 'complete' && document.documentElement.dataset.reportReady === '1'"):
                assert self.js("document.documentElement.getAttribute('data-js-error')") is None
                return
            time.sleep(0.05)
        raise AssertionError(f"{url}: the report's script did not finish")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (scrolled into view first), as a person clicks."""
        box = self.js(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
            el.scrollIntoView({{block: "center"}}); const r = el.getBoundingClientRect();
            return {{x: r.left + Math.min(r.width / 2, 40), y: r.top + r.height / 2}}; }})()""")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1)

    def type_into(self, selector: str, text: str) -> None:
        self.click(selector)
        self.call("Input.insertText", text=text)

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a <select> (a native popup cannot be clicked headless): focus it, set it, fire change."""
        self.js(f"""(() => {{ const el = document.querySelector({json.dumps(selector)}); el.focus();
            el.value = {json.dumps(value)}; el.dispatchEvent(new Event("change", {{bubbles: true}})); }})()""")

    def visible(self, selector: str, attribute: str) -> list[str]:
        """`attribute` of every element matching `selector` that takes room on the page (checkVisibility)."""
        return list(self.js(f"""Array.from(document.querySelectorAll({json.dumps(selector)}))
            .filter(el => el.checkVisibility() && el.getBoundingClientRect().height > 0)
            .map(el => el.getAttribute({json.dumps(attribute)}))"""))

    def boxes(self, selector: str) -> list[dict[str, float]]:
        """Page-coordinate bounding boxes (x, y, width, height) of every element matching `selector`."""
        return list(self.js(f"""Array.from(document.querySelectorAll({json.dumps(selector)})).map(el => {{
            const r = el.getBoundingClientRect();
            return {{x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}}; }})"""))

    def screenshot(self) -> bytes:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        return base64.b64decode(data)

    def close(self) -> None:
        self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()



# --- the reports ---------------------------------------------------------------------------------------------

def judged(score: float, rationale: str) -> Grade:
    """A model_judge grade as the grader stores it, with the rendered prompt and reply it should also keep."""
    return Grade(score=score, rationale=rationale, metadata={
        "judge": "judge-model", "raw_score": 7, "mode": "json_schema",
        "verdicts": [{"judge": "judge-model", "score": score, "raw": 7, "reason": rationale, "mode": "json_schema"}],
        "messages": [{"role": "system", "content": "You are a strict grader."},
                     {"role": "user", "content": "Rubric: the answer names the host.\nAnswer: localhost"}],
        "reply": '{"score": 7, "reason": "' + rationale + '"}'})


def samples() -> list[SampleResult]:
    looping = make_result("looper", {"answer": 0.0, "quality": 0.3}, answer="gave up",
                          calls=[tool_call("read_file", {"path": "a"}, f"content {i}") for i in range(8)])
    looping.failed_by = [FailedBy(rule="weighted", score=0.15, threshold=0.6, reason="weighted score 0.15 not ≥ 0.6")]
    near = make_result("near", {"answer": 1.0, "quality": 0.3}, passed=True)  # 0.65: passes a 0.6 rule
    near.grades["quality"] = judged(0.3, "vague but right")
    forbidden = make_result("forbidden", {"answer": 1.0, "avoided": 0.0}, passed=False,
                            calls=[tool_call("delete_db", {}, "dropped")])
    forbidden.failed_by = [FailedBy(rule="required", grader="avoided", score=0.0, threshold=1.0,
                                    reason="avoided 0.00 < 1 (required)")]
    return [
        make_result("alpha", {"answer": 1.0, "quality": 1.0}, calls=[tool_call("list_files", {}, "a.txt")]),
        looping, near, forbidden,
        make_result("down", {}, error=("timeout", "agent endpoint timed out after 30s")),
        make_result(f"evil{XSS}", {"answer": 1.0, "quality": 1.0}, answer=f"Sure: {XSS}", passed=True),
    ]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    results = samples()
    folder = tmp_path_factory.mktemp("report")
    summary = make_summary(results)
    summary.gate = summary.gate.model_copy(update={"value": 0.6})  # type: ignore[union-attr]
    return write_html(results, summary, folder / "report.html").as_uri()


ROWS = "#samples tbody tr"
CONVERSATIONS = "details.sample"


# --- the tests -----------------------------------------------------------------------------------------------

def test_filters_hide_rows_and_their_conversations(browser: Browser, report: str) -> None:
    browser.open(report)
    everyone = ["alpha", "looper", "near", "forbidden", "down", f"evil{XSS}"]
    assert browser.visible(ROWS, "data-sample") == everyone
    assert browser.visible(CONVERSATIONS, "id") == [f"s-{i}" for i in range(1, 7)]
    assert browser.js("document.getElementById('shown').textContent") == "6 of 6 samples shown"

    browser.choose("#status-filter", "failed")
    assert browser.visible(ROWS, "data-sample") == ["looper", "forbidden"]
    assert browser.visible(CONVERSATIONS, "id") == ["s-2", "s-4"]  # the conversations below follow the table
    assert browser.js("document.getElementById('shown').textContent") == "2 of 6 samples shown"
    hidden = browser.boxes("#s-1") + browser.boxes("#s-3")
    assert all(b["height"] == 0 for b in hidden)  # filtered-out conversations take no room

    browser.choose("#status-filter", "")
    browser.type_into("#filter", "read_file")  # the tools column: looper's eight calls
    assert browser.visible(ROWS, "data-sample") == ["looper"]
    assert browser.visible(CONVERSATIONS, "id") == ["s-2"]
    assert browser.js("document.querySelector('#samples tr[data-sample=looper] td.tools').textContent.trim()") \
        == "read_file ×8"

    browser.type_into("#filter", "zzz-nothing")
    assert browser.visible(ROWS, "data-sample") == [] and browser.visible(CONVERSATIONS, "id") == []
    assert browser.visible("#no-match", "id") == ["no-match"]


def test_expanding_a_trajectory_shows_its_turns_and_tool_results(browser: Browser, report: str) -> None:
    browser.open(report)
    assert not browser.js("document.getElementById('s-1').open")  # passed samples start closed
    closed = browser.boxes("#s-1")[0]["height"]
    browser.click("#s-1 > summary")
    assert browser.js("document.getElementById('s-1').open")
    opened = browser.boxes("#s-1")[0]["height"]
    assert opened > closed + 100
    text = browser.js("document.querySelector('#s-1 .body').innerText")
    assert "Turn 1" in text and "a question" in text and "an answer" in text and "tool call list_files" in text
    assert "a.txt" not in text  # a tool's result stays folded until asked for

    browser.click("#s-1 button.sample-tools")  # one conversation's tool results, in one click
    assert "a.txt" in browser.js("document.querySelector('#s-1 .body').innerText")

    results = "Array.from(document.querySelectorAll('#s-2 details.tool')).filter(d => d.open).length"
    assert browser.js(results) == 0
    browser.click("#expand-tools")  # every tool result of the report
    assert browser.js(results) == 8
    looper = browser.js("document.querySelector('#s-2 .body').innerText")
    assert all(f"content {i}" in looper for i in range(8))
    assert browser.js("document.getElementById('expand-tools').textContent") == "collapse all tool calls"


def test_judge_prompt_and_reply_collapsed_until_opened(browser: Browser, report: str) -> None:
    browser.open(report)
    browser.click("#s-3 > summary")
    browser.click("#s-3 tr[data-grader=quality] details.why > summary")
    body = "document.querySelector('#s-3 .body').innerText"
    assert "judge call: judge-model" in browser.js(body)
    assert "You are a strict grader." not in browser.js(body)  # collapsed
    browser.click("#s-3 details.judge-call > summary")
    text = browser.js(body)
    assert "You are a strict grader." in text and "Rubric: the answer names the host." in text
    assert '{"score": 7, "reason": "vague but right"}' in text


def test_pass_rule_failing_graders_and_colours(browser: Browser, report: str) -> None:
    browser.open(report)
    rule = browser.js("document.getElementById('pass-rule').innerText")
    assert "weighted score is ≥ 0.6" in rule
    css = "el => getComputedStyle(el).color"
    good = browser.js(f"({css})(document.querySelector('.card .n.good'))")
    bad = browser.js(f"({css})(document.querySelector('.card .n.bad'))")
    score = "document.querySelector('#samples tr[data-sample={}] td:nth-last-child(5)')"
    assert browser.js(score.format("near") + ".textContent.trim()") == "0.65"
    assert browser.js(f"({css})({score.format('near')})") == good  # 0.65 passes 0.6: green, not amber
    assert browser.js(f"({css})({score.format('looper')})") == bad
    assert browser.js("document.querySelector('#samples tr[data-sample=forbidden] .badge').textContent") \
        == "failed: avoided"
    assert "failed by avoided" in browser.js("document.querySelector('#s-4 > summary').innerText")
    assert "fails the sample" in browser.js("document.querySelector('#s-4 tr.fails-sample').innerText")


def test_layout_by_structure(browser: Browser, report: str) -> None:
    browser.open(report)
    shot = browser.screenshot()  # the whole page: as wide as the viewport's content, as tall as the document
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", shot[16:24])
    assert 1200 <= width <= 1280 and height > 900  # the window, less any scrollbar
    order = ["header", "#gate", "#summary", "#graders", "#pass-rule", "#samples", "#conversations", "footer"]
    tops = [browser.boxes(sel)[0] for sel in order]
    assert all(b["width"] > 0 and b["height"] > 0 for b in tops)
    assert [b["y"] for b in tops] == sorted(b["y"] for b in tops)  # the page reads top to bottom in this order
    for upper, lower in zip(tops, tops[1:], strict=False):
        assert upper["y"] + upper["height"] <= lower["y"] + 1, (upper, lower)  # no section overlaps the next
    rows = browser.boxes(ROWS)
    assert len(rows) == 6 and all(r["height"] >= 20 for r in rows)
    assert all(a["y"] + a["height"] <= b["y"] + 1 for a, b in zip(rows, rows[1:], strict=False))
    conversations = browser.boxes(CONVERSATIONS)
    assert all(a["y"] + a["height"] <= b["y"] for a, b in zip(conversations, conversations[1:], strict=False))
    width = browser.js("document.documentElement.clientWidth")
    assert browser.js("document.documentElement.scrollWidth") <= width  # nothing pushes the page sideways
    assert not browser.js("document.querySelectorAll('img, iframe, link, script[src]').length")
    assert XSS in browser.js("document.querySelector('#samples tr:last-child td.id').innerText")  # shown as text


def test_sessions_report_filters_and_expands(browser: Browser, tmp_path: Path) -> None:
    from evals_cli.analyze import analyze_command

    assert analyze_command(ROOT / "datasets" / "multi_agent_sessions.jsonl", tmp_path / "run", quiet=True) == 0
    view = load_sessions(tmp_path / "run")
    browser.open(write_sessions_html(view.analyses, view.summary, tmp_path / "sessions.html").as_uri())
    assert len(browser.visible(ROWS, "data-sample")) == 8
    assert browser.js("document.getElementById('shown').textContent") == "8 of 8 sessions shown"
    browser.choose("#status-filter", "clean")
    assert browser.visible(ROWS, "data-sample") == ["refund-clean"]
    assert browser.visible(CONVERSATIONS, "id") == ["s-1"]
    browser.choose("#status-filter", "")
    browser.type_into("#filter", "rdm")
    assert browser.visible(ROWS, "data-sample") == ["refund-user-corrects"]
    [anchor] = browser.visible(CONVERSATIONS, "id")
    text = browser.js(f"document.getElementById('{anchor}').innerText")
    assert "Turn 1" in text and "rdm (0.90)" in text and "planner" in text


# --- the layout follows the window (issue 29 item 5) --------------------------------------------------------

def at_width(browser: Browser, width: int) -> None:
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)


@pytest.fixture
def window(browser: Browser) -> Iterator[Browser]:
    """The browser, its window size put back afterwards (the other tests read a 1280 px window)."""
    try:
        yield browser
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The simulated-users suite replayed from its recording of a real model: five graders, long sample ids,
    every sample failing, judge reasoning: a wide table with long reasons."""
    from tests.helpers import run_cli

    out = tmp_path_factory.mktemp("simulated") / "run"
    assert run_cli("run", str(ROOT / "suites" / "simulated_users.yaml"), "--replay",
                   str(ROOT / "suites" / "simulated_users.recording.jsonl"), "-o", str(out)).returncode == 1
    assert run_cli("report", str(out), "--html", str(out.parent / "report.html")).returncode == 0
    return out.parent / "report.html"


NO_SIDEWAYS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"


def test_at_1400_px_the_samples_table_does_not_scroll_sideways(window: Browser, simulated: Path) -> None:
    at_width(window, 1400)
    window.open(simulated.as_uri())
    assert window.js(NO_SIDEWAYS)
    table = window.js("""(() => { const t = document.getElementById('samples'), box = t.parentElement;
        return {table: t.getBoundingClientRect().width, box: box.clientWidth, scroll: box.scrollWidth}; })()""")
    assert table["scroll"] <= table["box"] and table["table"] <= table["box"] + 1, table
    heads = window.boxes("#samples thead th")
    assert len(heads) == 14 and max(h["x"] + h["width"] for h in heads) <= 1400  # every column on screen
    assert window.visible(ROWS, "data-sample") == ["ask-for-order-id", "corrects-the-agent", "impatient-user",
                                                   "scripted-then-simulated"]


def test_at_390_px_every_reason_is_on_screen(window: Browser, simulated: Path) -> None:
    at_width(window, 390)
    window.open(simulated.as_uri())
    assert window.js(NO_SIDEWAYS)
    width = window.js("document.documentElement.clientWidth")
    results = window.js("""Array.from(document.querySelectorAll('#samples td.result')).map(td => {
        const r = td.getBoundingClientRect(), why = td.querySelector('.why-short');
        return {left: r.left, right: r.right, height: r.height, why: why ? why.innerText : ''}; })""")
    assert len(results) == 4
    for cell in results:  # the result and why it failed, on screen, not past the right edge
        assert 0 <= cell["left"] and cell["right"] <= width and cell["height"] > 0, cell
        assert cell["why"].startswith("calls 0.00: 0/1 expected calls matched"), cell
    # one card per sample, every value labelled (the header row is gone)
    assert window.js("getComputedStyle(document.querySelector('#samples td.result'), '::before').content") == '"result"'
    assert window.js("getComputedStyle(document.querySelector('#samples thead')).display") == "none"
    assert window.js("document.getElementById('s-4').open")  # a failed sample's conversation starts open:
    # each grade's reason under its grader, on screen
    cells = window.js("""Array.from(document.querySelectorAll('#s-4 table.grades tbody tr')).map(tr => {
        const why = tr.cells[2].getBoundingClientRect();
        return {grader: tr.dataset.grader, left: why.left, right: why.right, height: why.height}; })""")
    assert [c["grader"] for c in cells] == ["goal", "replies", "calls", "forbidden_tools", "final_state"]
    assert all(0 <= c["left"] and c["right"] <= width and c["height"] > 0 for c in cells), cells
    window.click("#s-4 tr[data-grader=goal] details.why > summary")
    goal = window.js("document.querySelector('#s-4 tr[data-grader=goal]').innerText")
    assert "The user asked for the status of order 50001" in goal
    assert window.js(NO_SIDEWAYS)
    at_width(window, 320)
    window.open(simulated.as_uri())
    assert window.js(NO_SIDEWAYS)


def test_the_sessions_and_models_pages_follow_the_window(window: Browser, tmp_path: Path) -> None:
    from evals_cli.analyze import analyze_command
    from evals_cli.exporters.html import write_run_html
    from evals_cli.matrix_report import write_matrix_html
    from evals_cli.report import load_matrix
    from tests.helpers import run_cli

    assert analyze_command(ROOT / "datasets" / "multi_agent_sessions.jsonl", tmp_path / "sessions", quiet=True) == 0
    view = load_sessions(tmp_path / "sessions")
    sessions = write_sessions_html(view.analyses, view.summary, tmp_path / "sessions.html").as_uri()
    models = tmp_path / "models"
    run_cli("run", str(ROOT / "suites" / "demo.yaml"), "--replay", str(ROOT / "suites" / "demo.recording.jsonl"),
            "-o", str(models), "--model", "qwen2.5-coder-1.5b-instruct", "--model", "unrecorded")
    page = tmp_path / "models.html"
    write_matrix_html(load_matrix(models), page, write_run_html)
    answers = "#sample-1 .model-answer"
    for width in (1400, 390):
        at_width(window, width)
        window.open(sessions + "#s-7")  # the hallucinated answer, opened from its link
        assert window.js(NO_SIDEWAYS), width
        turn = window.js("document.querySelector('#s-7 .turn').innerText")
        assert "refund RF-9999" in turn and "hallucination" in turn and '"amount": 34.99' in turn
        window.open(page.as_uri())
        assert window.js(NO_SIDEWAYS), width
        boxes = window.boxes(answers)
        assert len(boxes) == 2
        if width == 1400:  # the two models' answers side by side
            assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"]
        else:  # one above the other, each as wide as the screen allows
            assert boxes[0]["y"] + boxes[0]["height"] <= boxes[1]["y"] and boxes[1]["width"] > 300
    at_width(window, 320)  # the narrowest phone: long names wrap, whatever font this machine draws them in
    for url in (sessions + "#s-7", page.as_uri()):
        window.open(url)
        assert window.js(NO_SIDEWAYS), url
    window.click("#m-1 a.full-report")  # the model's own full report, written beside the page
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not window.js("location.pathname").endswith("-qwen2.5-coder-1.5b-instruct.html"):
        time.sleep(0.05)
    assert window.js("location.pathname").endswith("models-qwen2.5-coder-1.5b-instruct.html")

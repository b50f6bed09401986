"""The report's label script (exporters/templates/labels.js) run by node against a minimal stand-in for the page:
served by `evals view` (a `<meta name="evals-labels">` names the address) a click POSTs the label line to it and
nothing goes to the browser's storage; opened from disk a click goes to storage and nothing is posted; either way
the run's own label (`saved` in the item's data) is pressed when the page opens. No browser here (the Chromium tests
are slow and need /usr/bin/chromium); node is enough to run the script's logic."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.helpers import ROOT

SCRIPT = ROOT / "evals_cli" / "exporters" / "templates" / "labels.js"
HARNESS = r"""
const served = process.argv[1] === "served";
function el(attrs) {
  const a = Object.assign({}, attrs), handlers = {};
  return { getAttribute: k => (k in a ? a[k] : null), setAttribute: (k, v) => { a[k] = String(v); },
           addEventListener: (e, f) => { handlers[e] = f; }, fire: e => handlers[e](), attrs: a };
}
const item = { sample_id: "a1", repeat: 0, grader: "quality", turn: null, judge: "pass", score: 0.9, item: "abc",
               saved: { label: "fail", note: "from the file" } };
const pass = el({ "data-label": "pass", "aria-pressed": "false" });
const fail = el({ "data-label": "fail", "aria-pressed": "false" });
const note = el({}); note.value = "";
const span = el({ "data-item": JSON.stringify(item) });
span.querySelector = s => s === ".label-note" ? note :
  [pass, fail].find(b => b.attrs["aria-pressed"] === "true") || null;
span.querySelectorAll = () => ({ forEach: f => [pass, fail].forEach(f) });
const download = el({}), count = { textContent: "" };
global.document = {
  querySelectorAll: () => [span],
  getElementById: id => id === "download-labels" ? download : count,
  querySelector: s => served ? { getAttribute: () => "/run/r/labels" } : null,
};
global.location = { pathname: "/report.html" };
const stored = {};
global.localStorage = { getItem: k => stored[k] || null, setItem: (k, v) => { stored[k] = v; } };
const posts = [];
global.fetch = (url, init) => {
  posts.push({ url, init });
  return Promise.resolve({ ok: true, text: () => Promise.resolve("saved") });
};
require(process.argv[2]);
const first = { pass: pass.attrs["aria-pressed"], fail: fail.attrs["aria-pressed"], note: note.value };
pass.fire("click");
setTimeout(() => {
  console.log(JSON.stringify({ first, posts: posts.map(p => ({ url: p.url, method: p.init.method,
    body: JSON.parse(p.init.body) })), stored: Object.keys(stored).length, count: count.textContent,
    pressed: pass.attrs["aria-pressed"] }));
}, 10);
"""


def _run(mode: str) -> dict:
    done = subprocess.run(["node", "-e", HARNESS, mode, str(SCRIPT)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_served_a_click_is_posted_to_the_run_and_the_runs_label_shown() -> None:
    found = _run("served")
    assert found["first"] == {"pass": "false", "fail": "true", "note": "from the file"}  # RUN/labels.jsonl's label
    [post] = found["posts"]
    assert post["url"] == "/run/r/labels" and post["method"] == "POST"
    assert post["body"] == {"sample_id": "a1", "repeat": 0, "grader": "quality", "turn": None, "label": "pass",
                            "note": "from the file", "judge": "pass", "score": 0.9, "item": "abc"}
    assert found["stored"] == 0 and "saved into the run's labels.jsonl" in found["count"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_from_disk_a_click_stays_in_the_browser() -> None:
    found = _run("disk")
    assert found["first"]["fail"] == "true" and found["posts"] == [] and found["stored"] == 1
    assert found["pressed"] == "true"

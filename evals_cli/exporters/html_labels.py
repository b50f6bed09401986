"""Labelling judged items in the HTML report: a pass and a fail button (and a note) beside every judge verdict, per
sample, per turn and per reply, and a "download labels" button that saves them as the labels file `evals calibrate`
reads (one JSON line per labelled item, the same keys `evals label` writes).

Each item's identity and what the judge said travel in its `data-item` attribute (JSON, escaped by the template);
the script adds the person's label and note. Labels survive a reload of the same report in the browser's storage,
restored only onto the same judged answer (its digest), never onto another run's report at the same path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from evals_cli.calibration.items import JudgedItem, judged_items, run_manifest
from evals_cli.calibration.judges import fingerprint_of
from evals_cli.errors import ConfigError
from evals_cli.models.calibration import JudgeRecord
from evals_cli.models.results import SampleResult

ItemKey = tuple[str, int]  # (sample_id, repeat)


def item_data(item: JudgedItem, record: JudgeRecord | None) -> str:
    """The JSON a label line starts from: the item's key, the judge's verdict and score, the judge's fingerprint and
    the digest of what was judged."""
    data: dict[str, object] = {"sample_id": item.key.sample_id, "repeat": item.key.repeat, "grader": item.key.grader,
                               "turn": item.key.turn, "judge": item.verdict(), "score": item.score}
    fingerprint = fingerprint_of(record)
    if fingerprint is not None:
        data["fingerprint"] = fingerprint.as_dict()
    data["item"] = item.digest
    return json.dumps(data, ensure_ascii=False)


def label_items(results: Iterable[SampleResult], run_dir: Path | None,
                fallback: tuple[str, float] | None) -> dict[ItemKey, dict[tuple[str, int | None], str]]:
    """(sample, repeat) -> (grader, turn) -> the item's data, for every judge verdict in `results`. The pass mark is
    the one run.json records for the judge, else `fallback` (the report's per-sample pass rule, op and value)."""
    judges: dict[str, JudgeRecord] = {}
    if run_dir is not None:
        try:
            manifest = run_manifest(run_dir if run_dir.is_dir() else run_dir.parent)
        except ConfigError:
            manifest = None
        judges = dict(manifest.judges) if manifest is not None else {}
    op, mark = fallback or ("gte", 0.5)
    default = JudgeRecord(op=op if op in ("gt", "gte", "lt", "lte", "eq") else "gte", mark=mark)
    out: dict[ItemKey, dict[tuple[str, int | None], str]] = {}
    for item in judged_items(results, judges, default):
        record = judges.get(item.key.grader)
        out.setdefault((item.key.sample_id, item.key.repeat), {})[(item.key.grader, item.key.turn)] = \
            item_data(item, record)
    return out


LABEL_MACRO = """{% macro label_buttons(data) -%}
{%- if data %}<span class="label-item" data-item="{{ data }}"><span class="label-what">your label</span>
<button type="button" class="label-btn" data-label="pass" aria-pressed="false">pass</button>
<button type="button" class="label-btn" data-label="fail" aria-pressed="false">fail</button>
<input type="text" class="label-note" placeholder="note" aria-label="note"></span>{% endif -%}
{%- endmacro %}
"""

DOWNLOAD = """{% if v.labelled_items %}
  <button type="button" id="download-labels" disabled>download labels</button>
  <span id="labels-count" class="muted">0 of {{ v.labelled_items }} judged items labelled</span>
  {% endif %}"""

LABEL_STYLE = """
.label-item { display: inline-flex; gap: 4px; align-items: center; margin: 2px 0 2px 8px; font-size: 12px;
  font-weight: normal; }
.label-item .label-what { color: var(--muted); }
.label-item button, .label-item input { font: inherit; padding: 0 6px; color: var(--fg); background: var(--bg);
  border: 1px solid var(--line); border-radius: 6px; }
.label-item input { width: 12em; }
.label-item button[data-label=pass][aria-pressed=true] { color: #fff; background: var(--good); border-color: var(--good); }
.label-item button[data-label=fail][aria-pressed=true] { color: #fff; background: var(--bad); border-color: var(--bad); }
"""

LABEL_SCRIPT = r"""
(function () {
  "use strict";
  var spans = Array.prototype.slice.call(document.querySelectorAll(".label-item"));
  var button = document.getElementById("download-labels");
  if (!spans.length || !button) { return; }
  var count = document.getElementById("labels-count");
  var store = "evals-labels:" + location.pathname;
  var saved = {};
  try { saved = JSON.parse(localStorage.getItem(store) || "{}") || {}; } catch (e) { saved = {}; }

  function data(span) { return JSON.parse(span.getAttribute("data-item")); }
  function keyOf(d) { return [d.sample_id, d.repeat, d.grader, d.turn === null ? "" : d.turn].join("\u0001"); }
  function labelOf(span) {
    var on = span.querySelector("button[aria-pressed=true]");
    return on ? on.getAttribute("data-label") : null;
  }
  function save() {
    var all = {};
    spans.forEach(function (span) {
      var label = labelOf(span);
      if (label) {
        var d = data(span);
        all[keyOf(d)] = { label: label, note: span.querySelector(".label-note").value, item: d.item };
      }
    });
    try { localStorage.setItem(store, JSON.stringify(all)); } catch (e) { /* storage off: labels live until reload */ }
  }
  function refresh() {
    var n = spans.filter(function (span) { return labelOf(span) !== null; }).length;
    count.textContent = n + " of " + spans.length + " judged items labelled";
    button.disabled = n === 0;
  }
  function press(span, label) {
    span.querySelectorAll("button.label-btn").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-label") === label ? "true" : "false");
    });
  }
  spans.forEach(function (span) {
    var d = data(span), before = saved[keyOf(d)];
    if (before && before.item === d.item) {  /* the same judged answer: this report's own label, restored */
      press(span, before.label);
      span.querySelector(".label-note").value = before.note || "";
    }
    span.querySelectorAll("button.label-btn").forEach(function (b) {
      b.addEventListener("click", function () {
        var again = b.getAttribute("aria-pressed") === "true";
        press(span, again ? null : b.getAttribute("data-label"));  /* a second click takes the label back */
        save();
        refresh();
      });
    });
    span.querySelector(".label-note").addEventListener("input", save);
  });
  button.addEventListener("click", function () {
    var lines = [];
    spans.forEach(function (span) {
      var label = labelOf(span);
      if (!label) { return; }
      var d = data(span), line = { sample_id: d.sample_id, repeat: d.repeat, grader: d.grader, turn: d.turn,
        label: label, note: span.querySelector(".label-note").value };
      ["judge", "score", "fingerprint", "item"].forEach(function (k) { if (k in d) { line[k] = d[k]; } });
      lines.push(JSON.stringify(line));
    });
    var blob = new Blob([lines.join("\n") + "\n"], { type: "application/x-ndjson" });
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "labels.jsonl";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  });
  refresh();
})();
"""

"""The HTML report's template, stylesheet and script, kept in Python strings.

They live in a module rather than in template files so that they ship inside any wheel without
package-data configuration, and so the written report never refers to anything outside itself.
The template is rendered with autoescape on; only STYLE and SCRIPT (ours, constant) are marked safe.
"""

from __future__ import annotations

from evals_cli.exporters.html_labels import DOWNLOAD, LABEL_MACRO

STYLE = """
:root { --fg:#1f2328; --muted:#59636e; --bg:#ffffff; --panel:#f6f8fa; --line:#d1d9e0; --good:#1a7f37;
  --mid:#9a6700; --bad:#cf222e; --err:#8250df; --avg:#3b6fc4; --acc:#2f9e5b; --user:#eef4ff; --asst:#f3f3f3; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e6edf3; --muted:#9198a1; --bg:#0d1117; --panel:#161b22; --line:#30363d; --good:#3fb950;
    --mid:#d29922; --bad:#f85149; --err:#a371f7; --avg:#4f8ee8; --acc:#3fb96e; --user:#162338; --asst:#1c2128; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1240px; padding: 20px 28px 60px; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; } h3 { font-size: 14px; margin: 14px 0 6px; }
.meta, .muted { color: var(--muted); }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--panel); border: 1px solid var(--line);
  border-radius: 6px; padding: 8px 10px; margin: 4px 0; max-height: 340px; overflow: auto; }
.gate { margin: 14px 0; padding: 12px 16px; border-radius: 8px; font-weight: 600; font-size: 15px; border: 1px solid; }
.gate.pass { color: var(--good); border-color: var(--good); } .gate.fail { color: var(--bad); border-color: var(--bad); }
.gate.unknown { color: var(--mid); border-color: var(--mid); }
.warn { color: var(--mid); font-weight: 600; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 120px; }
.card .n { font-size: 20px; font-weight: 650; } .card .l { color: var(--muted); font-size: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
svg text { fill: var(--fg); font: 12px system-ui, sans-serif; } svg .axis { stroke: var(--line); }
svg .tick { fill: var(--muted); font-size: 10px; } svg .threshold { stroke: var(--bad); stroke-dasharray: 4 3; }
svg .avg { fill: var(--avg); } svg .acc { fill: var(--acc); } svg .hist { fill: var(--avg); }
.legend span { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; border-radius: 2px; }
.hists { display: flex; flex-wrap: wrap; gap: 8px 20px; }
.hists figure { margin: 0; } .hists figcaption { font-weight: 600; font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.id, td.tags { white-space: nowrap; }
table.grades td:nth-child(-n+2), table.grades th:nth-child(-n+2) { width: 1%; white-space: nowrap; }
#samples th { vertical-align: bottom; } #samples th.grader { white-space: normal; }
.scroll { overflow-x: auto; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " \\2195"; color: var(--muted); font-size: 11px; }
table.sortable th[aria-sort=ascending]::after { content: " \\25B2"; color: var(--fg); }
table.sortable th[aria-sort=descending]::after { content: " \\25BC"; color: var(--fg); }
.good { color: var(--good); } .mid { color: var(--mid); } .bad { color: var(--bad); } .err { color: var(--err); }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600;
  border: 1px solid currentColor; }
.badge.passed { color: var(--good); } .badge.failed { color: var(--bad); }
.badge.errored, .badge.ungraded { color: var(--err); }
.controls { display: flex; gap: 10px; align-items: center; margin: 8px 0; flex-wrap: wrap; }
.controls input, .controls select, .controls button { font: inherit; padding: 3px 8px; color: var(--fg);
  background: var(--bg); border: 1px solid var(--line); border-radius: 6px; }
details.sample { border: 1px solid var(--line); border-radius: 8px; margin: 10px 0; background: var(--bg); }
details.sample > summary { padding: 8px 12px; cursor: pointer; background: var(--panel); border-radius: 8px; }
details.sample[open] > summary { border-bottom: 1px solid var(--line); border-radius: 8px 8px 0 0; }
details.sample.failed > summary { border-left: 4px solid var(--bad); }
details.sample.errored > summary, details.sample.ungraded > summary { border-left: 4px solid var(--err); }
details.sample.passed > summary { border-left: 4px solid var(--good); }
.sample .body { padding: 6px 14px 12px; }
.error-box { border: 1px solid var(--err); color: var(--err); border-radius: 6px; padding: 8px 10px; margin: 8px 0; }
.turn { border-left: 3px solid var(--line); padding: 2px 0 6px 12px; margin: 12px 0; }
.turn-head { font-weight: 650; margin-bottom: 4px; }
.chip { display: inline-block; font-size: 12px; font-weight: 600; border: 1px solid currentColor; border-radius: 10px;
  padding: 0 7px; margin-left: 6px; }
.msg { border-radius: 8px; padding: 6px 10px; margin: 6px 0; max-width: 100%; }
.msg.user { background: var(--user); } .msg.assistant { background: var(--asst); }
.msg .role { font-size: 11.5px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
.msg .text { white-space: pre-wrap; word-break: break-word; }
details.tool { margin: 6px 0 6px 14px; } details.tool > summary { cursor: pointer; }
details.tool .label { font-size: 11.5px; color: var(--muted); margin-top: 4px; }
.tag { display: inline-block; background: var(--panel); border: 1px solid var(--line); border-radius: 4px;
  padding: 0 5px; margin-right: 3px; font-size: 12px; }
.step-meta { font-size: 11.5px; color: var(--muted); margin: 0 0 4px 14px; }
details.why > summary { cursor: pointer; } details.why[open] > summary { color: var(--muted); }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
tr.fails-sample > td:first-child { font-weight: 650; }
details.judge-call { margin-top: 6px; } details.judge-call > summary { cursor: pointer; color: var(--muted); }
details.judge-call .label, .label { font-size: 11.5px; color: var(--muted); margin-top: 4px; }
pre.diff .d-added { color: var(--good); } pre.diff .d-removed { color: var(--bad); }
pre.diff .d-changed { color: var(--mid); } pre.diff .d-hunk, pre.diff .d-more { color: var(--muted); }
.state-change { margin-top: 8px; } .state-status { font-size: 12px; font-weight: 600; margin-left: 6px; }
.state-status.created { color: var(--good); } .state-status.deleted { color: var(--bad); }
.state-status.changed { color: var(--mid); }
.effect { font-size: 12px; color: var(--muted); margin-left: 6px; } .effect.changed { color: var(--mid); }
.effect.error { color: var(--bad); }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var root = document.documentElement;
  window.addEventListener("error", function (e) { root.setAttribute("data-js-error", String(e.message)); });
  var table = document.getElementById("samples");
  var tbody = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var rows = function () { return Array.prototype.slice.call(tbody.rows); };

  function value(row, i, numeric) {
    var cell = row.cells[i];
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    if (!numeric) { return raw.trim().toLowerCase(); }
    var n = parseFloat(raw);
    return isNaN(n) ? null : n;
  }

  function sortBy(key, dir) {
    var i = heads.findIndex(function (h) { return h.getAttribute("data-key") === key; });
    if (i < 0) { return false; }
    var numeric = heads[i].getAttribute("data-type") === "num";
    var sign = dir === "desc" ? -1 : 1;
    var list = rows().map(function (row, pos) { return { row: row, pos: pos, v: value(row, i, numeric) }; });
    list.sort(function (a, b) {
      if (a.v === null || b.v === null) {  /* blanks (errors, no score) always last */
        return a.v === b.v ? a.pos - b.pos : (a.v === null ? 1 : -1);
      }
      var c = numeric ? a.v - b.v : a.v.localeCompare(b.v, undefined, { numeric: true });
      return c !== 0 ? sign * c : a.pos - b.pos;
    });
    list.forEach(function (item) { tbody.appendChild(item.row); });
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    heads[i].setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
    table.setAttribute("data-sorted-by", key + ":" + dir);
    return true;
  }

  heads.forEach(function (h) {
    h.tabIndex = 0;
    function activate() {
      var dir = h.getAttribute("aria-sort") === "ascending" ? "desc" : "asc";
      sortBy(h.getAttribute("data-key"), dir);
      try { history.replaceState(null, "", "#sort=" + h.getAttribute("data-key") + ":" + dir); } catch (e) { /* file: */ }
    }
    h.addEventListener("click", activate);
    h.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); activate(); }
    });
  });

  var filter = document.getElementById("filter");
  var status = document.getElementById("status-filter");
  var shown = document.getElementById("shown");
  var noun = table.getAttribute("data-noun") || "samples";
  function applyFilter() {
    /* the table and the conversations below it show the same samples */
    var q = filter.value.trim().toLowerCase(), st = status.value, n = 0, all = rows();
    all.forEach(function (row) {
      var ok = (!q || row.textContent.toLowerCase().indexOf(q) >= 0) && (!st || row.getAttribute("data-status") === st);
      row.hidden = !ok;
      var conv = document.getElementById(row.getAttribute("data-anchor"));
      if (conv) { conv.hidden = !ok; }
      if (ok) { n += 1; }
    });
    shown.textContent = n + " of " + all.length + " " + noun + " shown";
    var none = document.getElementById("no-match");
    if (none) { none.hidden = n > 0; }
  }
  filter.addEventListener("input", applyFilter);
  status.addEventListener("change", applyFilter);

  function setAll(open) {
    document.querySelectorAll("details.sample").forEach(function (d) { if (!d.hidden) { d.open = open; } });
  }
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });

  /* tool calls: every result readable at once, in the whole report or in one conversation */
  function setTools(scope, open) {
    scope.querySelectorAll("details.tool").forEach(function (d) { d.open = open; });
  }
  var allTools = document.getElementById("expand-tools");
  if (allTools) {
    allTools.addEventListener("click", function () {
      var open = allTools.getAttribute("aria-pressed") !== "true";
      document.querySelectorAll("details.sample").forEach(function (d) { if (!d.hidden && open) { d.open = true; } });
      setTools(document, open);
      allTools.setAttribute("aria-pressed", open ? "true" : "false");
      allTools.textContent = open ? "collapse all tool calls" : "expand all tool calls";
    });
  }
  document.querySelectorAll("button.sample-tools").forEach(function (b) {
    b.addEventListener("click", function () {
      var open = b.getAttribute("aria-pressed") !== "true";
      setTools(b.closest("details.sample"), open);
      b.setAttribute("aria-pressed", open ? "true" : "false");
      b.textContent = open ? "collapse tool calls" : "expand all tool calls";
    });
  });

  function fromHash() {
    var target = decodeURIComponent(location.hash.slice(1));
    if (target.indexOf("sort=") === 0) {
      var parts = target.slice(5).split(":");
      sortBy(parts[0], parts[1] === "desc" ? "desc" : "asc");
      return;
    }
    var el = target ? document.getElementById(target) : null;
    if (el && el.tagName === "DETAILS") { el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  applyFilter();
  document.querySelectorAll(".needs-js").forEach(function (el) { el.hidden = false; });
  root.setAttribute("data-report-ready", "1");
})();
"""

CONTROLS = """<div class="controls needs-js" hidden>
  <input id="filter" type="search" placeholder="filter (id, tag, tool…)" aria-label="filter {{ v.noun }}">
  <select id="status-filter" aria-label="status">
    <option value="">all</option>
    {% for value, label in v.statuses %}<option value="{{ value }}">{{ label }}</option>{% endfor %}
  </select>
  <span id="shown" class="muted"></span>
  <button type="button" id="expand-all">expand all conversations</button>
  <button type="button" id="collapse-all">collapse all</button>
  {% if v.noun == "samples" %}
  <button type="button" id="expand-tools" aria-pressed="false">expand all tool calls</button>
  {% endif %}
  {{ download_labels }}
</div>
"""

# the parts both pages (a run, a sessions run) share, substituted below like CONTROLS
PAGE_HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="evals-cli">
<title>{{ v.title }}</title>
<style>{{ style|safe }}</style>
</head>
<body>
<header>
"""

RUN_NOTES = """</header>
{% for note in v.notes %}
<p class="warn note">{{ note }}</p>
{% endfor %}
{% for line in v.conversation %}
<p class="muted note conversation-note">{{ line }}</p>
{% endfor %}
{% if s.status != "completed" or s.abort_reason %}
<p class="warn">Run {{ s.status }}{% if s.abort_reason %}: {{ s.abort_reason }}{% endif %}</p>
{% endif %}
{% set g = s.gate %}
<section id="gate" class="gate {{ 'unknown' if g is none or g.passed is none else ('pass' if g.passed else 'fail') }}">
  {{ g.message if g is not none else "No gate verdict." }}
</section>
"""

HISTOGRAMS = """<h3>Score distributions</h3>
<div class="hists">
{% for h in v.histograms %}
  <figure class="hist-figure">
    <figcaption>{{ h.title }} <span class="muted">({{ h.total }} scored
      {%- if h.missing %}, {{ h.missing }} without a score{% endif %})</span></figcaption>
    <svg class="chart histogram" role="img" aria-label="histogram of {{ h.title }}" width="{{ h.width }}"
         height="{{ h.height }}" viewBox="0 0 {{ h.width }} {{ h.height }}">
      <line class="axis" x1="8" x2="252" y1="{{ h.base_y }}" y2="{{ h.base_y }}"></line>
      {% for bin in h.bins %}
      <rect class="hist" x="{{ bin.x }}" y="{{ bin.y }}" width="{{ bin.width }}" height="{{ bin.height }}">
        <title>{{ bin.label }}: {{ bin.count }}</title></rect>
      {% if bin.count %}
      <text class="tick" x="{{ bin.x + bin.width / 2 }}" y="{{ bin.y - 3 }}" text-anchor="middle">{{ bin.count }}</text>
      {% endif %}
      {% endfor %}
      <text class="tick" x="10" y="{{ h.base_y + 14 }}">0</text>
      <text class="tick" x="130" y="{{ h.base_y + 14 }}" text-anchor="middle">0.5</text>
      <text class="tick" x="250" y="{{ h.base_y + 14 }}" text-anchor="end">1</text>
    </svg>
  </figure>
{% endfor %}
</div>
"""

PAGE_FOOT = """<p id="no-match" class="muted" hidden>No {{ v.noun }} match the filter.</p>
</section>
<footer>Written by evals-cli. Self-contained: no network access is needed to view this file.</footer>
<script>{{ script|safe }}</script>
</body>
</html>
"""

TEMPLATE = """{{ page_head }}
{{ label_macro }}
  <h1>{{ s.suite }}</h1>
  <p class="meta">evals-cli report · started {{ s.started_at or "—" }} · {{ "%.1f"|format(s.duration_s) }} s ·
    status {{ s.status }}</p>
{{ run_notes }}

<section class="cards" id="summary">
  <div class="card"><div class="n">{{ s.total }}</div><div class="l">samples</div></div>
  <div class="card"><div class="n good">{{ s.passed }}</div><div class="l">passed</div></div>
  <div class="card"><div class="n bad">{{ s.failed }}</div><div class="l">failed</div></div>
  <div class="card"><div class="n err">{{ s.errored }}</div><div class="l">errored</div></div>
  <div class="card"><div class="n">{{ v.pass_rate }}</div><div class="l">pass rate (graded)</div></div>
  <div class="card"><div class="n">{{ "{:,}".format(s.usage.total_tokens) }}</div>
    <div class="l">agent tokens ({{ "{:,}".format(s.usage.prompt_tokens) }} in /
      {{ "{:,}".format(s.usage.completion_tokens) }} out)</div></div>
  <div class="card"><div class="n">{{ "{:,}".format(s.judge_usage.total_tokens) }}</div>
    <div class="l">judge tokens</div></div>
  <div class="card"><div class="n">{{ "%.1f"|format(s.duration_s) }} s</div><div class="l">duration</div></div>
  {% if s.latency_p50_s is not none %}
  <div class="card"><div class="n">{{ "%.2f"|format(s.latency_p50_s) }} s</div>
    <div class="l">latency p50
      {%- if s.latency_p95_s is not none %} (p95 {{ "%.2f"|format(s.latency_p95_s) }} s){% endif %}</div></div>
  {% endif %}
  {% if s.cost is not none %}
  <div class="card"><div class="n">{{ "%.4g"|format(s.cost) }}</div><div class="l">cost</div></div>
  {% endif %}
  {% set rel = s.reliability %}
  {% if rel is not none and rel.repeats > 1 %}
  <div class="card"><div class="n">{{ rel.pass_at_k|score }} / {{ rel.pass_hat_k|score }}</div>
    <div class="l">pass@{{ rel.repeats }} / pass^{{ rel.repeats }} over {{ rel.samples }} samples</div></div>
  {% endif %}
</section>
{% if s.errors_by_category %}
<p class="err">errors:
  {% for k, n in s.errors_by_category|dictsort %}{{ k }} {{ n }}{{ ", " if not loop.last }}{% endfor %}</p>
{% endif %}

<section id="graders">
<h2>Graders</h2>
<div class="charts">
  <figure style="margin:0">
    {% set b = v.bars %}
    <svg class="chart bars" role="img" aria-label="average score and accuracy per grader" width="{{ b.width }}"
         height="{{ b.height }}" viewBox="0 0 {{ b.width }} {{ b.height }}">
      {% for x, label in b.ticks %}
      <line class="axis" x1="{{ x }}" x2="{{ x }}" y1="4" y2="{{ b.height - 18 }}"></line>
      <text class="tick" x="{{ x }}" y="{{ b.height - 5 }}" text-anchor="middle">{{ label }}</text>
      {% endfor %}
      {% for row in b.rows %}
      <text x="{{ b.label_x }}" y="{{ row.y + 4 }}" text-anchor="end">{{ row.name|truncate(24, true, "…", 0) }}</text>
      {% for bar in row.bars %}
      <rect class="{{ bar.css }}" x="{{ bar.x }}" y="{{ bar.y }}" width="{{ bar.width }}" height="{{ bar.height }}" rx="2">
        <title>{{ row.name }} {{ bar.label }}: {{ bar.value|score }}</title></rect>
      <text x="{{ bar.x + bar.width + 5 }}" y="{{ bar.y + 11 }}" class="tick">{{ bar.value|score }}</text>
      {% endfor %}
      {% endfor %}
      {% if b.threshold_x is not none %}
      <line class="threshold" x1="{{ b.threshold_x }}" x2="{{ b.threshold_x }}" y1="4" y2="{{ b.height - 18 }}">
        <title>{{ b.threshold_label }}</title></line>
      {% endif %}
    </svg>
    <figcaption class="legend muted"><span style="background:var(--avg)"></span>avg score
      <span style="background:var(--acc)"></span>accuracy{% if b.threshold_x is not none %}
      · dashed line: {{ b.threshold_label }} (the gate compares the weighted mean){% endif %}</figcaption>
  </figure>
  <table style="width:auto">
    <thead><tr><th>grader</th><th class="num">graded</th><th class="num">errors</th><th class="num">avg</th>
      <th class="num">accuracy</th><th class="num">min</th><th class="num">median</th><th class="num">max</th>
      <th class="num">weight</th></tr></thead>
    <tbody>
    {% for name, agg in s.graders.items() %}
      <tr><td>{{ name }}</td><td class="num">{% if agg.applicable is not none and agg.applicable < agg.count -%}
        {{ agg.applicable }} of {{ agg.count }}{% else %}{{ agg.count }}{% endif %}</td><td class="num">{{ agg.errors }}</td>
        <td class="num {{ score_class(agg.avg_score, v.rule) }}">{{ agg.avg_score|score }}</td>
        <td class="num">{{ agg.accuracy|score }}</td><td class="num">{{ agg.min|score }}</td>
        <td class="num">{{ agg.median|score }}</td><td class="num">{{ agg.max|score }}</td>
        <td class="num">{{ "%g"|format(v.weights[name]) if name in v.weights else "—" }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
</div>
{{ histograms }}
</section>

<section id="samples-section">
<h2>Samples</h2>
{% if v.rule is not none %}
<p id="pass-rule" class="muted">{{ v.rule.sentence }} Scores are coloured against that rule: green passes it,
  red fails it; a grader's score is amber when under it without failing the sample on its own.</p>
{% else %}
<p id="pass-rule" class="muted">The per-sample pass rule is not recorded with this run; scores are coloured on fixed
  cut-offs (green 1, amber 0.5 to 1, red under 0.5).</p>
{% endif %}
{{ controls }}<div class="scroll">
<table id="samples" class="sortable" data-noun="{{ v.noun }}">
  <thead><tr>
    <th data-key="index" data-type="num" class="num">#</th>
    <th data-key="sample" data-type="text">sample</th>
    <th data-key="tags" data-type="text">tags</th>
    <th data-key="tools" data-type="text">tools called</th>
    {% for name in v.graders %}
    <th data-key="g{{ loop.index }}" data-type="num" class="num grader" title="{{ name }}">
      {%- for part in name.split("_") %}{{ part }}{% if not loop.last %}_<wbr>{% endif %}{% endfor %}</th>
    {% endfor %}
    <th data-key="score" data-type="num" class="num">score</th>
    <th data-key="result" data-type="text">result</th>
    <th data-key="steps" data-type="num" class="num">steps</th>
    <th data-key="tokens" data-type="num" class="num">tokens</th>
    <th data-key="latency" data-type="num" class="num">time (s)</th>
  </tr></thead>
  <tbody>
  {% for sv in v.samples %}
    {% set r = sv.result %}
    <tr data-status="{{ sv.status }}" data-sample="{{ sv.name }}" data-anchor="{{ sv.anchor }}">
      <td class="num" data-sort="{{ sv.index }}">{{ sv.index }}</td>
      <td class="id" data-sort="{{ sv.name }}"><a href="#{{ sv.anchor }}">{{ sv.name }}</a></td>
      <td class="tags">{% for t in r.tags %}<span class="tag">{{ t }}</span>{% endfor %}</td>
      <td class="tools" data-calls="{{ sv.tool_calls }}">{{ sv.tools|join(", ") if sv.tools else "—" }}
        {%- if r.trajectory.stop_reason != "completed" %}
        <span class="warn">[{{ r.trajectory.stop_reason }}]</span>{% endif %}</td>
      {% for name in v.graders %}
      {% set gr = r.grades.get(name) %}
      <td class="num {{ ('muted' if not gr.applicable else sv.grade_css[name]) if gr else '' }}"
          data-sort="{{ '' if gr is none or gr.score is none else gr.score }}">
        {%- if gr is none %}{% elif gr.score is none %}error{% elif not gr.applicable %}n/a{% else %}{{ gr.score|score }}
        {%- if gr.turns_total %} ({{ gr.turns_passed }}/{{ gr.turns_total }}){% endif %}{% endif -%}
      </td>
      {% endfor %}
      <td class="num {{ sv.score_css }}" data-sort="{{ '' if r.score is none else r.score }}">{{ sv.score_text }}</td>
      <td data-sort="{{ sv.status }}"><span class="badge {{ sv.status }}">{{ sv.status_text }}</span></td>
      <td class="num">{{ sv.steps }}</td>
      <td class="num" data-sort="{{ sv.tokens }}">{{ "{:,}".format(sv.tokens) }}</td>
      <td class="num" data-sort="{{ r.latency_s }}">{{ "%.2f"|format(r.latency_s) }}</td>
    </tr>
  {% endfor %}
  </tbody>
</table>
</div>
</section>

{% macro diff(lines) -%}
<pre class="diff">
{%- for line in lines %}<span class="d-{{ line.kind }}">{{ line.render() }}</span>
{% endfor %}</pre>
{%- endmacro %}
<section id="conversations">
<h2>Conversations</h2>
{% for sv in v.samples %}
{% set r = sv.result %}
<details class="sample {{ sv.status }}" id="{{ sv.anchor }}"
  {%- if sv.status in ("failed", "errored") and v.open_problems %} open{% endif %}>
  <summary><span class="badge {{ sv.status }}">{{ sv.status_text }}</span> <b>{{ sv.name }}</b>
    · score <span class="{{ sv.score_css }}">{{ sv.score_text }}</span>
    {%- if v.rule is not none %} <span class="muted">(passes {{ v.rule.text }})</span>{% endif %}
    {% if sv.failed_by %}· <span class="bad failed-by">failed by {{ sv.failed_by|join(", ") }}</span>{% endif %}
    {% for t in r.tags %}<span class="tag">{{ t }}</span>{% endfor %}</summary>
  <div class="body">
    {% if r.error %}
    <div class="error-box"><b>{{ r.error.category }}</b>: {{ r.error.message }}</div>
    {% elif r.failed_by %}
    <div class="error-box"><b>failed by</b>:
      {% for f in r.failed_by %}{{ f.reason }}{{ "; " if not loop.last }}{% endfor %}</div>
    {% endif %}
    {% if sv.grades %}
    <h3>Grades</h3>
    <table class="grades">
      <thead><tr><th>grader</th><th class="num">score</th><th>why</th></tr></thead>
      <tbody>
      {% for gv in sv.grades %}
      {% set gd = gv.grade %}
        <tr data-grader="{{ gv.name }}"{% if gv.fails_sample %} class="fails-sample"{% endif %}><td>{{ gv.name }}
          {%- if gv.fails_sample %} <span class="chip bad">fails the sample</span>{% endif %}
          {{- label_buttons(sv.label_item(gv.name)) }}</td>
          <td class="num {{ 'muted' if not gd.applicable else gv.css }}">{{ gv.score_text if gd.applicable else "n/a" }}
            {%- if gd.turns_total %} ({{ gd.turns_passed }}/{{ gd.turns_total }} turns){% endif %}</td>
          <td><details class="why">
            <summary>{{ (gd.rationale or gd.error or "no rationale")|truncate(110, true, "…", 0) }}</summary>
            {% if gd.rationale %}<div class="text">{{ gd.rationale }}</div>{% endif %}
            {% if gd.error and gd.error != gd.rationale %}<div class="err">error: {{ gd.error }}</div>{% endif %}
            {% if gv.judge %}<div class="muted">{{ gv.judge }}</div>{% endif %}
            {% set jc = gv.judge_call %}
            {% if jc %}
            <details class="judge-call"><summary>judge call: {{ jc.model }}
              {%- if jc.verdicts %} ({{ jc.verdicts|length }} verdict{{ "s" if jc.verdicts|length != 1 }})
              {%- endif %}</summary>
              {% if jc.messages %}
              <div class="label">rendered prompt</div>
              {% for m in jc.messages %}<div class="label">{{ m.get("role", "message") }}</div>
              <pre class="judge-prompt">{{ m.get("content")|pretty }}</pre>{% endfor %}
              {% else %}
              <div class="muted judge-prompt-missing">The rendered prompt is not stored in this results file.</div>
              {% endif %}
              {% if jc.reply is not none %}<div class="label">reply</div><pre class="judge-reply">{{ jc.reply }}</pre>
              {% endif %}
              {% for vd in jc.verdicts %}
              <div class="label">verdict {{ loop.index }}{% if vd.get("judge") %} · {{ vd.get("judge") }}{% endif %}
                {%- if vd.get("mode") %} · mode {{ vd.get("mode") }}{% endif %}</div>
              <pre class="judge-verdict">answer: {{ vd.get("raw")|pretty }} → score {{ vd.get("score")|score }}
{{ vd.get("reason") or "" }}</pre>
              {% endfor %}
            </details>
            {% endif %}
            {% if gd.submission %}<div class="muted">graded text:</div><pre>{{ gd.submission }}</pre>{% endif %}
            {% if gd.metadata.get("goal_met") is not none %}<div class="goal">
              {%- if gd.metadata.get("goal_met") %}goal met
              {%- if gd.metadata.get("turn_of_success") %} at turn {{ gd.metadata.get("turn_of_success") }}{% endif %}
              {%- else %}goal not met{% endif %}
              {%- if gd.metadata.get("turn_problem") %}
              <span class="warn">({{ gd.metadata.get("turn_problem") }})</span>{% endif %}</div>{% endif %}
            {% set per_reply = gd.metadata.get("scope") == "reply" %}
            {% if gd.per_turn_grades %}<div class="muted">per {{ "reply" if per_reply else "turn" }}:
              {% for t in gd.per_turn_grades %}{{ "reply" if per_reply else "turn" }} {{ t.turn + 1 }}
              <span class="{{ score_class(t.score) }}" title="{{ t.rationale }}">{{ t.score|score }}</span>
              {{- ", " if not loop.last }} {% endfor %}
              {%- if per_reply and gd.metadata.get("share") is not none %} · share {{ gd.metadata.get("share")|score }}
              (min_share {{ gd.metadata.get("min_share") }}){% endif %}</div>{% endif %}
          </details></td></tr>
      {% endfor %}
      </tbody>
    </table>
    {% endif %}
    {% if r.trajectory.state_changes is not none %}
    <h3>Final state</h3>
    <div class="final-state">
    {% for ch in sv.changes %}
      <div class="state-change" data-target="{{ ch.target }}">{{ ch.kind }} <code>{{ ch.target }}</code>
        <span class="state-status {{ ch.status }}">{{ ch.status }}</span></div>
      {{ diff(ch.lines) }}
    {% else %}
      <p class="muted state-unchanged">unchanged: the agent left the declared environment as it was</p>
    {% endfor %}
    </div>
    {% endif %}
    <h3>Conversation</h3>
    {% if sv.tool_calls %}
    <p class="needs-js" hidden><button type="button" class="sample-tools" aria-pressed="false">expand all tool calls</button>
      <span class="muted">{{ sv.tool_calls }} tool call{{ "s" if sv.tool_calls != 1 }}</span></p>
    {% endif %}
    {% for m in r.trajectory.prefilled %}
      {% if m.get("role") == "system" %}
    <details class="why"><summary class="muted">system prompt</summary><pre>{{ m.get("content")|pretty }}</pre></details>
      {% else %}
    <div class="msg {{ 'user' if m.get('role') == 'user' else 'assistant' }} prefilled">
      <div class="role">{{ m.get("role", "message") }} · pre-filled</div>
      <div class="text">{{ m.get("content")|pretty if m.get("content") is not none else "" }}</div>
      {% if m.get("tool_calls") %}<pre>{{ m.get("tool_calls")|pretty }}</pre>{% endif %}
    </div>
      {% endif %}
    {% endfor %}
    {% for turn in r.trajectory.turns %}
    {% set tn = loop.index %}
    {% set tgs = sv.turn_grades.get(tn, []) %}
    <div class="turn" data-turn="{{ tn }}">
      <div class="turn-head">Turn {{ tn }}
        {%- for name, tg, tcss in tgs %}<span class="chip {{ tcss }}">{{ name }} {{ tg.score|score }}</span>
        {{- label_buttons(sv.label_item(name, tn - 1)) }}
        {%- endfor %}</div>
      {% if turn.user is not none %}
      <div class="msg user"><div class="role">user
        {%- if turn.user_source in ("simulated", "replayed") %} · {{ turn.user_source }}{% endif %}</div>
        <div class="text">{{ turn.user }}</div></div>
      {% endif %}
      {% for step in turn.steps %}
        {% if step.content %}
      <div class="msg assistant"><div class="role">assistant</div><div class="text">{{ step.content }}</div></div>
        {% endif %}
        {% for c in step.tool_calls %}
      <details class="tool"><summary>tool call <code>{{ c.name }}</code>
        {{- "" }}(<code>{{ c.raw_arguments|truncate(90, true, "…", 0) }}</code>)
        {% if c.unknown_tool %}<span class="bad">unknown tool</span>
        {%- elif c.is_error %}<span class="bad">error</span>{% endif %}
        {% if c.effect is not none %}{% set ev = describe_effect(c.effect) %}
        <span class="effect {{ ev.status|replace(' ', '-') }}">{{ ev.head }}</span>{% endif %}</summary>
        <div class="label">arguments</div>
        <pre>{{ c.arguments|pretty if c.arguments is not none else c.raw_arguments }}</pre>
        {% if c.arguments_error %}<div class="bad">arguments not parsed: {{ c.arguments_error }}</div>{% endif %}
        <div class="label">result{% if c.is_error %} (error){% endif %}</div>
        <pre>{{ c.result }}</pre>
        {% if c.effect is not none and ev.lines %}
        <div class="label">effect: {{ ev.op }} {{ ev.target }}</div>
        {{ diff(ev.lines) }}
        {% endif %}
      </details>
        {% endfor %}
      <div class="step-meta">model call {{ loop.index }}: {{ step.finish_reason or "—" }},
        {{ step.usage.prompt_tokens }} + {{ step.usage.completion_tokens }} tokens,
        {{ "%.2f"|format(step.latency_s) }} s</div>
      {% endfor %}
      {% if tgs %}
      <details class="why turn-grades"><summary>grades of turn {{ tn }}</summary>
        <table><thead><tr><th>grader</th><th class="num">score</th><th>answer graded</th><th>expected</th>
          <th>why</th></tr></thead>
        <tbody>{% for name, tg, tcss in tgs %}
          <tr><td>{{ name }}</td><td class="num {{ tcss }}">{{ tg.score|score }}</td>
            <td>{{ tg.submission }}</td><td>{{ tg.ground_truth|pretty if tg.ground_truth is not none else "—" }}</td>
            <td>{{ tg.rationale }}</td></tr>
        {% endfor %}</tbody></table>
      </details>
      {% endif %}
    </div>
    {% endfor %}
    {% if r.trajectory.stop_reason != "completed" %}<p class="warn">stopped: {{ r.trajectory.stop_reason }}</p>{% endif %}
    {% if r.trajectory.closing_user %}<div class="msg user closing"><div class="role">user · last words (not sent)</div>
      <div class="text">{{ r.trajectory.closing_user }}</div></div>{% endif %}
    {% if r.trajectory.end_reason %}<p class="muted conversation-end">conversation ended: {{ r.trajectory.end_reason }}
      {%- if sv.diverged_at %}; left the recorded user's path at turn {{ sv.diverged_at }}
      {%- if r.trajectory.end_reason == "diverged" %} and was stopped there{% else %}, the user simulator went on
      {%- endif %} (not a failure of the agent by itself){% endif %}</p>{% endif %}
    <p class="muted">agent tokens {{ r.usage.prompt_tokens }} in, {{ r.usage.completion_tokens }} out
      {%- if r.judge_usage.total_tokens %}, judge {{ r.judge_usage.total_tokens }}{% endif %}
      · {{ "%.2f"|format(r.latency_s) }} s</p>
  </div>
</details>
{% endfor %}
{{ page_foot }}
"""


# both reports (this page and html_sessions_template.py's) share the filter bar (the script filters the table
# and the conversations below it together)
_PARTS = {"{{ controls }}": CONTROLS, "{{ page_head }}\n": PAGE_HEAD, "{{ run_notes }}\n": RUN_NOTES,
          "{{ histograms }}\n": HISTOGRAMS, "{{ page_foot }}\n": PAGE_FOOT,
          "{{ download_labels }}": DOWNLOAD, "{{ label_macro }}\n": LABEL_MACRO}  # html_labels.py: labelling


def assemble(page: str) -> str:
    """A page with the shared parts (head, filter bar, notes, histograms, foot) put in its placeholders."""
    for placeholder, part in _PARTS.items():
        page = page.replace(placeholder, part)
    return page


TEMPLATE = assemble(TEMPLATE)

(function () {
  "use strict";
  var spans = Array.prototype.slice.call(document.querySelectorAll(".label-item"));
  var button = document.getElementById("download-labels");
  if (!spans.length || !button) { return; }
  var count = document.getElementById("labels-count");
  var store = "evals-labels:" + location.pathname;
  /* served by `evals view`: each click is saved into the run's labels.jsonl at this address (same origin) */
  var meta = document.querySelector('meta[name="evals-labels"]');
  var url = meta ? meta.getAttribute("content") : null;
  var saved = {};
  if (!url) {
    try { saved = JSON.parse(localStorage.getItem(store) || "{}") || {}; } catch (e) { saved = {}; }
  }
  var status = "";

  function data(span) { return JSON.parse(span.getAttribute("data-item")); }
  function keyOf(d) { return [d.sample_id, d.repeat, d.grader, d.turn === null ? "" : d.turn].join("\u0001"); }
  function labelOf(span) {
    var on = span.querySelector("button[aria-pressed=true]");
    return on ? on.getAttribute("data-label") : null;
  }
  function line(span, label) {
    var d = data(span), out = { sample_id: d.sample_id, repeat: d.repeat, grader: d.grader, turn: d.turn,
      label: label, note: span.querySelector(".label-note").value };
    ["judge", "score", "fingerprint", "item"].forEach(function (k) { if (k in d) { out[k] = d[k]; } });
    return out;
  }
  function post(span) {
    var label = labelOf(span);
    if (!label) { return; }
    fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(line(span, label)),
                 credentials: "same-origin" })
      .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, text: t }; }); })
      .then(function (r) {
        span.setAttribute("data-saved", r.ok ? label : "error");
        status = r.ok ? "saved into the run's labels.jsonl" : "not saved: " + r.text;
        refresh();
      })
      .catch(function (e) { span.setAttribute("data-saved", "error"); status = "not saved: " + e; refresh(); });
  }
  function save() {
    if (url) { return; }  /* served: the run's file is the store */
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
    count.textContent = n + " of " + spans.length + " judged items labelled" + (status ? " · " + status : "");
    button.disabled = n === 0;
  }
  function press(span, label) {
    span.querySelectorAll("button.label-btn").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-label") === label ? "true" : "false");
    });
  }
  spans.forEach(function (span) {
    var d = data(span), before = saved[keyOf(d)];
    if (!(before && before.item === d.item)) { before = d.saved; }  /* else the run's labels.jsonl */
    if (before) {  /* the same judged answer: this report's own label, restored */
      press(span, before.label);
      span.querySelector(".label-note").value = before.note || "";
    }
    span.querySelectorAll("button.label-btn").forEach(function (b) {
      b.addEventListener("click", function () {
        var again = b.getAttribute("aria-pressed") === "true";
        if (url) {  /* the run's file only grows: a label is changed by the other button, never taken back */
          if (!again) { press(span, b.getAttribute("data-label")); post(span); }
          return;
        }
        press(span, again ? null : b.getAttribute("data-label"));  /* a second click takes the label back */
        save();
        refresh();
      });
    });
    span.querySelector(".label-note").addEventListener("input", save);
    span.querySelector(".label-note").addEventListener("change", function () { if (url) { post(span); } });
  });
  button.addEventListener("click", function () {
    var lines = [];
    spans.forEach(function (span) {
      var label = labelOf(span);
      if (label) { lines.push(JSON.stringify(line(span, label))); }
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

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

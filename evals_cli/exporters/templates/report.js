(function () {
  "use strict";
  var root = document.documentElement;
  window.addEventListener("error", function (e) { root.setAttribute("data-js-error", String(e.message)); });
  var table = document.getElementById("samples");
  if (!table || !document.getElementById("filter")) {  /* a page without the filter bar (many models): no sorting */
    root.setAttribute("data-report-ready", "1");
    return;
  }
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

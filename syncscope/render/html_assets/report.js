// syncscope HTML report: sorting, filtering, the source view and the timeline. Report data is
// read from the JSON block and only ever written into the page as text (textContent), never as
// markup, so a path or source line holding HTML shows as that text.
"use strict";
(function () {
  performance.mark("syncscope-start");
  const D = JSON.parse(document.getElementById("syncscope-data").textContent);
  // keys the page leaves out where they hold their default (syncscope/render/html.py, _SITE_DEFAULTS)
  const DEFAULTS = { blocked_ns: null, blocked_ms: "", mean_ms: "", idle_ns: null, idle_ms: "", idle_count: null, allow_reason: null,
    apis: [], regions: [], ranks: "", stack: [], related: null, lint: null, lint_codes: null, x: null, stale: false, group: "in scope" };
  // a site comes as [path index, line, function, kind, source, count, {its other keys}] (html.py, _compact_site)
  function expandSites(rows) {
    const fields = D.site_fields, keys = Object.keys(DEFAULTS), none = {};
    return rows.map(function (row, i) {
      // every site gets its keys in one order, so the engine gives them all one shape
      const s = { i: i }, extra = row.length > fields.length ? row[fields.length] : none;
      for (let k = 0; k < fields.length; k++) s[fields[k]] = row[k];
      s.path = D.paths[s.path];
      for (const k of keys) s[k] = k in extra ? extra[k] : DEFAULTS[k];
      return s;
    });
  }
  const sites = expandSites(D.sites);
  const before = D.compare ? expandSites(D.compare.before_sites) : [];
  if (D.compare) D.compare.before_sites = before;
  const measured = sites.some(function (s) { return s.blocked_ns !== null; });

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fmtMs(ns) { return ns === null || ns === undefined ? "n/m" : (ns / 1e6).toFixed(3); }

  // ---- heat: per (path, line) of a report, blocked ns where measured, else events
  function heatMap(list) {
    const map = new Map();
    let max = 0;
    for (const s of list) {
      const key = s.path + "\u0000" + s.line;
      const cell = map.get(key) || { value: 0, count: 0, blocked: 0, sites: [] };
      cell.count += s.count;
      cell.blocked += s.blocked_ns || 0;
      cell.value = measured ? cell.blocked : cell.count;
      cell.sites.push(s);
      map.set(key, cell);
      if (cell.value > max) max = cell.value;
    }
    return { map: map, max: max };
  }
  const heats = { after: heatMap(sites), before: heatMap(before) };
  const lintLines = new Map();
  if (D.lint) {
    for (const f of D.lint.confirmed.concat(D.lint.static_only)) {
      const key = f.path + "\u0000" + f.line;
      if (!lintLines.has(key)) lintLines.set(key, []);
      lintLines.get(key).push(f);
    }
  }
  const oracle = new Map();
  for (const o of D.oracle_lines) oracle.set(o[0] + "\u0000" + o[1], o);

  function heatColor(t) { // pale yellow to red
    return "hsl(" + (55 - 55 * t).toFixed(1) + " " + (95 - 10 * t).toFixed(1) + "% " + (88 - 26 * t).toFixed(1) + "%)";
  }

  // ---- the source view
  const view = document.getElementById("source-view");
  function showExcerpt(x, currentLine, which) {
    const excerpt = x === null || x === undefined ? null : D.excerpts[x];
    if (!excerpt) return null;
    const heat = heats[which || "after"];
    const table = el("table", "excerpt");
    table.setAttribute("aria-label", "source of " + excerpt.function);
    const body = el("tbody");
    let previous = null, current = null;
    for (const pair of excerpt.lines) {
      const n = pair[0];
      if (previous !== null && n !== previous + 1) {
        const gap = el("tr", "gap"); const td = el("td", null, "\u22EF"); td.colSpan = 3; gap.appendChild(td); body.appendChild(gap);
      }
      previous = n;
      const key = excerpt.path + "\u0000" + n;
      const row = el("tr");
      row.dataset.line = n;
      const cell = heat.map.get(key);
      const heatTd = el("td", "heat");
      const code = el("td", "code-line", pair[1]);
      if (cell && heat.max > 0) {
        const t = Math.sqrt(cell.value / heat.max);
        row.classList.add("hot");
        code.style.setProperty("background-color", heatColor(t));
        heatTd.style.setProperty("background-color", heatColor(t));
        heatTd.textContent = measured ? fmtMs(cell.blocked) + " ms" : cell.count + "\u00D7";
        heatTd.title = cell.sites.map(function (s) { return s.kind + ": " + s.count + " event(s)" + (measured ? ", " + fmtMs(s.blocked_ns) + " ms" : ""); }).join("\n");
      }
      // badges in the gutter, where a long line cannot push them out of sight
      for (const f of lintLines.get(key) || []) { const b = el("span", "badge lint", f.code); b.title = f.message; heatTd.appendChild(b); }
      const verdict = oracle.get(key);
      if (verdict) heatTd.appendChild(el("span", "badge " + verdict[2], "oracle: " + verdict[2]));
      if (n === currentLine) { row.classList.add("current"); current = row; }
      row.appendChild(el("td", "ln", n)); row.appendChild(heatTd); row.appendChild(code);
      body.appendChild(row);
    }
    table.appendChild(body);
    return { table: table, current: current, excerpt: excerpt };
  }

  function legend() {
    const p = el("p", "muted");
    p.appendChild(document.createTextNode("heat: " + (measured ? "blocked time " : "events (blocked time not measured) ")));
    p.appendChild(el("span", "legend-scale"));
    return p;
  }

  function placeExcerpt(container, shown, missingText) {
    if (shown) {
      if (shown.excerpt.cut) container.appendChild(el("p", "warn", "Only the marked lines: the page's budget of source lines was spent."));
      container.appendChild(shown.table);
      if (shown.current) shown.current.scrollIntoView({ block: "center" });
    } else {
      container.appendChild(el("p", "warn", "The file is not readable where this page was made; the line the run recorded:"));
      container.appendChild(el("pre", null, missingText));
    }
  }

  function showSite(i, which) {
    const list = which === "before" ? before : sites;
    const s = list[i];
    if (!s) return;
    view.textContent = "";
    const head = el("div", "site-head");
    head.appendChild(el("span", "kind", s.kind));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("span", "loc", s.path + ":" + s.line));
    head.appendChild(el("p", null, "in " + s.function + (which === "before" ? "  (from the before report)" : "")));
    head.appendChild(el("p", null, s.count + " event(s)" + (s.blocked_ns !== null ? ", host blocked " + s.blocked_ms + " ms (mean " + s.mean_ms + " ms)" : "") +
      (s.idle_ns !== null ? ", GPU idle " + s.idle_ms + " ms after it" : "") + "; " + s.group + (s.allow_reason ? " (" + s.allow_reason + ")" : "")));
    if (s.apis.length) head.appendChild(el("p", "muted", "via " + s.apis.join(", ")));
    if (s.regions.length) head.appendChild(el("p", "muted", "regions: " + s.regions.join(", ")));
    if (s.ranks) head.appendChild(el("p", "muted", "processes: " + s.ranks));
    if (s.lint) head.appendChild(el("p", null, "lint: " + s.lint + (s.lint_codes ? " (" + s.lint_codes.join(", ") + ")" : "")));
    if (s.related) head.appendChild(el("p", null, "related: " + s.related.path + ":" + s.related.line + " in " + s.related.function));
    if (s.stale) head.appendChild(el("p", "warn", "The file changed since the run: the run recorded \u201C" + s.source + "\u201D here."));
    view.appendChild(head);
    view.appendChild(legend());
    const holder = el("div", "excerpt-holder");
    view.appendChild(holder);
    placeExcerpt(holder, showExcerpt(s.x, s.line, which), s.source);
    if (s.stack.length) {
      const details = el("details", "stack");
      details.appendChild(el("summary", null, "stack (" + s.stack.length + " frames, innermost first)"));
      const ol = el("ol");
      s.stack.forEach(function (f) {
        const li = el("li");
        const label = f.path + ":" + f.line + " in " + f.function;
        if (f.x !== null) {
          const b = el("button", null, label);
          b.type = "button";
          b.addEventListener("click", function () {
            holder.textContent = "";
            placeExcerpt(holder, showExcerpt(f.x, f.line, which), "");
          });
          li.appendChild(b);
        } else li.appendChild(el("span", null, label));
        ol.appendChild(li);
      });
      details.appendChild(ol);
      view.appendChild(details);
    }
  }

  function showLine(x, line) {
    view.textContent = "";
    const excerpt = D.excerpts[x];
    if (!excerpt) return;
    view.appendChild(el("div", "site-head", excerpt.path + ":" + line + " in " + excerpt.function));
    view.appendChild(legend());
    placeExcerpt(view, showExcerpt(x, line, "after"), "");
  }

  // ---- the sites table: sort and filter. The table holds at most `page` rows at a time (the
  // first ones of the current order and filter, more on request): a 5,000-site report then opens
  // and sorts as fast as a small one, since the browser lays out a few hundred rows, not all.
  const table = document.getElementById("sites");
  const tbody = table.tBodies[0];
  const moreButton = document.getElementById("more-sites");
  const page = Number(table.dataset.page) || 200;
  const columns = JSON.parse(table.dataset.columns);
  const haystack = sites.map(function (s) {
    return [s.path + ":" + s.line, s.function, s.source, s.kind, s.group, s.apis.join(" "), s.regions.join(" "), s.lint || "", (s.lint_codes || []).join(" ")].join("\n").toLowerCase();
  });
  const keys = {
    i: function (s) { return s.i; },
    count: function (s) { return s.count; },
    blocked: function (s) { return s.blocked_ns === null ? -1 : s.blocked_ns; },
    idle: function (s) { return s.idle_ns === null ? -1 : s.idle_ns; },
    kind: function (s) { return s.kind; },
    function: function (s) { return s.function; },
    group: function (s) { return s.group; },
  };
  let order = sites.map(function (s) { return s.i; });
  let matching = order;
  let limit = page;
  let selectedSite = null;
  const cells = {
    i: function (s) { return el("td", "num", s.i + 1); },
    kind: function (s) { const td = el("td"); td.appendChild(el("span", "kind", s.kind)); return td; },
    count: function (s) { return el("td", "num", s.count); },
    blocked: function (s) { return el("td", "num", s.blocked_ms || "n/m"); },
    idle: function (s) { return el("td", "num", s.idle_ms); },
    file: function (s) { return el("td", "loc", s.path + ":" + s.line); },
    function: function (s) { return el("td", null, s.function); },
    source: function (s) { const td = el("td", "src"); td.title = s.source; td.appendChild(el("code", null, s.source)); return td; },
    group: function (s) { return el("td", null, s.group); },
    lint: function (s) {
      const td = el("td");
      if (s.lint) td.appendChild(el("span", "state " + (s.lint === "confirmed" ? "confirmed" : "runtime"), s.lint + (s.lint_codes ? " " + s.lint_codes.join(", ") : "")));
      return td;
    },
    processes: function (s) { return el("td", null, s.ranks); },
  };
  function rowFor(s) {
    const tr = el("tr", s.group.replace(/ /g, "-"));
    tr.dataset.i = s.i;
    tr.tabIndex = 0;
    for (const c of columns) tr.appendChild(cells[c](s));
    if (s.i === selectedSite) tr.classList.add("selected");
    return tr;
  }
  function renderRows() {
    const fragment = document.createDocumentFragment();
    const shown = Math.min(limit, matching.length);
    for (let n = 0; n < shown; n++) fragment.appendChild(rowFor(sites[matching[n]]));
    tbody.textContent = "";
    tbody.appendChild(fragment);
    renderCount(shown);
  }
  function renderCount(shown) {
    const total = sites.length;
    shownCount.textContent = (matching.length === total ? total + " sites" : matching.length + " of " + total + " sites match") +
      (shown < matching.length ? "; the first " + shown + " are listed" : "");
    moreButton.hidden = shown >= matching.length;
    moreButton.textContent = "show " + Math.min(page, matching.length - shown) + " more";
  }
  function compareBy(name, dir) {
    if (name === "file") {
      return function (a, b) {
        const A = sites[a], B = sites[b];
        return dir * (A.path < B.path ? -1 : A.path > B.path ? 1 : A.line - B.line) || a - b;
      };
    }
    const key = keys[name];
    return function (a, b) {
      const x = key(sites[a]), y = key(sites[b]);
      return dir * (x < y ? -1 : x > y ? 1 : 0) || a - b;
    };
  }
  function sortBy(name, th) {
    const current = th.getAttribute("aria-sort");
    // numbers start largest first, text A to Z; a second click turns it around
    const numeric = name === "count" || name === "blocked" || name === "idle";
    const dir = current ? (current === "ascending" ? -1 : 1) : (numeric ? -1 : 1);
    for (const other of table.tHead.querySelectorAll("th")) other.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    order.sort(compareBy(name, dir));
    applyFilter();
  }
  for (const button of table.tHead.querySelectorAll("button[data-sort]")) {
    button.addEventListener("click", function () { sortBy(button.dataset.sort, button.parentElement); });
  }

  const text = document.getElementById("filter-text");
  const kind = document.getElementById("filter-kind");
  const group = document.getElementById("filter-group");
  const lint = document.getElementById("filter-lint");
  const shownCount = document.getElementById("shown-count");
  function applyFilter() {
    const words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
    const k = kind.value, g = group.value, l = lint ? lint.value : "";
    matching = order.filter(function (i) {
      const s = sites[i];
      return (!k || s.kind === k) && (!g || s.group === g) && (!l || s.lint === l) &&
        words.every(function (w) { return haystack[i].indexOf(w) >= 0; });
    });
    limit = page;
    renderRows();
  }
  for (const control of [text, kind, group, lint]) if (control) control.addEventListener("input", applyFilter);
  moreButton.addEventListener("click", function () { limit += page; renderRows(); });

  function rowOf(i) { return tbody.querySelector('tr[data-i="' + Number(i) + '"]'); }
  function reveal(i) {
    // a site outside the rows listed (filtered out, or past the first page) is listed first
    if (!rowOf(i)) {
      text.value = ""; kind.value = ""; group.value = ""; if (lint) lint.value = "";
      order = [i].concat(order.filter(function (n) { return n !== i; }));
      applyFilter();
    }
    const row = rowOf(i);
    if (row) row.scrollIntoView({ block: "nearest" });
  }
  function select(i, which) {
    for (const row of tbody.querySelectorAll("tr.selected")) row.classList.remove("selected");
    selectedSite = which === "before" ? null : i;
    const row = which === "before" ? null : rowOf(i);
    if (row) row.classList.add("selected");
    showSite(i, which);
  }
  function onActivate(container, handler) {
    container.addEventListener("click", function (e) {
      const tr = e.target.closest("tbody tr");
      if (tr && container.contains(tr)) handler(tr);
    });
    container.addEventListener("keydown", function (e) {
      const tr = e.target.closest("tbody tr");
      if (tr && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); handler(tr); }
    });
  }
  onActivate(tbody, function (tr) { select(Number(tr.dataset.i), "after"); });
  for (const other of document.querySelectorAll("#compare table.clickable, #lint table.clickable")) {
    onActivate(other, function (tr) {
      if (tr.dataset.site !== undefined) { reveal(Number(tr.dataset.site)); select(Number(tr.dataset.site), "after"); }
      else if (tr.dataset.before !== undefined) select(Number(tr.dataset.before), "before");
      else if (tr.dataset.excerpt !== undefined) showLine(Number(tr.dataset.excerpt), Number(tr.dataset.line));
      document.getElementById("source-panel").scrollIntoView({ block: "nearest" });
    });
  }

  // ---- the timeline: one lane per thread, region or process; a mark per event
  const T = D.timeline;
  const canvas = document.getElementById("timeline-canvas");
  const labels = document.getElementById("lane-labels");
  const tooltip = document.getElementById("tooltip");
  const laneMode = document.getElementById("lane-mode");
  const LANE = 24, PAD = 12;
  const palette = ["#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7480", "#bc4c00", "#57606a", "#116329"];
  const kinds = Array.from(new Set(sites.map(function (s) { return s.kind; }))).sort();
  const colorIndex = new Map(kinds.map(function (k, n) { return [k, n]; }));
  let maxBlocked = 0, t0 = Infinity, t1 = -Infinity;
  for (const r of T.rows) {
    if (r[2] !== null && r[2] > maxBlocked) maxBlocked = r[2];
    if (r[1] < t0) t0 = r[1];
    if (r[1] > t1) t1 = r[1];
  }
  if (!(t1 > t0)) { t0 = (t0 === Infinity ? 0 : t0) - 1; t1 = t0 + 2; }
  let lanes = [];
  function laneKey(r) {
    if (laneMode.value === "region") return "r" + r[5];
    if (laneMode.value === "process") return "p" + r[3];
    return "t" + r[4];
  }
  function laneName(key) {
    const n = Number(key.slice(1));
    if (key[0] === "r") return T.regions[n];
    if (key[0] === "p") return T.processes[n];
    const thread = T.threads[n];
    return T.processes.length > 1 ? T.processes[thread[0]] + " / " + thread[1] : thread[1];
  }
  function radius(r) { return r[2] === null || maxBlocked === 0 ? 3 : 2.5 + 8 * Math.sqrt(r[2] / maxBlocked); }
  function layout() {
    const byKey = new Map();
    for (let n = 0; n < T.rows.length; n++) {
      const key = laneKey(T.rows[n]);
      if (!byKey.has(key)) byKey.set(key, []);
      byKey.get(key).push(n);
    }
    lanes = Array.from(byKey.keys()).sort(function (a, b) { return Number(a.slice(1)) - Number(b.slice(1)); }).map(function (key) {
      const events = byKey.get(key).sort(function (a, b) { return T.rows[a][1] - T.rows[b][1]; });
      return { key: key, name: laneName(key), events: events };
    });
    labels.textContent = "";
    for (const lane of lanes) { const d = el("div", "lane", lane.name); d.title = lane.name; labels.appendChild(d); }
    draw();
  }
  function xOf(ms, width) { return PAD + (ms - t0) / (t1 - t0) * (width - 2 * PAD); }
  function draw() {
    const width = canvas.clientWidth || 800;
    const height = Math.max(1, lanes.length) * LANE;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    canvas.style.setProperty("height", height + "px");
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    lanes.forEach(function (lane, n) {
      g.fillStyle = n % 2 ? "#f6f8fa" : "#ffffff";
      g.fillRect(0, n * LANE, width, LANE);
      const y = n * LANE + LANE / 2;
      // Marks that would land on one another (same colour, half-pixel place and size) are drawn
      // once: a long run has thousands per pixel, and painting each one is most of a big page's
      // opening time. The hover still names every event (eventAt).
      const drawn = new Set();
      for (const e of lane.events) {
        const r = T.rows[e];
        const color = colorIndex.get(sites[r[0]].kind);
        const x = xOf(r[1], width), size = Math.min(radius(r), LANE / 2 - 1);
        const key = (color * 65536 + Math.round(x * 2)) * 64 + Math.round(size * 2);
        if (drawn.has(key)) continue;
        drawn.add(key);
        g.beginPath();
        g.fillStyle = palette[color % palette.length];
        g.globalAlpha = 0.75;
        g.arc(x, y, size, 0, 2 * Math.PI);
        g.fill();
      }
    });
    g.globalAlpha = 1;
    if (!lanes.length) { g.fillStyle = "#656d76"; g.font = "12px system-ui, sans-serif"; g.fillText("no events", PAD, 16); }
  }
  function eventAt(clientX, clientY) {
    const box = canvas.getBoundingClientRect();
    const x = clientX - box.left, n = Math.floor((clientY - box.top) / LANE);
    const lane = lanes[n];
    if (!lane) return null;
    const width = canvas.clientWidth;
    let lo = 0, hi = lane.events.length - 1;
    const target = t0 + (x - PAD) / (width - 2 * PAD) * (t1 - t0);
    while (lo < hi) { const mid = (lo + hi) >> 1; if (T.rows[lane.events[mid]][1] < target) lo = mid + 1; else hi = mid; }
    // every mark within reach of the pointer: the nearest is named, the others counted
    let best = null, bestDistance = Infinity, near = 0;
    const reach = 6;
    function visit(k) {
      const d = Math.abs(xOf(T.rows[lane.events[k]][1], width) - x);
      if (d > reach) return false;
      near++;
      if (d < bestDistance) { best = lane.events[k]; bestDistance = d; }
      return true;
    }
    for (let k = lo; k < lane.events.length && visit(k); k++);
    for (let k = lo - 1; k >= 0 && visit(k); k--);
    return best === null ? null : { event: best, lane: lane, near: near };
  }
  canvas.addEventListener("mousemove", function (e) {
    const hit = eventAt(e.clientX, e.clientY);
    if (!hit) { tooltip.hidden = true; return; }
    const r = T.rows[hit.event], s = sites[r[0]];
    tooltip.textContent = s.kind + " at " + s.path + ":" + s.line + " in " + s.function + "\n" + s.source + "\n" +
      r[1].toFixed(3) + " ms" + (r[2] !== null ? ", blocked " + fmtMs(r[2]) + " ms" : "") + "; " + hit.lane.name +
      (hit.near > 1 ? "\n(" + (hit.near - 1) + " more event(s) under the pointer)" : "");
    const box = document.getElementById("timeline").getBoundingClientRect();
    tooltip.style.setProperty("left", Math.min(e.clientX - box.left + 12, box.width - 300) + "px");
    tooltip.style.setProperty("top", (e.clientY - box.top + 14) + "px");
    tooltip.hidden = false;
  });
  canvas.addEventListener("mouseleave", function () { tooltip.hidden = true; });
  canvas.addEventListener("click", function (e) {
    const hit = eventAt(e.clientX, e.clientY);
    if (hit) { const i = T.rows[hit.event][0]; reveal(i); select(i, "after"); }
  });
  laneMode.addEventListener("change", layout);
  window.addEventListener("resize", draw);
  const legendBox = document.getElementById("timeline-legend");
  for (const k of kinds) { const span = el("span"); const dot = el("span", "dot"); dot.style.setProperty("background", palette[colorIndex.get(k) % palette.length]); span.appendChild(dot); span.appendChild(document.createTextNode(k)); legendBox.appendChild(span); }
  layout();
  if (tbody.rows.length === Math.min(page, sites.length)) renderCount(Math.min(page, sites.length)); // the page's own rows are these
  else applyFilter();

  performance.mark("syncscope-ready");

  // Where an event's mark is drawn, in page coordinates (for tests and for linking to an event).
  window.syncscopeReport = {
    markPosition: function (n) {
      for (let l = 0; l < lanes.length; l++) {
        if (lanes[l].events.indexOf(n) >= 0) {
          const box = canvas.getBoundingClientRect();
          return { x: box.left + xOf(T.rows[n][1], canvas.clientWidth), y: box.top + l * LANE + LANE / 2 };
        }
      }
      return null;
    },
  };
})();

/* tutormetrics report renderer. Hand-written, no dependencies, no network.
   Every text that comes from the data is inserted with textContent / createTextNode, never as markup. */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  // Every object of the data has no prototype, and every lookup table below is dict(): a criterion, metric or id
  // named "constructor", "toString" or "__proto__" is a key like any other, never an inherited property.
  function dict() { return Object.create(null); }
  var D = JSON.parse(document.getElementById("tm-data").textContent, function (k, v) {
    return v !== null && typeof v === "object" && !Array.isArray(v) ? Object.assign(dict(), v) : v;
  });
  var main = document.getElementById("main");
  var nav = document.getElementById("nav");
  var tip = document.getElementById("tip");

  /* ---------- small helpers ---------- */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function sv(tag, attrs) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    for (var k in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] === null || attrs[k] === undefined) continue;
      if (k === "text") node.textContent = String(attrs[k]);
      else if (k === "cls") node.setAttribute("class", attrs[k]);
      else node.setAttribute(k, String(attrs[k]));
    }
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function isNum(x) { return typeof x === "number" && isFinite(x); }
  function fmt(x, digits) {
    if (x === null || x === undefined || x === "") return "—";
    if (typeof x === "boolean") return x ? "true" : "false";
    if (!isNum(x)) return String(x);
    if (Number.isInteger(x)) return String(x);
    var d = digits === undefined ? 3 : digits;
    var a = Math.abs(x);
    if (a !== 0 && (a < 0.001 || a >= 1e6)) return x.toExponential(2);
    return x.toFixed(d);
  }
  function fmtP(p) {
    if (!isNum(p)) return "—";
    if (p < 0.0001) return "<.0001";
    return p.toFixed(4).replace(/^0/, "");
  }
  function fmtR(x) {
    if (!isNum(x)) return "—";
    var s = Math.abs(x).toFixed(2).replace(/^0/, "");
    if (s === "1.00") s = "1.0";
    return (x < 0 ? "−" : "") + s;
  }
  function col(table, name) { return table.columns.indexOf(name); }
  function getter(table, name) {
    var i = col(table, name);
    return function (row) { return i < 0 ? null : row[i]; };
  }
  function unique(list) { var seen = dict(), out = []; list.forEach(function (x) { if (!seen[x]) { seen[x] = 1; out.push(x); } }); return out; }
  function section(id, title, lead) {
    var s = el("section", { cls: "card", id: id, "aria-labelledby": id + "-h" },
      el("h2", { id: id + "-h", text: title }), lead ? el("p", { cls: "lead", text: lead }) : null);
    main.appendChild(s);
    nav.appendChild(el("li", null, el("a", { href: "#" + id, text: title })));
    return s;
  }
  function showTip(html, x, y) {
    tip.textContent = "";
    add(tip, html);
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = Math.min(window.innerWidth - w - 8, x + 14), top = y + 16;
    if (top + h > window.innerHeight - 8) top = Math.max(8, y - h - 12);
    tip.style.left = Math.max(8, left) + "px";
    tip.style.top = top + "px";
  }
  function hideTip() { tip.hidden = true; }
  function kpis(items) {
    return el("ul", { cls: "kpis" }, items.filter(Boolean).map(function (it) {
      return el("li", null, el("b", { text: it[0] }), el("span", { text: it[1] }));
    }));
  }
  function dl(obj, keys) {
    var d = el("dl", { cls: "kv" });
    (keys || Object.keys(obj)).forEach(function (k) {
      var v = obj[k];
      if (v === undefined) return;
      if (v !== null && typeof v === "object") v = JSON.stringify(v);
      add(d, [el("dt", { text: k }), el("dd", { text: v === null ? "—" : String(v) })]);
    });
    return d;
  }

  /* ---------- colour (diverging, centred on 0) ---------- */
  var STOPS = [[-1, [5, 48, 97]], [-0.75, [33, 102, 172]], [-0.5, [67, 147, 195]], [-0.25, [146, 197, 222]], [0, [247, 247, 247]],
    [0.25, [244, 165, 130]], [0.5, [214, 96, 77]], [0.75, [178, 24, 43]], [1, [103, 0, 31]]];
  function colour(v, vmax) {
    var t = Math.max(-1, Math.min(1, v / vmax));
    for (var i = 1; i < STOPS.length; i++) {
      if (t <= STOPS[i][0]) {
        var a = STOPS[i - 1], b = STOPS[i], f = (t - a[0]) / (b[0] - a[0]);
        var c = [0, 1, 2].map(function (k) { return Math.round(a[1][k] + f * (b[1][k] - a[1][k])); });
        return c;
      }
    }
    return STOPS[STOPS.length - 1][1];
  }
  function rgb(c) { return "rgb(" + c.join(",") + ")"; }
  function dark(c) { return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] < 140; }

  /* ---------- generic sortable table ---------- */
  var CI_PAIRS = [["rho", "ci_low", "ci_high"], ["mean", "ci_low", "ci_high"], ["r_rb", "ci_low", "ci_high"],
    ["estimate", "lower", "upper"], ["theta", "theta_low", "theta_high"]];
  function columnSpecs(table, intervals) {
    var cols = table.columns, used = dict(), specs = [];
    var pairs = dict();
    (intervals || []).forEach(function (p) { if (col(table, p[0]) >= 0 && col(table, p[1]) >= 0 && col(table, p[2]) >= 0) pairs[p[0]] = [p[1], p[2]]; });
    cols.forEach(function (c) {
      if (!pairs[c] && col(table, c + "_ci_low") >= 0 && col(table, c + "_ci_high") >= 0) pairs[c] = [c + "_ci_low", c + "_ci_high"];
    });
    CI_PAIRS.forEach(function (p) { if (col(table, p[0]) >= 0 && col(table, p[1]) >= 0 && col(table, p[2]) >= 0 && !pairs[p[0]]) pairs[p[0]] = [p[1], p[2]]; });
    var claimed = dict();
    Object.keys(pairs).forEach(function (k) { claimed[pairs[k][0]] = claimed[pairs[k][1]] = 1; });
    cols.forEach(function (c) {
      if (claimed[c] || used[c]) return;
      var g = getter(table, c);
      var numeric = table.rows.some(function (r) { return isNum(g(r)); });
      if (pairs[c]) {
        var lo = getter(table, pairs[c][0]), hi = getter(table, pairs[c][1]);
        specs.push({ label: c + " [95% CI]", name: c, num: true, key: g, show: function (r) {
          var v = g(r);
          if (!isNum(v)) return "—";
          return fmt(v) + (isNum(lo(r)) ? " [" + fmt(lo(r)) + ", " + fmt(hi(r)) + "]" : "");
        } });
      } else if (/^p(_adj)?$/.test(c)) {
        specs.push({ label: c, name: c, num: true, key: g, show: function (r) { return fmtP(g(r)); } });
      } else {
        specs.push({ label: c, name: c, num: numeric, key: g, show: function (r) { return fmt(g(r)); } });
      }
      used[c] = 1;
    });
    return specs;
  }
  function sortRows(rows, key, dir) {
    return rows.slice().sort(function (a, b) {
      var x = key(a), y = key(b);
      var xn = x === null || x === undefined || x === "", yn = y === null || y === undefined || y === "";
      if (xn || yn) return xn === yn ? 0 : (xn ? 1 : -1);
      if (isNum(x) && isNum(y)) return dir * (x - y);
      return dir * String(x).localeCompare(String(y), undefined, { numeric: true });
    });
  }
  function sortableHeader(th, label, onSort) {
    var b = el("button", { type: "button", "aria-label": "Sort by " + label }, el("span", { text: label }), el("span", { cls: "arrow", "aria-hidden": "true" }));
    b.addEventListener("click", onSort);
    th.appendChild(b);
    th.setAttribute("aria-sort", "none");
  }
  /* opts: caption; intervals [[estimate, low, high]]; highlight [columns shown emphasised]; flagged [row indexes marked ⚑] */
  function dataTable(table, opts) {
    opts = opts || dict();
    var specs = columnSpecs(table, opts.intervals), hl = dict();
    (opts.highlight || []).forEach(function (c) { hl[c] = 1; });
    if (opts.highlight && opts.highlight.length) {  // the leading text columns (what a row is), then the highlighted ones, then the rest
      var lead = 0;
      while (lead < specs.length && !specs[lead].num && !hl[specs[lead].name]) lead++;
      var first = specs.slice(lead).filter(function (s) { return hl[s.name]; });
      first.sort(function (a, b) { return opts.highlight.indexOf(a.name) - opts.highlight.indexOf(b.name); });
      specs = specs.slice(0, lead).concat(first, specs.slice(lead).filter(function (s) { return !hl[s.name]; }));
    }
    var marked = new Set((opts.flagged || []).map(function (i) { return table.rows[i]; }));
    if (opts.flagged) specs.unshift({ label: "⚑", name: "flagged", key: function (r) { return marked.has(r) ? 1 : 0; }, show: function (r) { return marked.has(r) ? "⚑ flagged" : ""; } });
    var box = el("div", { cls: "tablebox", tabindex: "0", role: "region", "aria-label": opts.caption || "table" });
    var t = el("table", { cls: "t" });
    if (opts.caption) t.appendChild(el("caption", { cls: "hidden", text: opts.caption }));
    var head = el("tr"), body = el("tbody");
    var state = { i: -1, dir: 1 }, rows = table.rows, filter = null;
    function draw() {
      body.textContent = "";
      var list = state.i >= 0 ? sortRows(rows, specs[state.i].key, state.dir) : rows;
      var frag = document.createDocumentFragment();
      list.forEach(function (r) {
        if (filter && !filter(r)) return;
        frag.appendChild(el("tr", { cls: marked.has(r) ? "flag" : null }, specs.map(function (s) {
          var v = s.show(r), td = el("td", { cls: [s.num ? "num" : "", hl[s.name] ? "hl" : ""].join(" ").trim() || null, text: v });
          if (v === "—") td.className += " na";
          if (s.label === "stars" && v !== "—") td.className += " stars";
          return td;
        })));
      });
      body.appendChild(frag);
    }
    specs.forEach(function (s, i) {
      var th = el("th", { scope: "col", cls: [s.num ? "num" : "", hl[s.name] ? "hl" : ""].join(" ").trim() || null });
      sortableHeader(th, s.label, function () {
        state.dir = state.i === i ? -state.dir : 1; state.i = i;
        Array.prototype.forEach.call(head.children, function (h) { h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        draw();
      });
      head.appendChild(th);
    });
    t.appendChild(el("thead", null, head));
    t.appendChild(body);
    box.appendChild(t);
    draw();
    box.setFilter = function (f) { filter = f; draw(); };
    return box;
  }

  /* ---------- forest plot: estimates with intervals, one row per label ---------- */
  var SHAPES = ["circle", "square", "diamond", "triangle"];
  function marker(shape, x, y, fill) {
    var s = 4.5;
    if (shape === "square") return sv("rect", { x: x - s, y: y - s, width: 2 * s, height: 2 * s, fill: fill });
    if (shape === "diamond") return sv("path", { d: "M" + x + " " + (y - s - 1) + "L" + (x + s + 1) + " " + y + "L" + x + " " + (y + s + 1) + "L" + (x - s - 1) + " " + y + "Z", fill: fill });
    if (shape === "triangle") return sv("path", { d: "M" + x + " " + (y - s - 1) + "L" + (x + s + 1) + " " + (y + s) + "L" + (x - s - 1) + " " + (y + s) + "Z", fill: fill });
    return sv("circle", { cx: x, cy: y, r: s, fill: fill });
  }
  var SERIES_COLOURS = ["#1f5fa8", "#c2410c", "#15803d", "#7c3aed"];
  function forest(items, seriesNames, opts) {
    opts = opts || dict();
    var vals = [];
    items.forEach(function (it) { it.series.forEach(function (s) { [s.est, s.lo, s.hi].forEach(function (v) { if (isNum(v)) vals.push(v); }); }); });
    if (!vals.length) return el("p", { cls: "na", text: "No estimates to plot." });
    var lo = opts.min !== undefined ? Math.min(opts.min, Math.min.apply(null, vals)) : Math.min.apply(null, vals);
    var hi = opts.max !== undefined ? Math.max(opts.max, Math.max.apply(null, vals)) : Math.max.apply(null, vals);
    if (hi - lo < 1e-9) { lo -= 1; hi += 1; }
    var pad = (hi - lo) * 0.05; lo -= pad; hi += pad;
    var labelW = Math.min(260, 16 + 7 * Math.max.apply(null, items.map(function (it) { return it.label.length; })));
    var W = 720, plotW = W - labelW - 20, rowH = 14 + 12 * seriesNames.length, H = items.length * rowH + 56;
    var x = function (v) { return labelW + (v - lo) / (hi - lo) * plotW; };
    var g = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": opts.title || "estimates with intervals" });
    add(g, sv("title", { text: opts.title || "estimates with intervals" }));
    var ticks = niceTicks(lo, hi, 6);
    ticks.forEach(function (t) {
      add(g, sv("line", { x1: x(t), x2: x(t), y1: 4, y2: H - 34, stroke: t === 0 ? "#6b7280" : "#e5e7eb", "stroke-width": t === 0 ? 1.2 : 1 }));
      add(g, sv("text", { x: x(t), y: H - 20, "text-anchor": "middle", "font-size": 11, fill: "#4b5563", text: fmtTick(t) }));
    });
    items.forEach(function (it, i) {
      var y0 = 6 + i * rowH;
      add(g, sv("text", { x: labelW - 8, y: y0 + rowH / 2 + 3, "text-anchor": "end", "font-size": 12, fill: "#1d2330", text: it.label }));
      it.series.forEach(function (s, k) {
        if (!isNum(s.est)) return;
        var y = y0 + 10 + k * 12, c = SERIES_COLOURS[k % 4];
        var grp = sv("g", { tabindex: "0", role: "img", "aria-label": it.label + ", " + seriesNames[k] + ": " + fmt(s.est) + (isNum(s.lo) ? " [" + fmt(s.lo) + ", " + fmt(s.hi) + "]" : "") });
        if (isNum(s.lo) && isNum(s.hi)) add(grp, sv("line", { x1: x(s.lo), x2: x(s.hi), y1: y, y2: y, stroke: c, "stroke-width": 2 }));
        add(grp, marker(SHAPES[k % 4], x(s.est), y, c));
        add(grp, sv("title", { text: grp.getAttribute("aria-label") }));
        add(g, grp);
      });
    });
    if (opts.axis) add(g, sv("text", { x: labelW + plotW / 2, y: H - 5, "text-anchor": "middle", "font-size": 11, fill: "#4b5563", text: opts.axis }));
    var wrap = el("div", { cls: "fig" }, g);
    if (seriesNames.length > 1) {
      var leg = el("p", { cls: "legend" });
      seriesNames.forEach(function (n, k) {
        var s = sv("svg", { width: 14, height: 12, "aria-hidden": "true" }, marker(SHAPES[k % 4], 7, 6, SERIES_COLOURS[k % 4]));
        add(leg, [s, " " + n + "   "]);
      });
      wrap.appendChild(leg);
    }
    return wrap;
  }
  function niceTicks(lo, hi, n) {
    var span = hi - lo, step = Math.pow(10, Math.floor(Math.log10(span / n)));
    [1, 2, 2.5, 5, 10].some(function (m) { if (span / (step * m) <= n) { step *= m; return true; } return false; });
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(Math.abs(t) < 1e-12 ? 0 : +t.toFixed(10));
    return out;
  }
  function fmtTick(t) { return Math.abs(t) >= 10 || Number.isInteger(t) ? String(t).replace("-", "−") : String(+t.toFixed(2)).replace("-", "−"); }

  /* ---------- sections ---------- */
  var run = D.run || dict(), man = D.manifest || dict(), EX = D.exchanges || null, CV = D.conversations || null;
  var corrs = D.correlations || [];
  var nEx = EX ? EX.ids.length : (man.n_rows || null);

  function provenance() {
    var s = section("provenance", "Study and provenance", "Where the numbers come from: versions, encoder, options and counts, from run.json and the metrics manifest.");
    var main0 = corrs[0];
    var nSig = 0, nCells = 0, targets = [], metrics = [];
    if (main0) {
      var pa = getter(main0.table, "p_adj"), tg = getter(main0.table, "target"), mg = getter(main0.table, "metric");
      main0.table.rows.forEach(function (r) { nCells++; if (isNum(pa(r)) && pa(r) < 0.05) nSig++; targets.push(tg(r)); metrics.push(mg(r)); });
      targets = unique(targets); metrics = unique(metrics);
    }
    var theta = run.theta || dict();
    var perConv = run.level === "conversation", unit = D.dialogues || run.level ? "tutor turns" : "exchanges";
    s.appendChild(kpis([
      perConv && isNum(run.n_conversations) ? [String(run.n_conversations), "conversations validated"] : null,
      nEx !== null ? [String(nEx), unit] : null,
      metrics.length ? [String(metrics.length), "metrics"] : null,
      targets.length ? [String(targets.length), "targets"] : null,
      nCells ? [nSig + " / " + nCells, "cells with p_adj < .05"] : null,
      isNum(theta.reliability) ? [theta.reliability.toFixed(3), "θ EAP reliability"] : null,
      CV && !perConv ? [String(CV.ids.length), "conversations"] : null
    ]));
    var sub = document.getElementById("subtitle");
    sub.textContent = [perConv && isNum(run.n_conversations) ? run.n_conversations + " conversations (validated per conversation)" : null,
      nEx !== null ? nEx + " " + unit : null, metrics.length ? metrics.length + " metrics" : null,
      targets.length ? targets.length + " targets" : null, run.tutormetrics ? "tutormetrics " + run.tutormetrics : (man.tutormetrics ? "tutormetrics " + man.tutormetrics : null)]
      .filter(Boolean).join(" · ");
    (D.notes || []).forEach(function (n) { s.appendChild(el("p", { cls: "note", text: n })); });
    (man.warnings || []).forEach(function (n) { s.appendChild(el("p", { cls: "note", text: "Scoring warning: " + n })); });
    var grid = el("div", { cls: "cols" });
    var enc = man.encoder || dict(), vers = Object.assign({ tutormetrics: run.tutormetrics || man.tutormetrics, python: man.python, polars: man.polars, numpy: man.numpy }, enc.versions || dict());
    var readab = (man.metrics || dict()).readability || dict();
    if (readab.syllable_backend) vers["syllable backend"] = readab.syllable_backend;
    Object.keys(vers).forEach(function (k) { if (vers[k] === undefined) delete vers[k]; });
    grid.appendChild(el("div", null, el("h3", { text: "Versions" }), dl(vers)));
    if (man.encoder) grid.appendChild(el("div", null, el("h3", { text: "Encoder" }), dl(enc, ["model_name_or_path", "fingerprint", "architecture", "n_layers", "hidden_size", "max_seq_length", "long_text", "pooling", "device", "dtype", "batch_size"])));
    var inputs = { exchanges: run.exchanges || man.input, ratings: run.ratings, "θ": theta.source, "metrics file": D.metrics_file };
    Object.keys(inputs).forEach(function (k) { if (!inputs[k]) delete inputs[k]; });
    if (theta.source === "mfrm") inputs["θ converged"] = String(theta.converged);
    grid.appendChild(el("div", null, el("h3", { text: "Inputs" }), dl(inputs)));
    var counts = Object.assign({}, man.stats || dict());
    delete counts.nan_counts; delete counts.nan_reasons;  // shown as a table below
    if (man.n_rows !== undefined) counts.n_rows = man.n_rows;
    if (man.dropped_duplicates !== undefined) counts.dropped_duplicates = man.dropped_duplicates;
    if (man.generated_ids !== undefined) counts.generated_ids = man.generated_ids;
    if (Object.keys(counts).length) grid.appendChild(el("div", null, el("h3", { text: "Counts" }), dl(counts)));
    s.appendChild(grid);
    if (D.nan_table) s.appendChild(el("div", null, el("h3", { text: "Undefined (NaN) metric values" }), dataTable(D.nan_table, { caption: "NaN values per metric column" })));
    if (run.join) s.appendChild(el("div", null, el("h3", { text: "Join" }), el("pre", { cls: "lead", text: run.join })));
    var more = el("details", { cls: "more" }, el("summary", { text: "All options and metric parameters" }));
    if (run.score_options || man.options) more.appendChild(el("div", null, el("h3", { text: "Scoring options" }), dl(run.score_options || man.options)));
    if (run.validate_options) more.appendChild(el("div", null, el("h3", { text: "Validation options" }), dl(run.validate_options)));
    if (man.metrics) more.appendChild(el("div", null, el("h3", { text: "Metric families" }), dl(man.metrics)));
    if (D.columns && D.columns.length) more.appendChild(el("div", null, el("h3", { text: "Metric columns" }), dataTable({
      columns: ["column", "family", "label", "higher_is_better", "level", "alias_of"],
      rows: D.columns.map(function (d) { return [d.name, d.family, d.family_label, d.higher_is_better === null ? null : String(d.higher_is_better), d.level, d.alias_of]; })
    }, { caption: "metric columns from the manifest" })));
    s.appendChild(more);
  }

  function heatmap() {
    if (!corrs.length) return;
    var s = section("heatmap", "Metrics × targets: Spearman ρ",
      "Each cell is Spearman's ρ between a metric and a rubric criterion or θ. Stars: " + (D.star_legend || "* p_adj < .05, ** p_adj < .01, *** p_adj < .001.") + " Hover or focus a cell (arrow keys move) for ρ, its confidence interval, n, p, p_adj and any reason it is undefined.");
    var controls = el("div", { cls: "controls" });
    var which = 0;
    var families = dict();
    function famOf(m) { return (D.families || dict())[m] || (EX && EX.families && EX.families[m]) || "other"; }
    var ALIAS = D.aliases || dict();
    corrs.forEach(function (c) { var mg = getter(c.table, "metric"); c.table.rows.forEach(function (r) { families[famOf(mg(r))] = 1; }); });
    var famSel = el("select", { id: "hm-family" }, el("option", { value: "", text: "all families" }), Object.keys(families).map(function (f) { return el("option", { value: f, text: f }); }));
    controls.appendChild(el("label", { "for": "hm-family" }, "Family", famSel));
    var allTargets = [];
    corrs.forEach(function (c) { var tg = getter(c.table, "target"); c.table.rows.forEach(function (r) { allTargets.push(tg(r)); }); });
    allTargets = unique(allTargets);
    var tgSel = el("select", { id: "hm-target" }, el("option", { value: "", text: "all targets" }), allTargets.map(function (t) { return el("option", { value: t, text: t }); }));
    controls.appendChild(el("label", { "for": "hm-target" }, "Target", tgSel));
    var seg = null;
    if (corrs.length > 1) {
      seg = el("span", { cls: "seg", role: "group", "aria-label": "Correlation table" });
      corrs.forEach(function (c, i) {
        var b = el("button", { type: "button", "aria-pressed": i === 0 ? "true" : "false", text: c.control ? "controlled for " + c.control : (i === 0 ? "raw" : c.file) });
        b.addEventListener("click", function () { which = i; Array.prototype.forEach.call(seg.children, function (x, j) { x.setAttribute("aria-pressed", j === i ? "true" : "false"); }); draw(); });
        seg.appendChild(b);
      });
      controls.appendChild(seg);
    }
    s.appendChild(controls);
    var fig = el("div", { cls: "fig hm" });
    s.appendChild(fig);
    var legend = el("div", { cls: "legend" });
    s.appendChild(legend);
    var vmax = D.rho_limit || 1;  // the colour scale of the PNG heatmap too (validity.heatmap.RHO_LIMIT)
    famSel.addEventListener("change", draw);
    tgSel.addEventListener("change", draw);
    function draw() {
      var c = corrs[which], T = c.table;
      var G = {}; ["metric", "target", "n", "rho", "ci_low", "ci_high", "p", "p_adj", "stars", "reason", "adjust"].forEach(function (k) { G[k] = getter(T, k); });
      var cells = dict(), metrics = [], targets = [], inTable = dict();
      T.rows.forEach(function (r) { inTable[G.metric(r)] = 1; });
      var aliasesOf = dict();
      T.rows.forEach(function (r) {
        var m = G.metric(r), t = G.target(r);
        if (ALIAS[m] && inTable[ALIAS[m]]) { aliasesOf[ALIAS[m]] = unique((aliasesOf[ALIAS[m]] || []).concat([m])); return; }  // one row per quantity
        if (famSel.value && famOf(m) !== famSel.value) return;
        if (tgSel.value && t !== tgSel.value) return;
        metrics.push(m); targets.push(t); cells[m + "\u0000" + t] = r;
      });
      metrics = unique(metrics); targets = unique(targets);
      var fams = unique(metrics.map(famOf));
      metrics.sort(function (a, b) { return fams.indexOf(famOf(a)) - fams.indexOf(famOf(b)); });
      fig.textContent = "";
      if (!metrics.length) { fig.appendChild(el("p", { cls: "na", text: "No cells match the filter." })); return; }
      var cw = 64, ch = 22, famW = Math.max(96, 14 + 7.6 * Math.max.apply(null, fams.map(function (f) { return f.length; })));
      var labW = Math.min(240, 12 + 7.2 * Math.max.apply(null, metrics.map(function (m) { return m.length; })));
      var headH = Math.min(170, 14 + 5.2 * Math.max.apply(null, targets.map(function (t) { return t.length; })));
      var W = famW + labW + targets.length * cw + 10, H = headH + metrics.length * ch + 10;
      var g = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "grid", "aria-label": "Spearman correlations, " + metrics.length + " metrics by " + targets.length + " targets" });
      add(g, sv("defs", null, sv("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        sv("rect", { width: 6, height: 6, fill: "#eeeeee" }), sv("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#c4c4c4", "stroke-width": 2 }))));
      targets.forEach(function (t, j) {
        var x = famW + labW + j * cw + cw / 2;
        add(g, sv("text", { x: x, y: headH - 6, "font-size": 12, fill: "#1d2330", transform: "rotate(-40 " + x + " " + (headH - 6) + ")", text: t }));
      });
      var cellsList = [];
      var prevFam = null;
      metrics.forEach(function (m, i) {
        var y = headH + i * ch, f = famOf(m);
        if (f !== prevFam) {
          var nf = metrics.filter(function (x) { return famOf(x) === f; }).length;
          add(g, sv("line", { x1: 4, x2: W - 4, y1: y, y2: y, stroke: "#9aa3b2", "stroke-width": i ? 1.2 : 0 }));
          add(g, sv("text", { x: 6, y: y + Math.min(nf, 2) * ch / 2 + 4, "font-size": 11.5, "font-weight": 700, fill: "#5b6475", text: f }));
          prevFam = f;
        }
        add(g, sv("text", { x: famW + labW - 8, y: y + ch / 2 + 4, "text-anchor": "end", "font-size": 12, fill: "#1d2330", "font-family": "ui-monospace,Menlo,Consolas,monospace", text: m }));
        var rowG = sv("g", { role: "row" });
        targets.forEach(function (t, j) {
          var r = cells[m + "\u0000" + t], x = famW + labW + j * cw;
          var rho = r ? G.rho(r) : null, stars = r ? (G.stars(r) || "") : "";
          var fill = isNum(rho) ? colour(rho, vmax) : null;
          var label = m + " × " + t + ": " + (isNum(rho) ? "ρ = " + fmtR(rho) + (isNum(G.ci_low(r)) ? ", 95% CI [" + fmtR(G.ci_low(r)) + ", " + fmtR(G.ci_high(r)) + "]" : "") +
            ", n = " + fmt(G.n(r)) + ", p = " + fmtP(G.p(r)) + ", p_adj = " + fmtP(G.p_adj(r)) + (stars ? " " + stars : "") : "undefined" + (r && G.reason(r) ? " (" + G.reason(r) + ")" : "") + (r ? ", n = " + fmt(G.n(r)) : ""));
          var cell = sv("g", { cls: "cell", role: "gridcell", tabindex: "-1", "aria-label": label, "data-i": i, "data-j": j });
          add(cell, sv("rect", { cls: "bg", x: x + 1, y: y + 1, width: cw - 2, height: ch - 2, rx: 2, fill: fill ? rgb(fill) : "url(#hatch)" }));
          add(cell, sv("text", { x: x + cw / 2, y: y + ch / 2 + 4, "text-anchor": "middle", "font-size": 11.5, "font-weight": stars ? 700 : 400,
            fill: fill && dark(fill) ? "#ffffff" : "#1d2330", text: isNum(rho) ? fmtR(rho) + stars : (r && G.reason(r) ? shortReason(G.reason(r)) : "n/a") }));
          cell.tmRow = r; cell.tmLabel = [m, t];
          rowG.appendChild(cell);
          cellsList.push(cell);
        });
        g.appendChild(rowG);
      });
      if (cellsList.length) cellsList[0].setAttribute("tabindex", "0");
      function tipFor(cell) {
        var r = cell.tmRow, b = cell.getBoundingClientRect();
        var lines = [el("b", { text: cell.tmLabel[0] }), " × ", el("b", { text: cell.tmLabel[1] }), el("br")];
        if (!r) lines.push("no cell");
        else {
          [["ρ", fmt(G.rho(r))], ["95% CI", isNum(G.ci_low(r)) ? "[" + fmt(G.ci_low(r)) + ", " + fmt(G.ci_high(r)) + "]" : "—"], ["n", fmt(G.n(r))],
            ["p", fmtP(G.p(r))], ["p_adj" + (G.adjust(r) ? " (" + G.adjust(r) + ")" : ""), fmtP(G.p_adj(r)) + (G.stars(r) ? " " + G.stars(r) : "")],
            ["reason", G.reason(r) || "—"]].forEach(function (kv) { lines.push(kv[0] + ": " + kv[1]); lines.push(el("br")); });
        }
        showTip(lines, b.right - 10, b.top + b.height / 2);
      }
      g.addEventListener("mouseover", function (e) { var c = e.target.closest && e.target.closest(".cell"); if (c) tipFor(c); });
      g.addEventListener("mouseleave", hideTip);
      g.addEventListener("focusin", function (e) { var c = e.target.closest(".cell"); if (c) tipFor(c); });
      g.addEventListener("focusout", hideTip);
      g.addEventListener("keydown", function (e) {
        var c = e.target.closest(".cell"); if (!c) return;
        var i = +c.getAttribute("data-i"), j = +c.getAttribute("data-j");
        var di = { ArrowDown: 1, ArrowUp: -1 }[e.key] || 0, dj = { ArrowRight: 1, ArrowLeft: -1 }[e.key] || 0;
        if (e.key === "Escape") { hideTip(); return; }
        if (!di && !dj) return;
        e.preventDefault();
        var ni = Math.max(0, Math.min(metrics.length - 1, i + di)), nj = Math.max(0, Math.min(targets.length - 1, j + dj));
        var next = cellsList[ni * targets.length + nj];
        c.setAttribute("tabindex", "-1"); next.setAttribute("tabindex", "0"); next.focus();
      });
      fig.appendChild(g);
      legend.textContent = "";
      var lg = sv("svg", { width: 300, height: 34, role: "img", "aria-label": "colour scale from −" + vmax + " to +" + vmax });
      for (var k = 0; k < 60; k++) add(lg, sv("rect", { x: 10 + k * 4, y: 2, width: 4, height: 12, fill: rgb(colour(-vmax + (2 * vmax) * (k + 0.5) / 60, vmax)) }));
      [-vmax, 0, vmax].forEach(function (v, k) { add(lg, sv("text", { x: 10 + k * 120, y: 28, "text-anchor": "middle", "font-size": 11, fill: "#4b5563", text: fmtR(v) })); });
      add(legend, [el("div", null, lg), el("span", { text: "ρ: blue negative, red positive; the value is printed in every cell. Hatched cells are undefined (" +
        "too_few: fewer complete pairs than n_min; constant: no variation). " + (D.star_legend ? "Stars: " + D.star_legend + " " : "") +
        Object.keys(aliasesOf).map(function (m) { return m + " also stands for " + aliasesOf[m].join(", ") + " (the same quantity). "; }).join("") +
        "Table: " + c.file + (c.control ? ", controlled for " + c.control : "") + "." })]);
    }
    draw();
    var more = el("details", { cls: "more" }, el("summary", { text: "The table behind the heatmap" }));
    more.addEventListener("toggle", function () { if (more.open && more.children.length === 1) more.appendChild(dataTable(corrs[which].table, { caption: "correlations" })); }, { once: false });
    s.appendChild(more);
  }
  function shortReason(r) { return String(r).replace("too_few", "too few").replace("constant", "const.").slice(0, 9); }

  function agreement() {
    var tabs = (D.agreement || []).concat(D.judge || []);
    if (!tabs.length) return;
    var s = section("agreement", "Rater agreement", "Per criterion: agreement between raters with bootstrap 95% intervals over units (κ, AC1, Krippendorff's α and their relatives).");
    tabs.forEach(function (a) {
      var T = a.table, crit = getter(T, "criterion"), ref = getter(T, "reference");
      var coefs = ["kappa", "ac1", "alpha_nominal", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1", "cohen_kappa"].filter(function (c) { return col(T, c) >= 0; }).slice(0, 4);
      s.appendChild(el("h3", { text: a.file }));
      if (coefs.length) {
        var items = T.rows.map(function (r) {
          return { label: String(crit(r)) + (ref(r) !== null ? " vs " + ref(r) : ""), series: coefs.map(function (c) {
            var lo = col(T, c + "_ci_low") >= 0 ? getter(T, c + "_ci_low")(r) : (c === "krippendorff_alpha" ? getter(T, "alpha_ci_low")(r) : (c === "cohen_kappa" ? getter(T, "kappa_ci_low")(r) : null));
            var hi = col(T, c + "_ci_high") >= 0 ? getter(T, c + "_ci_high")(r) : (c === "krippendorff_alpha" ? getter(T, "alpha_ci_high")(r) : (c === "cohen_kappa" ? getter(T, "kappa_ci_high")(r) : null));
            return { est: getter(T, c)(r), lo: lo, hi: hi };
          }) };
        });
        s.appendChild(forest(items, coefs, { title: "agreement coefficients per criterion", axis: "coefficient (0 = chance agreement, 1 = perfect)", min: 0, max: 1 }));
      }
      s.appendChild(dataTable(T, { caption: a.file }));
    });
  }

  function thetaSection() {
    var th = EX && EX.theta && EX.theta.theta ? EX.theta.theta.filter(isNum) : null, unit = "exchange";
    if (!th && CV && CV.theta && CV.theta.theta) { th = CV.theta.theta.filter(isNum); unit = "conversation"; }  // θ at the level rated
    if (!th && D.theta_only) { var gt = getter(D.theta_only, "theta"); th = D.theta_only.rows.map(gt).filter(isNum); }
    var facets = D.facets ? D.facets[0].table : null;
    if ((!th || !th.length) && !facets) return;
    var s = section("theta", "θ: many-facet Rasch model", "EAP estimates of each " + unit + "'s latent quality θ (logits), criterion difficulties and rater severities with 94% intervals, and a Wright map that puts them on one scale.");
    var rel = (run.theta || dict()).reliability;
    if (th && th.length) {
      var mean = th.reduce(function (a, b) { return a + b; }, 0) / th.length;
      var sd = Math.sqrt(th.reduce(function (a, b) { return a + (b - mean) * (b - mean); }, 0) / Math.max(1, th.length - 1));
      s.appendChild(kpis([[String(th.length), unit + "s with θ"], [fmt(mean, 2), "mean θ"], [fmt(sd, 2), "SD of θ"], isNum(rel) ? [rel.toFixed(3), "EAP reliability"] : null]));
      s.appendChild(el("h3", { text: "Distribution of θ" }));
      s.appendChild(histogram(th, "θ (logits)", unit + "s"));
    }
    if (facets) {
      var F = { facet: getter(facets, "facet"), level: getter(facets, "level"), est: getter(facets, "estimate"), lo: getter(facets, "lower"), hi: getter(facets, "upper") };
      var rows = facets.rows.filter(function (r) { return F.facet(r) !== "baseline_probability"; });
      var base = facets.rows.filter(function (r) { return F.facet(r) === "baseline_probability"; });
      s.appendChild(el("h3", { text: "Facet estimates" }));
      s.appendChild(forest(rows.map(function (r) { return { label: F.facet(r) + ": " + F.level(r), series: [{ est: F.est(r), lo: F.lo(r), hi: F.hi(r) }] }; }), ["estimate"],
        { title: "facet estimates with intervals", axis: "logits (criterion: difficulty b; rater: severity s)" }));
      if (th && th.length) {
        s.appendChild(el("h3", { text: "Wright map" }));
        s.appendChild(wright(th, rows.filter(function (r) { return F.facet(r) !== "threshold"; }), F, unit + "s"));
      }
      s.appendChild(el("h3", { text: "Facet table" }));
      if (base.length) {
        var ref = getter(facets, "reference")(base[0]);
        s.appendChild(el("p", { cls: "lead", text: "Rows baseline_probability give each criterion's probability of endorsement at the reference point" + (ref ? " (" + ref + ")." : ".") }));
      }
      s.appendChild(dataTable(facets, { caption: "facets" }));
    }
  }
  function histogram(values, axis, units) {
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
    var nb = Math.max(5, Math.min(30, Math.round(Math.sqrt(values.length) * 1.5)));
    var w = (hi - lo) / nb, counts = new Array(nb).fill(0);
    values.forEach(function (v) { counts[Math.min(nb - 1, Math.floor((v - lo) / w))]++; });
    var W = 720, H = 220, L = 44, B = 36, top = 10, pw = W - L - 12, ph = H - B - top, cmax = Math.max.apply(null, counts);
    var g = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "histogram of " + values.length + " values of " + axis + " from " + fmt(lo, 2) + " to " + fmt(hi, 2) });
    niceTicks(0, cmax, 4).forEach(function (t) {
      var y = top + ph - t / cmax * ph;
      add(g, [sv("line", { x1: L, x2: L + pw, y1: y, y2: y, stroke: "#eef0f3" }), sv("text", { x: L - 6, y: y + 4, "text-anchor": "end", "font-size": 11, fill: "#4b5563", text: String(t) })]);
    });
    counts.forEach(function (c, i) {
      var x = L + i / nb * pw, h = c / cmax * ph;
      var bar = sv("rect", { x: x + 1, y: top + ph - h, width: pw / nb - 2, height: h, fill: "#4a78b5" });
      add(bar, sv("title", { text: "[" + fmt(lo + i * w, 2) + ", " + fmt(lo + (i + 1) * w, 2) + "): " + c }));
      add(g, bar);
    });
    niceTicks(lo, hi, 8).forEach(function (t) {
      var x = L + (t - lo) / (hi - lo) * pw;
      add(g, [sv("line", { x1: x, x2: x, y1: top + ph, y2: top + ph + 4, stroke: "#6b7280" }), sv("text", { x: x, y: top + ph + 16, "text-anchor": "middle", "font-size": 11, fill: "#4b5563", text: fmtTick(t) })]);
    });
    add(g, [sv("line", { x1: L, x2: L + pw, y1: top + ph, y2: top + ph, stroke: "#6b7280" }), sv("text", { x: L + pw / 2, y: H - 4, "text-anchor": "middle", "font-size": 11.5, fill: "#1d2330", text: axis + " — count of " + units + " per bin" })]);
    return el("div", { cls: "fig" }, g);
  }
  function wright(th, rows, F, units) {
    var misfit = misfitFlags();
    var ests = rows.map(F.est).filter(isNum);
    var lo = Math.min(Math.min.apply(null, th), Math.min.apply(null, ests)), hi = Math.max(Math.max.apply(null, th), Math.max.apply(null, ests));
    lo = Math.floor(lo * 2) / 2 - 0.25; hi = Math.ceil(hi * 2) / 2 + 0.25;
    var facetNames = unique(rows.map(F.facet));
    var H = 420, top = 12, ph = H - 40, W = 300 + facetNames.length * 240, axisX = 250;
    var y = function (v) { return top + (hi - v) / (hi - lo) * ph; };
    var g = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "Wright map: " + units + "' θ and facet estimates on one logit scale" });
    var nb = Math.max(8, Math.round((hi - lo) / 0.25)), bw = (hi - lo) / nb, counts = new Array(nb).fill(0);
    th.forEach(function (v) { counts[Math.min(nb - 1, Math.max(0, Math.floor((v - lo) / bw)))]++; });
    var cmax = Math.max.apply(null, counts);
    counts.forEach(function (c, i) {
      if (!c) return;
      var y1 = y(lo + (i + 1) * bw), y2 = y(lo + i * bw), len = c / cmax * (axisX - 60);
      var r = sv("rect", { x: axisX - 8 - len, y: y1 + 0.5, width: len, height: Math.max(1, y2 - y1 - 1), fill: "#4a78b5" });
      add(r, sv("title", { text: c + " " + units + " with θ in [" + fmt(lo + i * bw, 2) + ", " + fmt(lo + (i + 1) * bw, 2) + ")" }));
      add(g, r);
    });
    niceTicks(lo, hi, 10).forEach(function (t) {
      add(g, [sv("line", { x1: axisX - 4, x2: axisX + 4, y1: y(t), y2: y(t), stroke: "#6b7280" }), sv("text", { x: axisX + 8, y: y(t) + 4, "font-size": 11, fill: "#4b5563", text: fmtTick(t) }),
        sv("line", { x1: axisX + 30, x2: W - 8, y1: y(t), y2: y(t), stroke: "#f1f3f6" })]);
    });
    add(g, sv("line", { x1: axisX, x2: axisX, y1: top, y2: top + ph, stroke: "#374151", "stroke-width": 1.5 }));
    add(g, sv("text", { x: axisX - 8, y: H - 8, "text-anchor": "end", "font-size": 11.5, fill: "#1d2330", text: units + " (θ) ◀" }));
    facetNames.forEach(function (f, k) {
      var x0 = axisX + 50 + k * 240;
      add(g, sv("text", { x: x0, y: H - 8, "font-size": 11.5, "font-weight": 700, fill: "#1d2330", text: "▶ " + f }));
      var items = rows.filter(function (r) { return F.facet(r) === f && isNum(F.est(r)); }).map(function (r) { return { label: String(F.level(r)), v: F.est(r) }; });
      items.sort(function (a, b) { return b.v - a.v; });
      var lastY = -Infinity;
      items.forEach(function (it) {
        var yy = Math.max(y(it.v), lastY + 13);
        lastY = yy;
        var dot = marker("diamond", x0 - 16, y(it.v), "#c2410c"), bad = misfit.flags[f + "\u0000" + it.label] === "underfit";
        if (bad) { dot.setAttribute("fill", "#ffffff"); dot.setAttribute("stroke", "#b3261e"); dot.setAttribute("stroke-width", "2"); dot.setAttribute("class", "underfit"); }
        add(g, [sv("line", { x1: x0 - 14, x2: x0 - 4, y1: y(it.v), y2: yy - 4, stroke: "#9ca3af" }), dot,
          sv("text", { x: x0, y: yy, "font-size": 11.5, fill: bad ? "#b3261e" : "#1d2330", text: it.label + " (" + fmt(it.v, 2) + ")" + (bad ? " underfit" : "") })]);
      });
    });
    return el("div", { cls: "fig" }, g, el("p", { cls: "legend", text: "Higher is a better " + units.replace(/s$/, "") + " (θ), a harder criterion (b) or a more severe rater (s). " + (units === "exchanges" ? "An exchange" : "A " + units.replace(/s$/, "")) + " at the height of a criterion has a 50% chance of being endorsed on it by an average rater." +
      (misfit.file ? " Open red markers: elements " + misfit.file + " flags underfit (more noise than the model expects)." : "") }));
  }
  function misfitFlags() {  // facet + level -> flag, from the first fit table (docs/measurement.md#fit-flag)
    var fit = (D.sections || []).filter(function (d) { return d.kind === "fit"; })[0], flags = dict();
    if (!fit) return { flags: flags, file: null };
    var T = fit.tables[0].table, gf = getter(T, "facet"), gl = getter(T, "level"), gg = getter(T, "flag");
    T.rows.forEach(function (r) { if (gg(r)) flags[gf(r) + "\u0000" + gl(r)] = gg(r); });
    return { flags: flags, file: fit.tables[0].file };
  }

  function groups() {
    var sums = D.summary || [], cmps = D.comparisons || [];
    if (!sums.length && !cmps.length) return;
    var s = section("groups", "Per-tutor summary and comparisons", "Per group (e.g. tutor): means with bootstrap 95% intervals, and paired comparisons between groups matched on a block (e.g. the same conversation).");
    sums.forEach(function (a) {
      var T = a.table, gv = getter(T, "variable"), gg = getter(T, "group"), gm = getter(T, "mean"), gl = getter(T, "ci_low"), gh = getter(T, "ci_high");
      var vars = unique(T.rows.map(gv));
      s.appendChild(el("h3", { text: a.file }));
      var sel = el("select", { id: "sum-var-" + a.file.replace(/[^A-Za-z0-9]/g, "_") }, vars.map(function (v) { return el("option", { value: v, text: v }); }));
      s.appendChild(el("div", { cls: "controls" }, el("label", { "for": sel.id }, "Variable", sel)));
      var plot = el("div");
      s.appendChild(plot);
      var tbl = dataTable(T, { caption: a.file });
      function draw() {
        plot.textContent = "";
        var rows = T.rows.filter(function (r) { return gv(r) === sel.value; });
        plot.appendChild(forest(rows.map(function (r) { return { label: String(gg(r)), series: [{ est: gm(r), lo: gl(r), hi: gh(r) }] }; }), ["mean"], { title: "mean of " + sel.value + " per group", axis: "mean of " + sel.value + " [95% CI]" }));
        tbl.setFilter(function (r) { return gv(r) === sel.value; });
      }
      sel.addEventListener("change", draw);
      s.appendChild(tbl);
      draw();
    });
    cmps.forEach(function (a) {
      var T = a.table, gm = getter(T, "metric");
      var ms = unique(T.rows.map(gm));
      s.appendChild(el("h3", { text: "Paired comparisons: " + a.file }));
      var sel = el("select", { id: "cmp-" + a.file.replace(/[^A-Za-z0-9]/g, "_") }, el("option", { value: "", text: "all metrics" }), ms.map(function (v) { return el("option", { value: v, text: v }); }));
      s.appendChild(el("div", { cls: "controls" }, el("label", { "for": sel.id }, "Metric", sel)));
      var tbl = dataTable(T, { caption: a.file });
      sel.addEventListener("change", function () { tbl.setFilter(sel.value ? function (r) { return gm(r) === sel.value; } : null); });
      s.appendChild(tbl);
    });
  }

  /* ---------- drill-down ---------- */
  var LONG = 700;
  function textBox(title, text) {
    var pre = el("pre", { text: text === null || text === undefined ? "" : text });
    var box = el("div", { cls: "textbox" }, el("h4", { text: title }), pre);
    if (text && (text.length > LONG || text.split("\n").length > 10)) {
      pre.className = "clamp";
      var b = el("button", { type: "button", cls: "toggle", "aria-expanded": "false", text: "Show all (" + text.length + " characters)" });
      b.addEventListener("click", function (e) {
        e.stopPropagation();
        var open = pre.className === "clamp";
        pre.className = open ? "" : "clamp";
        b.setAttribute("aria-expanded", open ? "true" : "false");
        b.textContent = open ? "Show less" : "Show all (" + text.length + " characters)";
      });
      box.appendChild(b);
    }
    return box;
  }
  /* Rows are ARIA grid rows (divs, not <tr>) so that each can skip layout while off screen (content-visibility).
     o: prefix (element ids), section, n, ids, label (first column), noun, cols [{label, num, key(i), show(i), cls}],
     pickers [{id, label, names, value}] (each a column whose values follow its select), values (name -> list),
     haystack(i) (the searched text), detail(i) (the opened row's element). */
  function drillTable(o) {
    var n = o.n, s = o.section;
    var search = el("input", { type: "search", id: o.prefix + "-search", placeholder: "Search…", "aria-controls": o.prefix + "-table", autocomplete: "off" });
    var count = el("span", { cls: "count", "aria-live": "polite", id: o.prefix + "-count" });
    var controls = el("div", { cls: "controls" }, el("label", { "for": search.id }, "Search", search));
    var cols = [{ label: o.label, key: function (i) { return o.ids[i]; }, show: function (i) { return o.ids[i]; } }].concat(o.cols);
    (o.pickers || []).forEach(function (p) {
      var pick = el("select", { id: p.id }, p.names.map(function (m) { return el("option", { value: m, text: m }); }));
      if (p.value) pick.value = p.value;
      controls.appendChild(el("label", { "for": p.id }, p.label, pick));
      var column = { label: pick.value, num: true, pick: pick,
        key: function (i) { var v = o.values[pick.value]; return v ? v[i] : null; },
        show: function (i) { var v = o.values[pick.value]; return v ? fmt(v[i]) : "—"; } };
      p.column = column; cols.push(column);
    });
    controls.appendChild(count);
    s.appendChild(controls);
    var table = el("div", { cls: "dd", id: o.prefix + "-table", role: "table", "aria-label": "every " + o.label, "aria-rowcount": n + 1 });
    var template = "40px minmax(160px,1.3fr)" + cols.slice(1).map(function (c) {
      return c.num ? " " + (c.pick ? 110 : Math.min(180, Math.max(96, 40 + 8.5 * String(c.label).length))) + "px" : (c.cls === "prev" ? " minmax(200px,2.2fr)" : " minmax(90px,.8fr)");
    }).join("");
    table.style.setProperty("--dd-cols", template);
    var head = el("div", { cls: "dd-head", role: "row" }, el("div", { role: "columnheader" }, el("span", { cls: "hidden", text: "expand" })));
    var state = { c: -1, dir: 1 };
    cols.forEach(function (c, ci) {
      var th = el("div", { role: "columnheader", cls: c.num ? "num" : null });
      sortableHeader(th, c.label, function () {
        state.dir = state.c === ci ? -state.dir : 1; state.c = ci;
        Array.prototype.forEach.call(head.children, function (h) { if (h.hasAttribute("aria-sort")) h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        order();
      });
      c.th = th;
      head.appendChild(th);
    });
    table.appendChild(el("div", { role: "rowgroup" }, head));
    var body = el("div", { role: "rowgroup", cls: "dd-body" });
    table.appendChild(body);
    var rows = new Array(n), details = dict();
    var frag = document.createDocumentFragment();
    for (var i = 0; i < n; i++) {
      var tr = el("div", { cls: "tm-row", role: "row", "data-i": i });
      tr.appendChild(el("div", { role: "cell" }, el("button", { type: "button", cls: "xbtn", "aria-expanded": "false", "aria-label": "Show details of " + o.ids[i], text: "+" })));
      cols.forEach(function (c) {
        var v = c.show(i);
        tr.appendChild(el("div", { role: "cell", cls: (c.num ? "num" : "") + (c.cls ? " " + c.cls : "") + (v === "—" ? " na" : "") || null, text: v }));
      });
      rows[i] = tr;
      frag.appendChild(tr);
    }
    body.appendChild(frag);
    s.appendChild(el("div", { cls: "tablebox" }, table));
    cols.forEach(function (c, ci) {
      if (!c.pick) return;
      function relabel() {
        c.th.querySelector("button span").textContent = c.pick.value;
        c.th.querySelector("button").setAttribute("aria-label", "Sort by " + c.pick.value);
      }
      relabel();
      c.pick.addEventListener("change", function () {
        for (var i = 0; i < n; i++) {
          var td = rows[i].children[ci + 1], v = c.show(i);
          td.textContent = v; td.className = "num" + (v === "—" ? " na" : "");
        }
        relabel();
        if (state.c === ci) order();
      });
    });
    function toggle(i) {
      var tr = rows[i], b = tr.querySelector(".xbtn"), d = details[i];
      if (d && !d.classList.contains("hidden")) { d.classList.add("hidden"); tr.classList.remove("open"); b.setAttribute("aria-expanded", "false"); b.textContent = "+"; return; }
      if (!d) { d = details[i] = el("div", { cls: "detail", role: "row" }, o.detail(i)); tr.parentNode.insertBefore(d, tr.nextSibling); }
      d.classList.remove("hidden"); tr.classList.add("open"); b.setAttribute("aria-expanded", "true"); b.textContent = "−";
    }
    body.addEventListener("click", function (e) {
      if (e.target.closest(".detail")) return;
      var tr = e.target.closest(".tm-row");
      if (tr) toggle(+tr.getAttribute("data-i"));
    });
    var hay = null;
    function haystack() {
      if (!hay) { hay = new Array(n); for (var i = 0; i < n; i++) hay[i] = o.haystack(i).toLowerCase(); }
      return hay;
    }
    function filter() {
      var q = search.value.trim().toLowerCase(), words = q ? q.split(/\s+/) : [], h = words.length ? haystack() : null, shown = 0;
      for (var i = 0; i < n; i++) {
        var ok = !words.length || words.every(function (w) { return h[i].indexOf(w) >= 0; });
        rows[i].classList.toggle("hidden", !ok);
        if (details[i] && !ok) details[i].classList.add("hidden");
        if (details[i] && ok && rows[i].classList.contains("open")) details[i].classList.remove("hidden");
        if (ok) shown++;
      }
      count.textContent = "Showing " + shown + " of " + n + " " + o.noun;
    }
    var timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(filter, n > 500 ? 120 : 0); });
    function order() {
      var idx = []; for (var i = 0; i < n; i++) idx.push(i);
      if (state.c >= 0) idx = sortRows(idx, cols[state.c].key, state.dir);
      var f = document.createDocumentFragment();
      idx.forEach(function (i) { f.appendChild(rows[i]); if (details[i]) f.appendChild(details[i]); });
      body.appendChild(f);
    }
    filter();
    window.tmFilters = window.tmFilters || dict();
    window.tmFilters[o.prefix] = filter;  // used by tests that set the search box directly
    return { filter: filter };
  }
  function kvGrid(title, pairs) {  // a heading and name/value rows in the detail grid
    var grid = el("div", { cls: "mgrid" });
    if (pairs.length) {
      grid.appendChild(el("div", { cls: "fam", text: title }));
      pairs.forEach(function (kv) { grid.appendChild(el("div", null, el("span", { text: kv[0] }), el("span", { text: kv[1] }))); });
    }
    return grid;
  }
  function familyRows(grid, names, families, values, i) {  // every value, under its family's heading
    var lastFam = null;
    names.forEach(function (m) {
      var f = families[m] || "other";
      if (f !== lastFam) { grid.appendChild(el("div", { cls: "fam", text: f })); lastFam = f; }
      grid.appendChild(el("div", null, el("span", { text: m }), el("span", { text: fmt(values[m][i], 4) })));
    });
  }
  function thetaText(T, i) { return fmt(T.theta[i], 3) + (T.theta_low ? " [" + fmt(T.theta_low[i], 2) + ", " + fmt(T.theta_high[i], 2) + "]" : ""); }
  function strongestMetric(names, vals, fallback) {  // the metric with the strongest correlation is the most interesting default
    var firstCorr = corrs[0], def = fallback;
    if (firstCorr) {
      var best = null, rg = getter(firstCorr.table, "rho"), mg = getter(firstCorr.table, "metric");
      firstCorr.table.rows.forEach(function (r) { if (isNum(rg(r)) && vals[mg(r)] && (!best || Math.abs(rg(r)) > Math.abs(rg(best)))) best = r; });
      if (best) def = mg(best);
    }
    return def;
  }

  function drilldown() {
    if (!EX) return;
    var n = EX.ids.length, hasText = !!EX.texts, turnsView = !!(D.dialogues || (EX.values && EX.values.tutor_turn));
    var s = section("exchanges", turnsView ? "Every tutor turn" : "Every exchange", turnsView ?
      "One row per scored tutor turn. Search ids, kept columns and texts; sort by any column; open a row (click, Enter or Space) for its text" + (CV && (ratingNames(CV).length || CV.theta.theta) ? " and every metric value (the ratings and θ are per conversation, above)." : ", ratings, θ and every metric value.") :
      "One row per exchange. Search ids, kept columns and texts; sort by any column; open a row (click, Enter or Space) for its prompt, response, ratings, θ and every metric value.");
    var vals = EX.values || dict(), fields = EX.fields || dict(), flags = EX.flags || [];
    var fieldNames = Object.keys(fields).filter(function (f) { return flags.indexOf(f) < 0 && fields[f].some(function (v) { return v !== null && String(v).length <= 80; }); }).slice(0, 4);
    var metricNames = Object.keys(vals).filter(function (m) { return EX.families[m] !== "diagnostic"; });
    var thetaV = EX.theta && EX.theta.theta, ratings = ratingNames(EX);
    function text(k) { return k === undefined || k < 0 ? "" : EX.texts[k]; }
    var cols = [];
    fieldNames.forEach(function (f) { cols.push({ label: f, key: function (i) { return fields[f][i]; }, show: function (i) { return fmt(fields[f][i]); } }); });
    if (hasText) cols.push({ label: "response", key: function (i) { return text(EX.response[i]); }, show: function (i) { return text(EX.response[i]).slice(0, 120); }, cls: "prev" });
    if (vals.resp_words) cols.push({ label: "words", num: true, key: function (i) { return vals.resp_words[i]; }, show: function (i) { return fmt(vals.resp_words[i]); } });
    if (thetaV) cols.push({ label: "θ", num: true, key: function (i) { return thetaV[i]; }, show: function (i) { return fmt(thetaV[i], 2); } });
    var def = strongestMetric(metricNames, vals, metricNames.indexOf("emb_mean_cos") >= 0 ? "emb_mean_cos" : metricNames[0]);
    drillTable({ prefix: "dd", section: s, n: n, ids: EX.ids, label: "exchange", noun: turnsView ? "tutor turns" : "exchanges", cols: cols, values: vals,
      pickers: metricNames.length ? [{ id: "dd-metric", label: "Metric column", names: metricNames, value: def }] : [],
      haystack: function (i) {
        var parts = [EX.ids[i]];
        Object.keys(fields).forEach(function (f) { if (fields[f][i] !== null) parts.push(fields[f][i]); });
        if (hasText) { parts.push(text(EX.prompt[i])); parts.push(text(EX.response[i])); }
        return parts.join("\n");
      },
      detail: function (i) {
        var td = el("div", { role: "cell" });
        if (hasText) td.appendChild(el("div", { cls: "texts" }, textBox("Prompt" + (EX.prompt[i] < 0 ? " (not found)" : ""), text(EX.prompt[i])), textBox("Response", text(EX.response[i]))));
        var extra = [];
        if (thetaV) extra.push(["theta", thetaText(EX.theta, i)]);
        ratings.forEach(function (r) { extra.push([r, fmt(EX.ratings[r][i], 2)]); });
        Object.keys(fields).forEach(function (f) { extra.push([f, fmt(fields[f][i])]); });
        var grid = kvGrid("ratings, θ and kept columns", extra);
        familyRows(grid, Object.keys(vals), EX.families, vals, i);
        td.appendChild(grid);
        return td;
      } });
    window.tmFilter = window.tmFilters.dd;  // used by tests that set the search box directly
  }
  function ratingNames(V) { return Object.keys(V.ratings || dict()); }

  /* ---------- conversations: ratings and θ at their level, the turns on demand ---------- */
  function turnList(d) {
    var index = dict();
    if (EX) EX.ids.forEach(function (id, i) { index[id] = i; });
    var show = ["resp_words", "emb_mean_cos", "prev_student_jaccard_1", "emb_prev_student_cos", "jaccard_1"].filter(function (m) { return EX && EX.values[m]; });
    var ul = el("ol", { cls: "turns" });
    d.turns.forEach(function (t) {
      // the kind scoring gave the turn (--tutor-role, --student-role, --speaker); a guess from the label only for old data
      var role = String(t.role).toLowerCase(), kind = t.kind === "tutor" || t.kind === "student" || t.kind === "other" ? t.kind :
        (/tutor|assistant|teacher/.test(role) ? "tutor" : (/student|user|learner/.test(role) ? "student" : "other"));
      var li = el("li", { cls: "turn " + kind }, el("div", { cls: "who", text: t.role + " · turn " + t.turn }), el("pre", { text: t.text }));
      var i = index[t.exchange_id];
      if (i !== undefined && show.length) li.appendChild(el("div", { cls: "tm", text: show.map(function (m) { return m + " " + fmt(EX.values[m][i], 3); }).join(" · ") }));
      ul.appendChild(li);
    });
    return ul;
  }
  function conversations() {
    if (!CV || !CV.ids.length) return;
    var n = CV.ids.length, ds = D.dialogues || [], vals = CV.values || dict(), ratings = ratingNames(CV), thetaV = CV.theta && CV.theta.theta;
    var perConv = run.level === "conversation";
    var s = section("conversations", "Every conversation", "One row per conversation" + (ratings.length || thetaV ? ": its ratings and θ" + (perConv ? " (the level this run validated: the ratings as correlated, from targets.csv)" : "") + ", " : ": ") +
      "its conversation measures" + (ds.length ? " and, when opened (click, Enter or Space), its turns" : "") + ". Search ids" + (ds.length ? " and the words of the turns" : "") + "; sort by any column.");
    function dialogue(i) { var k = CV.dialogue[i]; return k >= 0 ? ds[k] : null; }
    var cols = [];
    var nTurns = vals.n_turns ? function (i) { return vals.n_turns[i]; } : function (i) { var d = dialogue(i); return d ? d.turns.length : null; };
    cols.push({ label: "turns", num: true, key: nTurns, show: function (i) { return fmt(nTurns(i)); } });
    if (thetaV) cols.push({ label: "θ", num: true, key: function (i) { return thetaV[i]; }, show: function (i) { return fmt(thetaV[i], 2); } });
    var direct = ratings.length <= 6 ? ratings : [];
    direct.forEach(function (r) { cols.push({ label: r, num: true, key: function (i) { return CV.ratings[r][i]; }, show: function (i) { return fmt(CV.ratings[r][i], 2); } }); });
    var pool = Object.assign(dict(), vals), pickers = [];
    if (!direct.length && ratings.length) {
      ratings.forEach(function (r) { pool["rating: " + r] = CV.ratings[r]; });
      pickers.push({ id: "cv-rating", label: "Rating", names: ratings.map(function (r) { return "rating: " + r; }) });
    }
    var measures = Object.keys(vals).filter(function (m) { return m !== "n_turns"; });
    if (measures.length) pickers.push({ id: "cv-metric", label: "Measure", names: measures, value: strongestMetric(measures, vals, measures[0]) });
    drillTable({ prefix: "cv", section: s, n: n, ids: CV.ids, label: "conversation", noun: "conversations", cols: cols, values: pool, pickers: pickers,
      haystack: function (i) {
        var d = dialogue(i);
        return [CV.ids[i]].concat(d ? d.turns.map(function (t) { return t.text; }) : []).join("\n");
      },
      detail: function (i) {
        var td = el("div", { role: "cell" }), d = dialogue(i);
        var extra = [];
        if (thetaV) extra.push(["theta", thetaText(CV.theta, i)]);
        ratings.forEach(function (r) { extra.push([r, fmt(CV.ratings[r][i], 2)]); });
        if (extra.length) td.appendChild(kvGrid("ratings and θ", extra));
        if (d) { td.appendChild(el("h4", { cls: "turnsh", text: d.turns.length + " turns" })); td.appendChild(turnList(d)); }
        else if (ds.length || run.exchanges) td.appendChild(el("p", { cls: "na", text: "The turns of this conversation are not in the scored input shown here." }));
        var grid = el("div", { cls: "mgrid" });
        familyRows(grid, Object.keys(vals), CV.families || dict(), vals, i);
        td.appendChild(grid);
        return td;
      } });
  }

  /* ---------- predictive validity (predict / run --group-col) ---------- */
  function predictive() {
    var files = D.predictive || [];
    if (!files.length) return;
    var s = section("predictive", "Predictive validity: the metrics together, out of sample", "Grouped K-fold cross-validation (a dialogue never straddles folds; every step fitted on the training folds). all = every metric, best_single = the metric with the largest training |ρ|, chosen in each fold; all-best_single = what the metrics add together. Intervals resample whole dialogues.");
    files.forEach(function (a) {
      var T = a.table, gt = getter(T, "target"), gm = getter(T, "model"), gs = getter(T, "measure"), ge = getter(T, "estimate"), gl = getter(T, "ci_low"), gh = getter(T, "ci_high");
      var targets = unique(T.rows.map(gt)), measures = unique(T.rows.map(gs).filter(function (v) { return v !== null && v !== undefined; }));
      s.appendChild(el("h3", { text: a.file }));
      var selM = el("select", { id: "pred-m-" + a.file.replace(/[^A-Za-z0-9]/g, "_") }, measures.map(function (v) { return el("option", { value: v, text: v }); }));
      if (measures.indexOf("macro_f1") >= 0) selM.value = "macro_f1";
      s.appendChild(el("div", { cls: "controls" }, el("label", { "for": selM.id }, "Measure", selM)));
      var plot = el("div");
      s.appendChild(plot);
      var tbl = dataTable(T, { caption: a.file });
      function draw() {
        plot.textContent = "";
        var items = targets.map(function (t) {
          var series = ["all", "best_single"].map(function (m) {
            var r = T.rows.filter(function (r) { return gt(r) === t && gm(r) === m && gs(r) === selM.value; })[0];
            return r ? { est: ge(r), lo: gl(r), hi: gh(r) } : { est: null, lo: null, hi: null };
          });
          return { label: String(t), series: series };
        }).filter(function (it) { return it.series.some(function (x) { return isNum(x.est); }); });
        plot.appendChild(forest(items, ["all", "best_single"], { title: selM.value + " per target", axis: selM.value + " [95% cluster CI]" }));
        tbl.setFilter(function (r) { return gs(r) === selM.value || gs(r) === null; });
      }
      selM.addEventListener("change", draw);
      s.appendChild(tbl);
      draw();
    });
  }

  /* ---------- declared table kinds (report/table_kinds.py): one generic section each ---------- */
  function declaredSection(d) {
    var s = section(d.kind, d.title, d.lead);
    if (d.doc) s.appendChild(el("p", { cls: "doc", text: "What the columns mean, in the tutormetrics documentation: " + d.doc }));
    d.tables.forEach(function (a) {
      s.appendChild(el("h3", { text: a.file }));
      if (d.flag_label) {
        var k = a.flagged.length, total = a.table.rows.length;
        s.appendChild(el("p", { cls: k ? "flagcount some" : "flagcount", text: "⚑ " + k + " of " + total + " row" + (total === 1 ? "" : "s") + " flagged: " + d.flag_label + "." }));
      }
      s.appendChild(dataTable(a.table, { caption: a.file, intervals: d.intervals, highlight: d.highlight, flagged: d.flag_label ? a.flagged : null }));
    });
  }

  function staleBanner() {  // parts left out because run.json does not vouch for them (report/provenance.py)
    if (!D.stale || !D.stale.length) return;
    var b = el("div", { cls: "note stale", id: "stale", role: "alert" },
      el("strong", { text: "Left out: " + D.stale.length + " part(s) of this folder are stale or not from this run." }),
      el("ul", null, D.stale.map(function (line) { return el("li", { text: line }); })));
    main.insertBefore(b, main.firstChild);
  }

  function declared(place) { return function () { (D.sections || []).filter(function (d) { return d.place === place; }).forEach(declaredSection); }; }
  var views = run.level === "conversation" ? [conversations, drilldown] : [drilldown, conversations];  // the validated level first
  var steps = [provenance, heatmap, agreement, declared("agreement"), thetaSection, declared("theta"), groups, predictive].concat(views, [staleBanner]);
  steps.forEach(function (f) {
    try { f(); } catch (err) {
      main.appendChild(el("p", { cls: "note", text: "A part of this report could not be drawn: " + (err && err.message) }));
      console.error(err);
    }
  });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") hideTip(); });
  window.tmReadyMs = performance.now();
  // Interactive = drawn and the first frame laid out and painted (the next task after the frame).
  requestAnimationFrame(function () {
    setTimeout(function () {
      window.tmInteractiveMs = performance.now();
      document.documentElement.setAttribute("data-ready", "1");
    }, 0);
  });
})();

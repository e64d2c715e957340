/* trajbench explore: the results explorer's page (docs/explore.md).
 *
 * Reads window.TRAJBENCH_EXPLORE (data.js, written by `trajbench explore`) and draws every chart
 * as SVG itself: no library, no network. The whole view (filters, normalisation, metric, picked
 * systems, history, the opened point) lives in the URL's fragment, so a shared link shows the
 * same view. A frontier is a step function through measured points only, by the rule of
 * trajbench's report (replay.report.frontier): a point is on it when no other point of the same
 * system and kind is at least as fast per user and at least as high, and better in one. Failed
 * points never count; research points draw their own dashed frontier.
 */
(function () {
  "use strict";

  var D = window.TRAJBENCH_EXPLORE;
  var $ = function (id) { return document.getElementById(id); };
  if (!D || D.version !== 1) {
    $("banners").innerHTML = '<div class="banner warn"><b>This page cannot read its data.</b> data.js is missing ' +
      "or was written by another trajbench version; rebuild the folder with <code>trajbench explore</code>.</div>";
    return;
  }

  // ------------------------------------------------------------------ data
  var SYS = {};
  var PTS = {};
  D.systems.forEach(function (s, i) {
    s.index = i;
    s.color = "hsl(" + ((i * 137.508) % 360).toFixed(1) + ",62%," + (i % 2 ? "38%" : "46%") + ")";
    s.points = [];
    SYS[s.id] = s;
  });
  D.points.forEach(function (p) { PTS[p.id] = p; SYS[p.system].points.push(p); });

  var NONE = "(not given)";
  var FACETS = [
    { key: "model", label: "Model", get: function (s) { return s.model; } },
    { key: "submitter", label: "Submitter", get: function (s) { return s.submitter; } },
    { key: "accel", label: "Accelerator", get: function (s) { return s.accelerator; } },
    { key: "count", label: "Accelerator count", get: function (s) { return s.accelerators == null ? null : String(s.accelerators); } },
    { key: "engine", label: "Engine", get: function (s) { return s.engine; } },
  ];
  var VERDICTS = ["reviewed", "research", "unknown", "failed"];
  var NORMS = {
    none: { label: "None", div: function () { return 1; }, unit: "output tok/s" },
    accelerator: { label: "Per accelerator", div: function (s) { return s.accelerators; }, unit: "output tok/s per accelerator", missing: "no accelerator count" },
    dollar: { label: "Per dollar-hour", div: function (s) { return s.price_per_hour; }, unit: "output tok/s per $/h", missing: "no price per hour" },
    watt: { label: "Per watt", div: function (s) { return s.power_watts; }, unit: "output tok/s per W", missing: "no power" },
  };
  var METRICS = {
    tps: { label: "System throughput", slo: null, get: function (p) { return p.throughput_tps; } },
    goodput: { label: "Goodput of turns", slo: "goodput_slo", get: function (p) { return p.goodput_tps; } },
    session: { label: "Goodput of sessions", slo: "session_goodput_slo", get: function (p) { return p.session_goodput_tps; } },
  };
  function slos(metric) {
    var key = METRICS[metric].slo;
    if (!key) return [];
    var seen = {};
    D.points.forEach(function (p) { if (p[key] != null) seen[p[key]] = true; });
    return Object.keys(seen).sort();
  }

  // ------------------------------------------------------------------ state <-> URL
  var DEFAULT = {
    y: "tps", slo: "", norm: "none", verdict: ["reviewed", "research", "unknown"],
    model: [], submitter: [], accel: [], count: [], engine: [], from: "", to: "", q: "",
    pick: [], hist: false, point: "",
  };
  var LISTS = ["verdict", "model", "submitter", "accel", "count", "engine", "pick"];
  var ORDER = ["y", "slo", "norm", "verdict", "model", "submitter", "accel", "count", "engine", "from", "to", "q", "pick", "hist", "point"];
  var state = parse(location.hash);

  function parse(hash) {
    var st = JSON.parse(JSON.stringify(DEFAULT));
    (hash || "").replace(/^#/, "").split("&").forEach(function (pair) {
      if (!pair) return;
      var k = pair.split("=")[0], v = pair.slice(k.length + 1);
      if (!(k in DEFAULT)) return;
      if (LISTS.indexOf(k) >= 0) st[k] = v ? v.split(",").map(decodeURIComponent) : [];
      else if (k === "hist") st.hist = v === "1";
      else st[k] = decodeURIComponent(v);
    });
    if (!METRICS[st.y]) st.y = "tps";
    if (!NORMS[st.norm]) st.norm = "none";
    return st;
  }
  function serialise(st) {
    var out = [];
    ORDER.forEach(function (k) {
      var v = st[k], d = DEFAULT[k];
      if (LISTS.indexOf(k) >= 0) {
        if (v.join(",") !== d.join(",")) out.push(k + "=" + v.map(encodeURIComponent).join(","));
      } else if (k === "hist") {
        if (v) out.push("hist=1");
      } else if (v !== d) out.push(k + "=" + encodeURIComponent(v));
    });
    return out.join("&");
  }
  function saveState() {
    var hash = serialise(state);
    var url = location.href.split("#")[0] + (hash ? "#" + hash : "");
    // replaceState keeps one history entry per page; setting the fragment never reloads
    try { window.history.replaceState(null, "", url); } catch (e) { if (location.hash.slice(1) !== hash) location.hash = hash; }
  }
  window.addEventListener("hashchange", function () { state = parse(location.hash); renderFilters(); render(); });

  // ------------------------------------------------------------------ formatting
  function esc(t) {
    return String(t).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; });
  }
  function num(v, digits) {
    if (v == null) return "—";
    var d = digits == null ? (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 1 ? 1 : 3) : digits;
    return v.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: 0 });
  }
  function pct(v) { return v == null ? "—" : (100 * v).toFixed(2) + "%"; }
  function gate(v) { return v == null ? "" : v ? ' <span class="pass">pass</span>' : ' <span class="fail">FAIL</span>'; }
  function tick(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    var s = a >= 1e6 ? v / 1e6 : a >= 1e3 ? v / 1e3 : v;
    var t = String(+s.toPrecision(3));
    return t + (a >= 1e6 ? "M" : a >= 1e3 ? "k" : "");
  }
  function badge(v) { return '<span class="badge ' + v + '">' + v + "</span>"; }

  // ------------------------------------------------------------------ selection
  function facetValue(f, s) { var v = f.get(s); return v == null || v === "" ? NONE : v; }
  function passes(s) {
    for (var i = 0; i < FACETS.length; i++) {
      var sel = state[FACETS[i].key];
      if (sel.length && sel.indexOf(facetValue(FACETS[i], s)) < 0) return false;
    }
    if (state.from && s.date < state.from) return false;
    if (state.to && s.date > state.to) return false;
    if (state.q && s.name.toLowerCase().indexOf(state.q.toLowerCase()) < 0) return false;
    return true;
  }
  function filtered() { return D.systems.filter(passes); }
  function drawnSystems() {
    if (state.pick.length) return state.pick.map(function (id) { return SYS[id]; }).filter(Boolean);
    return filtered();
  }
  function shown(p) { return state.verdict.indexOf(p.verdict) >= 0; }
  function sloOf() {
    var opts = slos(state.y);
    return opts.indexOf(state.slo) >= 0 ? state.slo : opts[0] || "";
  }
  function yOf(p) {
    var m = METRICS[state.y];
    if (m.slo && p[m.slo] !== sloOf()) return null;
    var v = m.get(p);
    if (v == null) return null;
    var d = NORMS[state.norm].div(SYS[p.system]);
    return d ? v / d : null;
  }

  // The non-dominated points, by per-user speed ascending (replay.report.frontier's rule and order).
  function frontier(pts, y) {
    var keep = pts.filter(function (p) {
      var px = p.per_user_tps, py = y(p);
      return !pts.some(function (q) {
        var qx = q.per_user_tps, qy = y(q);
        return qx >= px && qy >= py && (qx > px || qy > py);
      });
    });
    return keep.sort(function (a, b) {
      return a.per_user_tps - b.per_user_tps || y(b) - y(a) || a.concurrency - b.concurrency;
    });
  }
  // A system's frontiers as they stood at the end of each earlier day points were added: of the
  // runs added by then, the latest at each concurrency, shown and not failed.
  function pastFronts(s, kind) {
    var days = {};
    s.points.forEach(function (p) { days[p.added] = true; });
    var sorted = Object.keys(days).sort();
    return sorted.slice(0, -1).map(function (day) {
      var latest = {};
      s.points.filter(function (p) { return p.added <= day; }).sort(function (a, b) {
        return Date.parse(a.started_at) - Date.parse(b.started_at) || (a.id < b.id ? -1 : 1);
      }).forEach(function (p) { latest[p.concurrency] = p; });
      var pool = Object.keys(latest).map(function (c) { return latest[c]; }).filter(function (p) {
        return p.verdict !== "failed" && shown(p) && p.research === kind && yOf(p) != null;
      });
      return { day: day, front: frontier(pool, yOf) };
    }).filter(function (h) { return h.front.length; });
  }

  // ------------------------------------------------------------------ SVG charts
  function niceStep(span, n) {
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
  }
  function linear(max, n) {
    if (!(max > 0)) max = 1;
    var step = niceStep(max, n), ticks = [];
    for (var v = 0; v < max + step / 2; v += step) ticks.push(+v.toPrecision(12));
    if (ticks[ticks.length - 1] < max) ticks.push(+(ticks[ticks.length - 1] + step).toPrecision(12));
    return ticks;
  }
  function log2ticks(values) {
    var lo = Math.floor(Math.log2(Math.min.apply(null, values))), hi = Math.ceil(Math.log2(Math.max.apply(null, values)));
    if (hi === lo) { lo = Math.max(0, lo - 1); hi = lo + 2; }
    var every = hi - lo > 10 ? 2 : 1, ticks = [];
    for (var e = lo; e <= hi; e += every) ticks.push(Math.pow(2, e));
    return { lo: lo, hi: hi, ticks: ticks };
  }
  // Markers are drawn as one path per system and kind (thousands of points stay a few hundred
  // elements, so 100 systems × 32 points draw in well under a second); hover and click find the
  // nearest point from `hits`, the points' positions in the chart's own units.
  var KINDS = ["replaced", "unknown", "reviewed", "research", "failed"];
  function kindOf(p) {
    return !p.current ? "replaced" : p.verdict === "failed" ? "failed" : p.research ? "research" : p.verdict === "reviewed" ? "reviewed" : "unknown";
  }
  function shape(kind, x, y, k) {
    x = +x.toFixed(2); y = +y.toFixed(2);
    var a = +(4.5 * k).toFixed(2), b = +(5.5 * k).toFixed(2);
    if (kind === "failed") return "M" + (x - a) + "," + (y - a) + "l" + 2 * a + "," + 2 * a + "m0," + -2 * a + "l" + -2 * a + "," + 2 * a;
    if (kind === "research") return "M" + x + "," + (y - b) + "l" + b + "," + b + "l" + -b + "," + b + "l" + -b + "," + -b + "z";
    var r = +((kind === "replaced" ? 3.2 : 4.3) * k).toFixed(2);
    return "M" + (x - r) + "," + y + "a" + r + "," + r + " 0 1,0 " + 2 * r + ",0a" + r + "," + r + " 0 1,0 " + -2 * r + ",0";
  }
  // With many systems drawn the markers shrink, so the curves stay readable.
  function Marks(systems) { this.groups = {}; this.hits = []; this.k = systems > 20 ? 0.6 : systems > 8 ? 0.8 : 1; }
  Marks.prototype.add = function (p, x, y) {
    var s = SYS[p.system], kind = kindOf(p), key = s.index + "|" + kind;
    (this.groups[key] = this.groups[key] || { s: s, kind: kind, d: [] }).d.push(shape(kind, x, y, this.k));
    this.hits.push({ x: x, y: y, id: p.id });
  };
  Marks.prototype.svg = function () {
    var groups = this.groups, out = [];
    Object.keys(groups).sort(function (a, b) {
      return KINDS.indexOf(groups[a].kind) - KINDS.indexOf(groups[b].kind) || groups[a].s.index - groups[b].s.index;
    }).forEach(function (k) {
      var g = groups[k], c = g.s.color, style = {
        replaced: 'class="hist" fill="#fff" stroke="' + c + '" stroke-width="1.3"',
        unknown: 'fill="#fff" stroke="' + c + '" stroke-width="1.8"',
        reviewed: 'fill="' + c + '" stroke="' + c + '" stroke-width="1.8"',
        research: 'fill="#fff" stroke="' + c + '" stroke-width="2"',
        failed: 'fill="none" stroke="#b42318" stroke-width="2.4"',
      }[g.kind];
      out.push('<path class="marks" data-s="' + esc(g.s.id) + '" data-kind="' + g.kind + '" ' + style + ' d="' + g.d.join("") + '"/>');
    });
    var sel = this.hits.filter(function (h) { return h.id === state.point; })[0];
    if (sel) out.push('<circle class="sel-ring" cx="' + sel.x + '" cy="' + sel.y + '" r="7.5" fill="none" stroke="#000" stroke-width="2"/>');
    out.push('<circle class="hover-ring" r="7.5" fill="none" stroke="#000" stroke-width="1.5" visibility="hidden"/>');
    return out.join("");
  };

  // A chart frame: axes, grid and ticks; `body(sx, sy)` draws the data.
  function frame(cfg, body) {
    var W = cfg.w, H = cfg.h, L = 58, R = cfg.right || 16, T = 12, B = 40;
    var xs = cfg.log2 ? log2ticks(cfg.xs.length ? cfg.xs : [1, 2]) : null;
    var xt = cfg.log2 ? xs.ticks : linear(Math.max.apply(null, cfg.xs.concat([0])), cfg.w > 600 ? 8 : 5);
    var yt = linear(Math.max.apply(null, cfg.ys.concat([0])), 5);
    var xmax = xt[xt.length - 1], ymax = yt[yt.length - 1];
    var sx = cfg.log2
      ? function (v) { return L + (Math.log2(v) - xs.lo) / (xs.hi - xs.lo) * (W - L - R); }
      : function (v) { return L + v / xmax * (W - L - R); };
    var sy = function (v) { return T + (1 - v / ymax) * (H - T - B); };
    var g = ['<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ' + W + " " + H + '" role="img" aria-label="' + esc(cfg.ylab + " against " + cfg.xlab) + '">'];
    g.push('<g class="grid">');
    yt.forEach(function (v) { g.push('<line x1="' + L + '" x2="' + (W - R) + '" y1="' + sy(v) + '" y2="' + sy(v) + '"/>'); });
    xt.forEach(function (v) { g.push('<line y1="' + T + '" y2="' + (H - B) + '" x1="' + sx(v) + '" x2="' + sx(v) + '"/>'); });
    g.push('</g><g class="axis"><path d="M' + L + "," + T + "V" + (H - B) + "H" + (W - R) + '" fill="none"/>');
    yt.forEach(function (v) { g.push('<text x="' + (L - 6) + '" y="' + (sy(v) + 4) + '" text-anchor="end">' + tick(v) + "</text>"); });
    xt.forEach(function (v) { g.push('<text x="' + sx(v) + '" y="' + (H - B + 15) + '" text-anchor="middle">' + tick(v) + "</text>"); });
    g.push('<text class="title" x="' + ((L + W - R) / 2) + '" y="' + (H - 6) + '" text-anchor="middle">' + esc(cfg.xlab) + "</text>");
    g.push('<text class="title" transform="translate(13,' + ((T + H - B) / 2) + ') rotate(-90)" text-anchor="middle">' + esc(cfg.ylab) + "</text></g>");
    if (!cfg.xs.length) g.push('<text class="empty" x="' + ((L + W - R) / 2) + '" y="' + ((T + H - B) / 2) + '" text-anchor="middle">no point matches this view</text>');
    g.push(body(sx, sy));
    g.push("</svg>");
    return g.join("");
  }
  function stepPath(front, sx, sy) {
    var d = "M" + sx(0) + "," + sy(yOf(front[0]));
    front.forEach(function (p, k) {
      d += "H" + sx(p.per_user_tps);
      if (k + 1 < front.length) d += "V" + sy(yOf(front[k + 1]));
    });
    return d;
  }

  function pareto(systems) {
    var xs = [], ys = [], layers = [], marks = new Marks(systems.length);
    systems.forEach(function (s) {
      var vis = s.points.filter(function (p) { return (p.current || state.hist) && shown(p) && yOf(p) != null; });
      vis.forEach(function (p) { xs.push(p.per_user_tps); ys.push(yOf(p)); });
      layers.push({ s: s, vis: vis });
    });
    var few = systems.length <= 8;
    var svg = frame({ w: 960, h: 430, xs: xs, ys: ys, right: few ? 120 : 16,
      xlab: "per-user speed (output tok/s per user)", ylab: yLabel() }, function (sx, sy) {
      var out = [], labels = [];
      function label(x, y, text, fill, tag) { labels.push({ x: x, y: y, text: text, fill: fill, tag: tag }); }
      layers.forEach(function (l) {
        var s = l.s, cur = l.vis.filter(function (p) { return p.current; });
        [false, true].forEach(function (kind) {
          if (state.hist) {
            pastFronts(s, kind).forEach(function (h) {
              var last = h.front[h.front.length - 1];
              out.push('<path class="hist" d="' + stepPath(h.front, sx, sy) + '" fill="none" stroke="' + s.color +
                '" stroke-width="1.4" stroke-dasharray="1.5,3" data-s="' + esc(s.id) + '" data-day="' + esc(h.day) + '"/>');
              label(sx(last.per_user_tps) + 5, sy(yOf(last)) + 13, "as of " + h.day, s.color, "day");
            });
          }
          var front = frontier(cur.filter(function (p) { return p.verdict !== "failed" && p.research === kind; }), yOf);
          if (!front.length) return;
          out.push('<path class="front" d="' + stepPath(front, sx, sy) + '" fill="none" stroke="' + s.color + '" stroke-width="2"' +
            (kind ? ' stroke-dasharray="6,4"' : "") + ' data-s="' + esc(s.id) + '" data-kind="' + (kind ? "research" : "official") +
            '" data-front="' + esc(front.map(function (p) { return p.id; }).join(" ")) + '"/>');
          var end = front[front.length - 1], tags = [];
          if (few) tags.push(s.name);
          if (kind) tags.push(front.some(function (p) { return p.simulated; }) ? "research · simulated" : "research");
          if (tags.length) label(sx(end.per_user_tps) + 7, sy(yOf(end)) - 6, tags.join(" — "), kind ? "#b54708" : s.color, kind ? "research" : "name");
        });
        l.vis.forEach(function (p) {
          var x = sx(p.per_user_tps), y = sy(yOf(p));
          marks.add(p, x, y);
          if (p.current && p.verdict === "failed") label(x + 7, y + 4, "failed", "#b42318", "failed");
        });
      });
      out.push(marks.svg());
      // labels never overlap: each moves down past the ones already placed that it would cover
      var placed = [];
      labels.sort(function (a, b) { return a.y - b.y || a.x - b.x; }).forEach(function (t) {
        var w = 6.3 * t.text.length, moved = true;
        while (moved) {
          moved = false;
          for (var i = 0; i < placed.length; i++) {
            var q = placed[i];
            if (t.x < q.x + q.w && q.x < t.x + w && Math.abs(t.y - q.y) < 12) { t.y = q.y + 12; moved = true; }
          }
        }
        t.w = w;
        placed.push(t);
        out.push('<text class="tag" x="' + t.x + '" y="' + t.y + '" fill="' + t.fill + '" data-tag="' + t.tag + '">' + esc(t.text) + "</text>");
      });
      return out.join("");
    });
    return { svg: svg, hits: marks.hits };
  }
  function yLabel() {
    var m = METRICS[state.y], n = NORMS[state.norm];
    return m.label.toLowerCase() + " (" + n.unit + (m.slo ? ", SLO " + sloOf() : "") + ")";
  }

  function vsConcurrency(systems, get, ylab) {
    var xs = [], ys = [], lines = [], marks = new Marks(systems.length);
    systems.forEach(function (s) {
      var pts = s.points.filter(function (p) { return p.current && shown(p) && get(p) != null; })
        .sort(function (a, b) { return a.concurrency - b.concurrency; });
      pts.forEach(function (p) { xs.push(p.concurrency); ys.push(get(p)); });
      if (pts.length) lines.push({ s: s, pts: pts });
    });
    var svg = frame({ w: 470, h: 250, xs: xs, ys: ys, log2: true, xlab: "concurrency (users)", ylab: ylab }, function (sx, sy) {
      var out = [];
      lines.forEach(function (l) {
        var ok = l.pts.filter(function (p) { return p.verdict !== "failed"; });
        if (ok.length > 1) {
          out.push('<path d="M' + ok.map(function (p) { return sx(p.concurrency) + "," + sy(get(p)); }).join("L") +
            '" fill="none" stroke="' + l.s.color + '" stroke-width="1.3" data-s="' + esc(l.s.id) + '"' + (ok[0].research ? ' stroke-dasharray="5,3"' : "") + "/>");
        }
        l.pts.forEach(function (p) { marks.add(p, sx(p.concurrency), sy(get(p))); });
      });
      return out.join("") + marks.svg();
    });
    return { svg: svg, hits: marks.hits };
  }

  // ------------------------------------------------------------------ filters panel
  function counts(facet) {
    var c = {};
    D.systems.forEach(function (s) { var v = facetValue(facet, s); c[v] = (c[v] || 0) + 1; });
    return c;
  }
  function checkList(key, values, n) {
    return '<div class="opts">' + values.map(function (v) {
      return '<label><input type="checkbox" data-list="' + key + '" value="' + esc(v) + '"' +
        (state[key].indexOf(v) >= 0 ? " checked" : "") + "> " + esc(v) + (n ? '<span class="n">' + n[v] + "</span>" : "") + "</label>";
    }).join("") + "</div>";
  }
  function radio(name, value, label, disabled) {
    return '<label><input type="radio" name="' + name + '" value="' + value + '"' + (state[name] === value ? " checked" : "") +
      (disabled ? " disabled" : "") + "> " + esc(label) + "</label>";
  }
  function renderFilters() {
    var vcount = {};
    D.points.forEach(function (p) { if (p.current) vcount[p.verdict] = (vcount[p.verdict] || 0) + 1; });
    var h = [];
    h.push("<fieldset><legend>Y axis</legend>");
    Object.keys(METRICS).forEach(function (k) { h.push(radio("y", k, METRICS[k].label, METRICS[k].slo && !slos(k).length)); });
    if (METRICS[state.y].slo) {
      h.push('<select id="slo" aria-label="SLO">' + slos(state.y).map(function (o) {
        return '<option value="' + esc(o) + '"' + (o === sloOf() ? " selected" : "") + ">SLO " + esc(o) + "</option>";
      }).join("") + "</select>");
    } else if (!slos("goodput").length && !slos("session").length) {
      h.push('<p class="note">No run carries an SLO (<code>--slo</code>): goodput is not drawn.</p>');
    }
    h.push("</fieldset><fieldset><legend>Normalise throughput</legend>");
    Object.keys(NORMS).forEach(function (k) { h.push(radio("norm", k, NORMS[k].label)); });
    h.push("</fieldset><fieldset><legend>Verdict</legend>");
    VERDICTS.forEach(function (v) {
      h.push('<label title="' + esc(D.verdicts[v]) + '"><input type="checkbox" data-list="verdict" value="' + v + '"' +
        (state.verdict.indexOf(v) >= 0 ? " checked" : "") + "> " + badge(v) + '<span class="n">' + (vcount[v] || 0) + "</span></label>");
    });
    h.push("</fieldset>");
    FACETS.forEach(function (f) {
      var n = counts(f);
      h.push("<fieldset><legend>" + esc(f.label) + "</legend>" + checkList(f.key, Object.keys(n).sort(), n) + "</fieldset>");
    });
    h.push('<fieldset><legend>Submission date</legend><label class="date">from <input type="date" id="from" value="' +
      esc(state.from) + '"></label><label class="date">to <input type="date" id="to" value="' + esc(state.to) + '"></label></fieldset>');
    h.push('<fieldset><legend>System</legend><input type="search" id="q" placeholder="name contains…" value="' + esc(state.q) + '"></fieldset>');
    h.push('<fieldset><legend>History</legend><label><input type="checkbox" id="hist"' + (state.hist ? " checked" : "") +
      "> earlier frontiers and replaced runs</label></fieldset>");
    h.push('<button type="button" id="reset">Reset the view</button>');
    $("filters").innerHTML = h.join("");
  }
  $("filters").addEventListener("change", function (e) {
    var t = e.target;
    if (t.dataset.list) {
      var list = state[t.dataset.list].filter(function (v) { return v !== t.value; });
      if (t.checked) list.push(t.value);
      state[t.dataset.list] = list.sort();
    } else if (t.name === "y" || t.name === "norm") {
      state[t.name] = t.value;
      if (t.name === "y") { state.slo = ""; renderFilters(); }
    } else if (t.id === "slo") state.slo = t.value;
    else if (t.id === "from" || t.id === "to") state[t.id] = t.value;
    else if (t.id === "hist") state.hist = t.checked;
    render();
  });
  $("filters").addEventListener("input", function (e) { if (e.target.id === "q") { state.q = e.target.value; render(); } });
  $("filters").addEventListener("click", function (e) {
    if (e.target.id === "reset") { state = parse(""); renderFilters(); render(); }
  });

  // ------------------------------------------------------------------ hover and detail
  var tip = $("tip");
  function figures(p) {
    var s = SYS[p.system], rows = [];
    function row(k, v) { rows.push("<tr><td>" + k + "</td><td>" + v + "</td></tr>"); }
    row("Concurrency", num(p.concurrency) + (p.concurrency === 1 ? " user" : " users"));
    row("Per-user speed", num(p.per_user_tps) + " tok/s");
    row("System throughput", num(p.throughput_tps) + " tok/s");
    if (state.norm !== "none" && yOf(p) != null && state.y === "tps") row(NORMS[state.norm].label, num(yOf(p)) + " " + NORMS[state.norm].unit.replace("output ", ""));
    row("TTFT p50 / p90 / p99", num(p.ttft_p50_ms) + " / " + num(p.ttft_p90_ms) + " / " + num(p.ttft_p99_ms) + " ms");
    row("TPOT p50 / p90", num(p.tpot_p50_ms, 2) + " / " + num(p.tpot_p90_ms, 2) + " ms");
    if (p.goodput_tps != null) row("Goodput of turns", num(p.goodput_tps) + " tok/s (SLO " + esc(p.goodput_slo) + ")");
    if (p.session_goodput_tps != null) row("Goodput of sessions", num(p.session_goodput_tps) + " tok/s (SLO " + esc(p.session_goodput_slo) + ")");
    row("Inline accuracy", pct(p.inline_score) + gate(p.inline_pass));
    row("OSL mean", (p.osl_mean == null ? "—" : num(p.osl_mean, 1) + " tok/turn") + gate(p.osl_pass));
    if (s.swebench_mean != null) row("SWE-bench (mean of 4)", pct(s.swebench_mean));
    row("Failed turns", num(p.failed_turns) + " of " + num(p.issued_turns));
    var failedAudits = p.audits.filter(function (a) { return !a.passed; });
    row("Audits", p.audits.length ? (p.audits.length - failedAudits.length) + " of " + p.audits.length + " checks passed" +
      (failedAudits.length ? ' <span class="fail">(' + failedAudits.map(function (a) { return esc(a.check); }).join(", ") + " failed)</span>" : "")
      : "not reviewed");
    row("Added", esc(p.added) + (p.current ? "" : " — replaced by a later run"));
    return rows.join("");
  }
  function reasons(p) {
    return p.reasons.map(function (r) {
      return '<div class="why' + (p.verdict === "failed" ? "" : " research") + '">' + esc(r) + "</div>";
    }).join("");
  }
  // The point under the mouse: the nearest drawn point within 9 units of the chart.
  var CHARTS = {};
  function hitAt(e) {
    var svg = e.target.closest && e.target.closest(".chart svg");
    var chart = svg && CHARTS[svg.parentNode.id], m = svg && svg.getScreenCTM();
    if (!chart || !m) return null;
    var pt = svg.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    var q = pt.matrixTransform(m.inverse()), best = null, bd = 81;
    chart.hits.forEach(function (h) {
      var d = (h.x - q.x) * (h.x - q.x) + (h.y - q.y) * (h.y - q.y);
      if (d < bd) { bd = d; best = h; }
    });
    return best && { svg: svg, hit: best };
  }
  var ringed = null;
  document.addEventListener("mousemove", function (e) {
    var found = hitAt(e);
    if (ringed && (!found || ringed !== found.svg)) { ringed.querySelector(".hover-ring").setAttribute("visibility", "hidden"); ringed.style.cursor = ""; ringed = null; }
    if (!found) { tip.hidden = true; return; }
    var ring = found.svg.querySelector(".hover-ring");
    ring.setAttribute("cx", found.hit.x); ring.setAttribute("cy", found.hit.y); ring.setAttribute("visibility", "visible");
    found.svg.style.cursor = "pointer";
    ringed = found.svg;
    var p = PTS[found.hit.id], s = SYS[p.system];
    tip.innerHTML = '<h4><span class="swatch" style="background:' + s.color + '"></span>' + esc(s.name) + " · C=" + num(p.concurrency) +
      " " + badge(p.verdict) + "</h4><table>" + figures(p) + "</table>" + reasons(p);
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14, r = tip.getBoundingClientRect();
    if (x + r.width > innerWidth - 4) x = e.clientX - r.width - 14;
    if (y + r.height > innerHeight - 4) y = Math.max(4, innerHeight - r.height - 4);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  document.addEventListener("click", function (e) {
    var found = hitAt(e);
    if (found) { state.point = found.hit.id; render(); $("detail").scrollIntoView({ block: "nearest" }); return; }
    if (e.target.classList && e.target.classList.contains("close")) { state.point = ""; render(); }
  });
  function renderDetail() {
    var el = $("detail"), p = PTS[state.point];
    if (!p) { el.hidden = true; el.innerHTML = ""; return; }
    var s = SYS[p.system];
    var audits = p.audits.length ? "<h3>Review</h3><table><tr><th>Check</th><th>Result</th><th>Why</th></tr>" + p.audits.map(function (a) {
      return "<tr><td>" + esc(a.check) + "</td><td>" + (a.passed ? '<span class="pass">pass</span>' : '<span class="fail">FAIL</span>') +
        "</td><td>" + esc(a.reason) + "</td></tr>";
    }).join("") + "</table>" : "";
    el.hidden = false;
    el.innerHTML = '<button type="button" class="close" aria-label="close">close ✕</button><h2><span class="swatch" style="background:' + s.color + '"></span>' +
      esc(s.name) + " · C=" + num(p.concurrency) + " " + badge(p.verdict) + "</h2>" + reasons(p) +
      "<table>" + figures(p) +
      "<tr><td>Gates</td><td>" + esc(p.gates) + "</td></tr><tr><td>Target</td><td>" + (p.simulated ? "trajbench's simulator" : "a real inference server") + "</td></tr>" +
      "<tr><td>Run started</td><td>" + esc(p.started_at) + "</td></tr><tr><td>Run folder</td><td><code>" + esc(p.run) + "</code></td></tr>" +
      (p.seal ? "<tr><td>Seal</td><td><code>" + esc(p.seal) + "</code></td></tr>" : "") +
      "<tr><td>System</td><td>" + esc([s.model, accelerators(s), s.engine || "engine not given"].join(" · ")) +
      "<br>" + esc(s.description) + "</td></tr></table>" + audits +
      (p.page ? '<p><a id="run-page" href="' + esc(p.page) + '" target="_blank">Open the run\'s own report</a></p>' : '<p class="note">This run folder has no report of its own.</p>');
  }

  // ------------------------------------------------------------------ systems table
  $("systems").addEventListener("change", function (e) {
    var t = e.target;
    if (!t.dataset.pick) return;
    var list = state.pick.filter(function (id) { return id !== t.dataset.pick; });
    if (t.checked) list.push(t.dataset.pick);
    state.pick = list.sort();
    render();
  });
  function accelerators(s) {
    if (!s.accelerator) return s.accelerators == null ? "—" : s.accelerators + " × ?";
    return (s.accelerators == null ? "? × " : s.accelerators + " × ") + s.accelerator;
  }
  function renderTable(rows) {
    var head = "<thead><tr><th></th><th>System</th><th>Submitter</th><th>Model</th><th>Accelerators</th>" +
      "<th>Engine</th><th>Date</th><th>Points</th><th class=num>Peak tok/s</th>" +
      "<th class=num>SWE-bench</th><th class=num>$/h</th><th class=num>W</th></tr></thead>";
    var body = rows.map(function (s) {
      var cur = s.points.filter(function (p) { return p.current; }), by = {};
      cur.forEach(function (p) { by[p.verdict] = (by[p.verdict] || 0) + 1; });
      var ys = cur.filter(shown).map(yOf).filter(function (v) { return v != null; });
      var picked = state.pick.indexOf(s.id) >= 0;
      return '<tr class="' + (picked ? "picked" : "") + '" data-s="' + esc(s.id) + '"><td><input type="checkbox" data-pick="' + esc(s.id) + '"' + (picked ? " checked" : "") +
        ' aria-label="overlay ' + esc(s.name) + '"></td><td title="' + esc(s.description) + '"><span class="swatch" style="background:' + s.color + '"></span>' + esc(s.name) +
        "</td><td>" + esc(s.submitter || "—") + "</td><td>" + esc(s.model) + "</td><td>" + esc(accelerators(s)) + "</td><td>" + esc(s.engine || "—") + "</td><td>" + esc(s.date) + "</td><td>" +
        VERDICTS.filter(function (v) { return by[v]; }).map(function (v) { return badge(v) + " " + by[v]; }).join(" ") +
        "</td><td class=num>" + (ys.length ? num(Math.max.apply(null, ys)) : "—") + "</td><td class=num>" + pct(s.swebench_mean) +
        "</td><td class=num>" + num(s.price_per_hour, 2) + "</td><td class=num>" + num(s.power_watts) + "</td></tr>";
    }).join("");
    $("systems").innerHTML = head + "<tbody>" + body + "</tbody>";
  }

  // ------------------------------------------------------------------ banners
  // At most 8 systems by name in a note; the rest counted.
  function names(list, show) {
    var head = list.slice(0, 8).map(show).join("; ");
    return list.length > 8 ? head + "; and " + (list.length - 8) + " more (see the systems table)" : head;
  }
  function banners(systems) {
    var out = [];
    var models = {}, hashes = {};
    systems.forEach(function (s) { models[s.model] = true; (hashes[s.model] = hashes[s.model] || {})[s.dataset_hash] = true; });
    if (Object.keys(models).length > 1) {
      out.push('<div class="banner warn"><b>Systems of ' + Object.keys(models).length + " models are drawn</b> (" + esc(Object.keys(models).sort().join(", ")) +
        "): numbers of different models do not compare. Pick one model under Model.</div>");
    }
    Object.keys(hashes).sort().forEach(function (m) {
      if (Object.keys(hashes[m]).length > 1) {
        out.push('<div class="banner warn"><b>' + esc(m) + ": systems measured on different datasets</b> (manifest content hashes " +
          esc(Object.keys(hashes[m]).sort().map(function (h) { return h.slice(0, 12) + "…"; }).join(", ")) + "): their numbers do not compare.</div>");
      }
    });
    var pts = [];
    systems.forEach(function (s) { s.points.forEach(function (p) { if (p.current) pts.push(p); }); });
    var research = pts.filter(function (p) { return p.research && shown(p); });
    if (research.length) {
      out.push('<div class="banner research"><b>' + research.length + " research point(s) drawn</b> (◇, dashed frontiers tagged “research” on the chart): judged by research gates, " +
        "a user profile or trajbench's simulator — never official results.</div>");
    }
    var failed = pts.filter(function (p) { return p.verdict === "failed"; });
    if (failed.length && shown(failed[0])) {
      out.push('<div class="banner warn"><b>' + failed.length + " failed point(s) shown</b> (✕, tagged “failed”): an accuracy gate or the review failed them; " +
        "they never count on a frontier.</div>");
    } else if (failed.length) {
      out.push('<div class="banner info">' + failed.length + " point(s) that failed an accuracy gate or the review are hidden. Tick " + badge("failed") + " under Verdict to see them, marked.</div>");
    }
    if (state.norm !== "none") {
      var missing = systems.filter(function (s) { return !NORMS[state.norm].div(s); });
      if (missing.length) {
        out.push('<div class="banner info"><b>Not drawn ' + esc(NORMS[state.norm].label.toLowerCase()) + "</b> (" + NORMS[state.norm].missing + "): " +
          names(missing, function (s) { return esc(s.name) + " <span class=note>(" + esc(s.description) + ")</span>"; }) + ".</div>");
      }
    }
    if (METRICS[state.y].slo) {
      var none = systems.filter(function (s) { return !s.points.some(function (p) { return p.current && yOf(p) != null; }); });
      if (none.length && (state.norm === "none" || none.some(function (s) { return NORMS[state.norm].div(s); }))) {
        out.push('<div class="banner info"><b>No ' + esc(METRICS[state.y].label.toLowerCase()) + " under SLO " + esc(sloOf()) + "</b> for " +
          names(none, function (s) { return esc(s.name); }) + ": their runs were judged by another SLO or none. Goodput under different SLOs never shares a chart.</div>");
      }
    }
    $("banners").innerHTML = out.join("");
  }

  function legend() {
    function m(svg, t) { return "<span><svg width=14 height=14 viewBox='0 0 14 14'>" + svg + "</svg>" + t + "</span>"; }
    $("legend").innerHTML = [
      m("<circle cx=7 cy=7 r=4.3 fill='#555' stroke='#555'/>", "reviewed"),
      m("<circle cx=7 cy=7 r=4.3 fill='#fff' stroke='#555' stroke-width=1.8/>", "not reviewed"),
      m("<path d='M7,1.5l5.5,5.5l-5.5,5.5l-5.5,-5.5z' fill='#fff' stroke='#555' stroke-width=1.8/>", "research"),
      m("<path d='M2.5,2.5l9,9m0,-9l-9,9' stroke='#b42318' stroke-width=2.4/>", "failed"),
      m("<path d='M0,7H14' stroke='#555' stroke-width=2 stroke-dasharray='4,3'/>", "research frontier"),
    ].join("");
  }

  // ------------------------------------------------------------------ render
  function draw(id, chart) {
    $(id).innerHTML = chart.svg;
    CHARTS[id] = chart;
  }
  function render() {
    var systems = drawnSystems(), rows = filtered();
    state.pick.forEach(function (id) { if (SYS[id] && rows.indexOf(SYS[id]) < 0) rows.push(SYS[id]); });
    var norm = state.norm === "none" ? systems : systems.filter(function (s) { return NORMS[state.norm].div(s); });
    draw("pareto", pareto(norm));
    $("pareto-title").textContent = METRICS[state.y].label + (state.norm === "none" ? "" : " " + NORMS[state.norm].label.toLowerCase()) + " vs per-user speed";
    $("title-throughput").textContent = "System throughput" + (state.norm === "none" ? "" : " " + NORMS[state.norm].label.toLowerCase());
    var div = function (p) { var d = NORMS[state.norm].div(SYS[p.system]); return d ? p.throughput_tps / d : null; };
    draw("c-throughput", vsConcurrency(norm, div, "throughput (" + NORMS[state.norm].unit + ")"));
    draw("c-ttft90", vsConcurrency(systems, function (p) { return p.ttft_p90_ms; }, "TTFT p90 (ms)"));
    draw("c-ttft99", vsConcurrency(systems, function (p) { return p.ttft_p99_ms; }, "TTFT p99 (ms)"));
    draw("c-peruser", vsConcurrency(systems, function (p) { return p.per_user_tps; }, "per-user speed (tok/s)"));
    banners(systems);
    renderTable(rows);
    renderDetail();
    var drawnPts = 0;
    systems.forEach(function (s) { s.points.forEach(function (p) { if (p.current && shown(p)) drawnPts++; }); });
    var models = {};
    D.systems.forEach(function (s) { models[s.model] = true; });
    $("summary").textContent = D.systems.length + " systems · " + D.points.filter(function (p) { return p.current; }).length + " points · " +
      Object.keys(models).length + " model(s) — drawing " + systems.length + " system(s), " + drawnPts + " point(s)";
    document.body.setAttribute("data-drawn-systems", String(norm.length));
    saveState();
  }

  legend();
  renderFilters();
  render();
  // For tests and the benchmark: when the first view was in the DOM and when it was first
  // painted (ms from the navigation's start), the points each chart draws, and where one is.
  var api = window.trajbenchExplore = {
    drawnMs: performance.now(),
    paintedMs: null,
    drawn: function (chart) { return CHARTS[chart].hits.map(function (h) { return h.id; }).sort(); },
    at: function (chart, id) {
      var svg = $(chart).querySelector("svg"), hit = CHARTS[chart].hits.filter(function (h) { return h.id === id; })[0];
      if (!hit) return null;
      svg.scrollIntoView({ block: "center" });
      var pt = svg.createSVGPoint();
      pt.x = hit.x; pt.y = hit.y;
      var q = pt.matrixTransform(svg.getScreenCTM());
      return [q.x, q.y];
    },
  };
  document.body.setAttribute("data-ready", "1");
  requestAnimationFrame(function () { setTimeout(function () { api.paintedMs = performance.now(); document.body.setAttribute("data-painted", "1"); }, 0); });
})();

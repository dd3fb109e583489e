// genvdis explorer: learning curves as plain SVG, from the JSON that genvdis/explorer.py
// inlines beside this script. No library and no network: the page works from file://.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("explorer-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  // variants' colours: matplotlib's tab10 without the models' blue, red, green and the
  // crossover's orange
  const PALETTE = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  const MODELS = {};
  DATA.models.forEach((m) => { MODELS[m.name] = m; });
  const state = { panel: "all", xlog: true, models: {}, runs: {}, zoom: null };
  DATA.models.forEach((m) => { state.models[m.name] = true; });
  DATA.panels.forEach((p) => p.runs.forEach((r, i) => {
    r.base = i === 0;  // the paper panel (or the first run): shown; variants: off until ticked
    r.color = r.base ? null : PALETTE[(i - 1) % PALETTE.length];
    state.runs[r.id] = r.base;
  }));
  let clipCount = 0;

  // ------------------------------------------------------------------ small helpers
  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, attrs, text, parent) {
    const e = document.createElement(tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(x, d, signed) {
    if (x === null || x === undefined) return "—";
    const s = x.toFixed(d);
    return signed && x >= 0 ? "+" + s : s;
  }
  function fmtM(x) { return x === null ? "—" : (Math.abs(x - Math.round(x)) < 1e-9 ? String(Math.round(x)) : x.toFixed(1)); }
  function short(name) { return MODELS[name] ? MODELS[name].short : name; }
  function esc(text) {  // titles come from configs: text, never markup, in a tooltip
    return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }
  function swatch(color, dash, parent) {
    const s = svg("svg", { class: "swatch", width: 26, height: 10 }, parent);
    svg("line", { x1: 1, y1: 5, x2: 25, y2: 5, stroke: color, "stroke-width": 2, "stroke-dasharray": dash || "" }, s);
    return s;
  }
  function crossText(c) { return "crossover m = " + fmtM(c.m) + " [" + fmtM(c.lo) + ", " + fmtM(c.hi) + "]"; }

  // ------------------------------------------------------------------ scales and ticks
  function scale(d0, d1, r0, r1, log) {
    const f = log ? Math.log : (v) => v;
    const a = f(d0), b = f(d1);
    const s = (v) => r0 + (f(v) - a) / (b - a) * (r1 - r0);
    s.invert = (p) => { const v = a + (p - r0) / (r1 - r0) * (b - a); return log ? Math.exp(v) : v; };
    return s;
  }
  function niceTicks(lo, hi, n) {
    const raw = (hi - lo) / n;
    if (!(raw > 0)) return [lo];
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    const step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
    const out = [];
    for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) out.push(+(k * step).toPrecision(12));
    return out;
  }
  function logTicks(lo, hi) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const f of [1, 2, 5]) {
        const v = f * Math.pow(10, e);
        if (v >= lo && v <= hi) out.push(+v.toPrecision(12));
      }
    }
    return out.length >= 3 ? out : niceTicks(lo, hi, 4).filter((v) => v > 0);
  }
  function extent(values, fallback) {
    const v = values.filter((x) => x !== null && Number.isFinite(x));
    return v.length ? [Math.min(...v), Math.max(...v)] : fallback;
  }
  function pad(lo, hi, frac) {
    const span = hi - lo || Math.abs(hi) || 1;
    return [lo - frac * span, hi + frac * span];
  }
  function xDomain(runs) {
    if (state.zoom && state.panel !== "all") return state.zoom.slice();
    const ms = [];
    runs.forEach((r) => r.curves.forEach((c) => ms.push(...c.m)));
    const [lo, hi] = extent(ms, [1, 10]);
    if (state.xlog) return lo === hi ? [lo / 1.5, hi * 1.5] : [lo / 1.08, hi * 1.08];
    const [a, b] = pad(lo, hi, 0.03);
    return [Math.max(a, 0), b];
  }

  // ------------------------------------------------------------------ one plot
  // spec: {cls, w, h, small, xd, ylabel, zero, shade, crosses, traces: [{model, run, color,
  // dash, pts: [{m, y, lo, hi, tip}]}]}; the y range fits what is visible in the x range.
  function plot(spec) {
    const M = spec.small ? { l: 46, r: 8, t: 6, b: 26 } : { l: 54, r: 12, t: 8, b: 36 };
    const root = svg("svg", { class: "plot " + spec.cls, viewBox: "0 0 " + spec.w + " " + spec.h, width: spec.w, height: spec.h });
    const x = scale(spec.xd[0], spec.xd[1], M.l, spec.w - M.r, state.xlog);
    const inX = (m) => m >= spec.xd[0] && m <= spec.xd[1];
    const ys = [];
    spec.traces.forEach((t) => t.pts.forEach((p) => { if (inX(p.m)) ys.push(p.y, p.lo, p.hi); }));
    if (spec.zero) ys.push(0);
    const [ylo, yhi] = pad(...extent(ys, [0, 1]), 0.06);
    const y = scale(ylo, yhi, spec.h - M.b, M.t, false);
    const id = "clip" + (++clipCount);
    svg("rect", { x: M.l, y: M.t, width: spec.w - M.l - M.r, height: spec.h - M.t - M.b }, svg("clipPath", { id: id }, root));
    axes(root, spec, M, x, y);
    const body = svg("g", { "clip-path": "url(#" + id + ")" }, root);
    const hits = [];
    if (spec.shade) {
      const a = x(spec.shade[0]), b = x(spec.shade[1]);
      svg("rect", { class: "separable", x: a, y: M.t, width: Math.max(b - a, 2), height: spec.h - M.t - M.b }, body);
    }
    if (spec.zero) svg("line", { class: "zero", x1: M.l, x2: spec.w - M.r, y1: y(0), y2: y(0) }, body);
    spec.crosses.forEach((c) => {
      if (c.lo !== null && c.hi !== null) {
        svg("rect", { class: "cross-band", x: x(c.lo), y: M.t, width: Math.max(x(c.hi) - x(c.lo), 1), height: spec.h - M.t - M.b }, body);
      }
      svg("line", { class: "cross", x1: x(c.m), x2: x(c.m), y1: M.t, y2: spec.h - M.b, style: "stroke:" + c.color }, body);
      hits.push({ px: x(c.m), py: M.t + 10, tip: c.tip });
    });
    // baselines first (under every curve), then variants, so that the base run's curves stay
    // on top where they coincide
    const under = (t) => (t.baseline ? 0 : t.base ? 2 : 1);
    const order = spec.traces.slice().sort((a, b) => under(a) - under(b));
    order.forEach((t) => drawTrace(body, t, x, y, hits, spec.small));
    hover(root, hits, x, M, spec);
    return root;
  }

  function axes(root, spec, M, x, y) {
    const g = svg("g", { class: "axis" }, root);
    const bottom = spec.h - M.b;
    const xt = state.xlog ? logTicks(spec.xd[0], spec.xd[1]) : niceTicks(spec.xd[0], spec.xd[1], spec.small ? 4 : 8);
    xt.forEach((v) => {
      svg("line", { class: "gridline", x1: x(v), x2: x(v), y1: M.t, y2: bottom }, g);
      svg("text", { x: x(v), y: bottom + 13, "text-anchor": "middle" }, g).textContent = v;
    });
    const [y0, y1] = [y.invert(bottom), y.invert(M.t)];
    niceTicks(y0, y1, spec.small ? 4 : 7).forEach((v) => {
      svg("line", { class: "gridline", x1: M.l, x2: spec.w - M.r, y1: y(v), y2: y(v) }, g);
      svg("text", { x: M.l - 4, y: y(v) + 4, "text-anchor": "end" }, g).textContent = +v.toPrecision(6);
    });
    svg("path", { d: "M" + M.l + "," + M.t + "V" + bottom + "H" + (spec.w - M.r), fill: "none" }, g);
    const xl = "m (training-set size)" + (state.xlog ? ", log scale" : "");
    svg("text", { x: (M.l + spec.w - M.r) / 2, y: spec.h - 3, "text-anchor": "middle" }, g).textContent = xl;
    svg("text", { transform: "translate(10," + (M.t + bottom) / 2 + ") rotate(-90)", "text-anchor": "middle" }, g).textContent = spec.ylabel;
  }

  function drawTrace(body, t, x, y, hits, small) {
    const g = svg("g", { class: "trace" + (t.baseline ? " baseline" : ""), "data-model": t.model, "data-run": t.run }, body);
    // a baseline is a reference line: thin, small dots, no band
    const banded = t.baseline ? [] : t.pts.filter((p) => p.lo !== null && p.hi !== null);
    if (banded.length) {
      const up = banded.map((p) => x(p.m) + "," + y(p.hi));
      const down = banded.slice().reverse().map((p) => x(p.m) + "," + y(p.lo));
      svg("path", { class: "band", d: "M" + up.concat(down).join("L") + "Z", fill: t.color }, g);
    }
    const d = t.pts.filter((p) => p.y !== null).map((p) => x(p.m) + "," + y(p.y)).join("L");
    if (d) svg("path", { class: "line", d: "M" + d, stroke: t.color, "stroke-dasharray": t.dash }, g);
    t.pts.forEach((p) => {
      if (p.y === null) return;
      const r = t.baseline ? (small ? 1.2 : 1.8) : (small ? 2.2 : 3.2);
      svg("circle", { class: "pt", cx: x(p.m), cy: y(p.y), r: r, fill: t.color }, g);
      hits.push({ px: x(p.m), py: y(p.y), tip: p.tip });
    });
  }

  // ------------------------------------------------------------------ hover and zoom
  const tooltip = document.getElementById("tooltip");
  function toSvg(root, e, spec) {
    const r = root.getBoundingClientRect();
    return [(e.clientX - r.left) * spec.w / r.width, (e.clientY - r.top) * spec.h / r.height];
  }
  let brush = null;  // a drag across one plot: {root, spec, x, M, x0, rect}
  function brushEdges(e) {
    const [sx] = toSvg(brush.root, e, brush.spec);
    const right = brush.spec.w - brush.M.r;
    return [Math.max(brush.M.l, Math.min(brush.x0, sx)), Math.min(right, Math.max(brush.x0, sx))];
  }
  window.addEventListener("mouseup", (e) => {
    if (!brush) return;
    const [a, b] = brushEdges(e), x = brush.x;
    brush.rect.remove();
    brush = null;
    if (b - a > 4) { state.zoom = [x.invert(a), x.invert(b)]; render(); }
  });
  function showTip(hits, sx, sy, e) {
    let best = null, bestD = 20 * 20;
    hits.forEach((h) => {
      const d = (h.px - sx) * (h.px - sx) + (h.py - sy) * (h.py - sy);
      if (d < bestD) { best = h; bestD = d; }
    });
    if (!best) { tooltip.hidden = true; return; }
    tooltip.innerHTML = best.tip;
    tooltip.hidden = false;
    const w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    tooltip.style.left = Math.min(e.clientX + 14, window.innerWidth - w - 4) + "px";
    tooltip.style.top = Math.min(e.clientY + 14, window.innerHeight - h - 4) + "px";
  }
  function hover(root, hits, x, M, spec) {
    root.addEventListener("mousemove", (e) => {
      const [sx, sy] = toSvg(root, e, spec);
      if (brush && brush.root === root) {
        const [a, b] = brushEdges(e);
        brush.rect.setAttribute("x", a);
        brush.rect.setAttribute("width", Math.max(b - a, 0));
      }
      showTip(hits, sx, sy, e);
    });
    root.addEventListener("mouseleave", () => { tooltip.hidden = true; });
    if (spec.small) return;  // zoom in the single-panel view only
    root.addEventListener("mousedown", (e) => {
      const [sx] = toSvg(root, e, spec);
      const rect = svg("rect", { class: "brush", x: sx, y: M.t, width: 0, height: spec.h - M.t - M.b }, root);
      brush = { root: root, spec: spec, x: x, M: M, x0: sx, rect: rect };
      e.preventDefault();
    });
    root.addEventListener("dblclick", () => { state.zoom = null; render(); });
  }

  // ------------------------------------------------------------------ traces of a panel
  function runTag(r) { return r.base ? "" : " · " + r.label; }
  // a variant's colour marks its curves of the base's models; a model the base lacks (a
  // third model) keeps its own colour
  function curveTraces(p, runs) {
    const inBase = new Set(p.runs[0].curves.map((c) => c.model));
    const out = [];
    runs.forEach((r) => r.curves.forEach((c) => {
      if (!state.models[c.model]) return;
      const st = MODELS[c.model];
      const pts = c.m.map((m, i) => ({
        m: m, y: c.mean[i], lo: c.lo[i], hi: c.hi[i],
        tip: "<b>" + esc(st.label) + "</b>" + esc(runTag(r)) + "<br>m = " + m + ": error " + fmt(c.mean[i], 4) +
          "<br>95% interval [" + fmt(c.lo[i], 4) + ", " + fmt(c.hi[i], 4) + "]<br>" + c.n[i] + " splits" +
          (c.sep && c.sep[i] !== null ? "<br>LR training sets separable: " + fmt(100 * c.sep[i], 1) + "%" : ""),
      }));
      const color = r.base || !inBase.has(c.model) ? st.color : r.color;
      out.push({ model: c.model, run: r.id, base: r.base, baseline: st.baseline, color: color, dash: st.dash, label: st.label + runTag(r), pts: pts });
    }));
    return out;
  }
  function diffTraces(runs) {
    return runs.filter((r) => r.diff).map((r) => {
      const d = r.diff, name = short(d.a) + " − " + short(d.b);
      const pts = d.m.map((m, i) => {
        const sig = d.lo[i] > 0 ? short(d.b) + " significantly better" : d.hi[i] < 0 ? short(d.a) + " significantly better" : "not significant";
        return {
          m: m, y: d.mean[i], lo: d.lo[i], hi: d.hi[i],
          tip: "<b>" + esc(name) + "</b> (paired)" + esc(runTag(r)) + "<br>m = " + m + ": " + fmt(d.mean[i], 4, true) +
            "<br>95% interval [" + fmt(d.lo[i], 4, true) + ", " + fmt(d.hi[i], 4, true) + "]<br>" + d.n[i] +
            " paired splits<br>" + esc(sig),
        };
      });
      return { model: "difference", run: r.id, base: r.base, color: r.color || "#333", dash: "", label: name + runTag(r), pts: pts };
    });
  }
  function crosses(runs) {
    return runs.filter((r) => r.crossover).map((r) => ({
      m: r.crossover.m, lo: r.crossover.lo, hi: r.crossover.hi, color: r.color || "#e07b00",
      tip: "<b>" + crossText(r.crossover) + "</b>" + esc(runTag(r)) + "<br>95% bootstrap interval over splits",
    }));
  }

  // ------------------------------------------------------------------ one panel's figure
  function facts(p) {
    const r = p.runs[0], bits = [];
    if (p.panel !== null) bits.push("panel " + p.panel);
    if (p.n_rows !== null) bits.push("n = " + p.n_rows);
    if (r.splits) bits.push(r.splits + " splits per m");
    if (r.verdict) bits.push(r.verdict);
    if (r.crossover) bits.push(crossText(r.crossover));
    return bits.join(" · ");
  }
  function variantToggles(p, parent) {
    if (p.runs.length < 2) return;
    const box = html("div", { class: "variants" }, null, parent);
    p.runs.forEach((r) => {
      const lab = html("label", { title: r.settings || "the base run" }, null, box);
      const input = html("input", { type: "checkbox", id: "run-" + r.id, "data-run": r.id }, null, lab);
      input.checked = state.runs[r.id];
      input.addEventListener("change", () => { state.runs[r.id] = input.checked; render(); });
      if (r.color) swatch(r.color, "", lab);
      lab.appendChild(document.createTextNode(" " + r.label + (r.base ? " (base)" : "")));
      if (r.settings) html("span", { class: "settings" }, " (" + r.settings + ")", lab);
    });
  }
  function figure(p, single) {
    const fig = html("section", { class: "figure", id: "fig-" + p.id, "data-panel": p.id });
    const h2 = html("h2", {}, null, fig);
    html("a", { href: "#" + encodeURIComponent(p.id) }, (p.panel !== null ? p.panel + ". " : "") + p.title, h2);
    html("div", { class: "facts" }, facts(p), fig);
    variantToggles(p, fig);
    const runs = p.runs.filter((r) => state.runs[r.id]);
    const xd = xDomain(runs.length ? runs : p.runs);
    const shaded = runs.find((r) => r.separable);
    const size = single ? { w: 900, h: 420, d: 230 } : { w: 340, h: 200, d: 110 };
    const common = { w: size.w, small: !single, xd: xd, shade: shaded ? shaded.separable : null, crosses: crosses(runs) };
    const curves = curveTraces(p, runs);
    fig.appendChild(plot(Object.assign({ cls: "curves", h: size.h, ylabel: "error", zero: false, traces: curves }, common)));
    const diffs = diffTraces(runs);
    if (diffs.length) {
      const yl = single ? "paired difference " + diffs[0].label.split(" · ")[0] : "difference";
      fig.appendChild(plot(Object.assign({ cls: "diffs", h: size.d, ylabel: yl, zero: true, traces: diffs }, common)));
    }
    runs.filter((r) => !r.diff).forEach((r) => {
      html("p", { class: "missing" }, r.label + ": no paired differences (differences.csv comes from `genvdis report` on its errors.csv)", fig);
    });
    if (single) legend(curves.concat(diffs), fig);
    return fig;
  }
  function legend(traces, parent) {
    const box = html("div", { class: "legend" }, null, parent);
    traces.forEach((t) => {
      const lab = html("span", {}, null, box);
      swatch(t.color, t.dash, lab);
      lab.appendChild(document.createTextNode(t.label));
    });
  }

  // ------------------------------------------------------------------ the page
  function render() {
    tooltip.hidden = true;
    const main = document.getElementById("plots");
    main.textContent = "";
    const single = state.panel !== "all";
    main.className = single ? "single" : "grid";
    if (!DATA.panels.length) {
      main.textContent = "No runs (folders with summary.csv) in this results folder.";
      return;
    }
    const shown = single ? DATA.panels.filter((p) => p.id === state.panel) : DATA.panels;
    shown.forEach((p) => main.appendChild(figure(p, single)));
  }
  function fromHash() {
    const id = decodeURIComponent(location.hash.slice(1));
    const next = DATA.panels.some((p) => p.id === id) ? id : "all";
    if (next !== state.panel) state.zoom = null;
    state.panel = next;
    document.getElementById("panel").value = next;
    render();
  }
  function controls() {
    const select = document.getElementById("panel");
    html("option", { value: "all" }, "All panels (small multiples)", select);
    DATA.panels.forEach((p) => {
      const extra = p.runs.length > 1 ? " (+" + (p.runs.length - 1) + " variant" + (p.runs.length > 2 ? "s" : "") + ")" : "";
      html("option", { value: p.id }, (p.panel !== null ? p.panel + ". " : "") + p.title + extra, select);
    });
    select.addEventListener("change", () => { location.hash = select.value === "all" ? "" : encodeURIComponent(select.value); });
    window.addEventListener("hashchange", fromHash);
    document.querySelectorAll("input[name=xscale]").forEach((input) => input.addEventListener("change", () => {
      state.xlog = document.getElementById("x-log").checked;
      state.zoom = null;
      render();
    }));
    const box = document.getElementById("models");
    html("span", {}, "models", box);
    DATA.models.forEach((m) => {
      const lab = html("label", {}, null, box);
      const input = html("input", { type: "checkbox", id: "model-" + m.name, "data-model": m.name }, null, lab);
      input.checked = true;
      input.addEventListener("change", () => { state.models[m.name] = input.checked; render(); });
      swatch(m.color, m.dash, lab);
      lab.appendChild(document.createTextNode(m.label));
    });
  }

  controls();
  fromHash();
  document.body.dataset.ready = "1";
  window.explorerRenderedAt = performance.now();
})();

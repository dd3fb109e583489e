// genvdis study explorer: every dataset's learning curves as small multiples and the crossover
// m* against d, as plain SVG from the JSON that genvdis/report/study.py inlines beside this
// script. No library and no network: the page works from file://.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("study-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const GROUP_COLOUR = {};
  DATA.groups.forEach((g, i) => { GROUP_COLOUR[g] = DATA.group_colours[i]; });
  const tooltip = document.getElementById("tooltip");

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
  function fmt(x, d) { return x === null || x === undefined ? "—" : x.toFixed(d); }
  function fmtM(x) {
    if (x === null || x === undefined) return "—";
    return Math.abs(x - Math.round(x)) < 1e-9 ? String(Math.round(x)) : x.toFixed(1);
  }
  function logScale(d0, d1, r0, r1) {
    const a = Math.log(d0), b = Math.log(d1 > d0 ? d1 : d0 * 2);
    return (v) => r0 + (Math.log(v) - a) / (b - a) * (r1 - r0);
  }
  function linScale(d0, d1, r0, r1) {
    const span = d1 > d0 ? d1 - d0 : 1;
    return (v) => r0 + (v - d0) / span * (r1 - r0);
  }
  function logTicks(lo, hi) {  // 1, 2, 5 x powers of ten inside [lo, hi]
    const out = [];
    for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
      [1, 2, 5].forEach((k) => { const v = k * Math.pow(10, p); if (v >= lo && v <= hi) out.push(v); });
    }
    return out;
  }
  function path(xs, ys) {
    return xs.map((x, i) => (i ? "L" : "M") + x.toFixed(1) + "," + ys[i].toFixed(1)).join("");
  }
  function showTip(text, ev) {
    tooltip.textContent = text;
    tooltip.hidden = false;
    tooltip.style.left = (ev.clientX + 12) + "px";
    tooltip.style.top = (ev.clientY + 12) + "px";
  }
  function hideTip() { tooltip.hidden = true; }

  // ------------------------------------------------------------------ m* against d
  function drawScatter() {
    const root = document.getElementById("scatter");
    const pts = DATA.datasets.filter((s) => s.m_star !== null && s.d !== null && s.d > 0);
    const fit = DATA.fit;
    const note = document.getElementById("fit-note");
    note.textContent = pts.length + " of " + DATA.datasets.length + " datasets have a crossover." +
      (fit.slope === null ? " Too few for a slope." :
        " Slope of log m* on log d: " + fmt(fit.slope, 2) + " (95% bootstrap interval " +
        fmt(fit.ci_low, 2) + " to " + fmt(fit.ci_high, 2) + ", " + fit.n + " datasets).");
    if (!pts.length) {
      svg("text", { x: 320, y: 200, "text-anchor": "middle" }, root).textContent = "no dataset has a crossover";
      return;
    }
    const W = 640, H = 400, L = 56, R = 16, T = 12, B = 40;
    const ds = pts.map((s) => s.d), ms = pts.map((s) => s.m_star);
    pts.forEach((s) => { if (s.m_lo) ms.push(s.m_lo); if (s.m_hi) ms.push(s.m_hi); });
    const dlo = Math.min(...ds) / 1.5, dhi = Math.max(...ds) * 1.5;
    const mlo = Math.min(...ms) / 1.5, mhi = Math.max(...ms) * 1.5;
    const x = logScale(dlo, dhi, L, W - R), y = logScale(mlo, mhi, H - B, T);
    const axes = svg("g", { class: "axes" }, root);
    logTicks(dlo, dhi).forEach((v) => {
      svg("line", { class: "gridline", x1: x(v), x2: x(v), y1: T, y2: H - B }, axes);
      svg("text", { x: x(v), y: H - B + 14, "text-anchor": "middle" }, axes).textContent = String(v);
    });
    logTicks(mlo, mhi).forEach((v) => {
      svg("line", { class: "gridline", x1: L, x2: W - R, y1: y(v), y2: y(v) }, axes);
      svg("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end" }, axes).textContent = String(v);
    });
    svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }, axes);
    svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }, axes);
    svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, axes).textContent = "d (columns logistic regression sees)";
    svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" }, axes).textContent = "crossover m*";
    if (fit.slope !== null) {
      const a = Math.min(...ds), b = Math.max(...ds);
      const f = (v) => Math.exp(fit.intercept) * Math.pow(v, fit.slope);
      svg("path", { class: "fit", d: path([x(a), x(b)], [y(f(a)), y(f(b))]) }, root);
    }
    const layer = svg("g", { class: "points" }, root);
    pts.forEach((s) => {
      if (s.m_lo && s.m_hi) {
        svg("line", { class: "whisker", x1: x(s.d), x2: x(s.d), y1: y(s.m_lo), y2: y(s.m_hi) }, layer);
      }
      const c = svg("circle", { class: "pt " + (s.panel ? "panel" : "other"), cx: x(s.d), cy: y(s.m_star), r: 5, "data-name": s.name }, layer);
      const text = s.name + (s.panel ? " (Figure 1 panel " + s.panel + ")" : "") +
        "\nd = " + s.d + ", n = " + s.n + "\nm* = " + fmtM(s.m_star) +
        " [" + fmtM(s.m_lo) + ", " + fmtM(s.m_hi) + "]\n" + s.verdict;
      c.addEventListener("mousemove", (ev) => { c.classList.add("hover"); showTip(text, ev); });
      c.addEventListener("mouseleave", () => { c.classList.remove("hover"); hideTip(); });
    });
  }

  // ------------------------------------------------------------------ small multiples
  function drawMultiple(s) {
    const box = html("div", { class: "multiple", "data-name": s.name, id: "ds-" + s.name });
    const head = html("h3", { title: s.title }, null, box);
    html("span", { class: "verdict", style: "background:" + GROUP_COLOUR[s.group] }, null, head);
    head.appendChild(document.createTextNode(s.name + (s.panel ? " (panel " + s.panel + ")" : "")));
    html("div", { class: "facts" }, "n " + (s.n === null ? "—" : s.n) + " · d " +
      (s.d === null ? "—" : s.d) + " · " + s.verdict +
      (s.m_star !== null ? " · m* " + fmtM(s.m_star) : ""), box);
    const W = 220, H = 130, L = 30, R = 6, T = 6, B = 18;
    const root = svg("svg", { class: "plot", viewBox: "0 0 " + W + " " + H }, box);
    const curves = ["nb", "lr", "majority"].filter((k) => s.curves[k]);
    const all = curves.flatMap((k) => s.curves[k].m.map((m, i) => [m, s.curves[k].mean[i]]))
      .filter((p) => p[1] !== null);
    if (!all.length) return box;
    const mlo = Math.min(...all.map((p) => p[0])), mhi = Math.max(...all.map((p) => p[0]));
    const elo = Math.min(...all.map((p) => p[1])), ehi = Math.max(...all.map((p) => p[1]));
    const pad = (ehi - elo) * 0.08 || 0.01;
    const x = logScale(mlo, mhi, L, W - R), y = linScale(elo - pad, ehi + pad, H - B, T);
    svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }, root);
    svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }, root);
    [elo, ehi].forEach((v) => {
      svg("text", { x: L - 3, y: y(v) + 3, "text-anchor": "end" }, root).textContent = v.toFixed(2);
    });
    [mlo, mhi].forEach((v, i) => {
      svg("text", { x: x(v), y: H - 5, "text-anchor": i ? "end" : "start" }, root).textContent = String(v);
    });
    if (s.m_star !== null && s.m_star >= mlo && s.m_star <= mhi) {
      svg("line", { class: "cross", x1: x(s.m_star), x2: x(s.m_star), y1: T, y2: H - B }, root);
    }
    curves.forEach((k) => {
      const c = s.curves[k];
      const keep = c.mean.map((v, i) => i).filter((i) => c.mean[i] !== null);
      const d = path(keep.map((i) => x(c.m[i])), keep.map((i) => y(c.mean[i])));
      const attrs = { d: d, class: k === "majority" ? "majority" : "line", "data-model": k };
      if (k !== "majority") {
        attrs.stroke = DATA.colours[k];
        if (k === "lr") attrs["stroke-dasharray"] = "5 3";
      }
      svg("path", attrs, root);
    });
    return box;
  }

  function key(s, by) {
    if (by === "verdict") return DATA.groups.indexOf(s.group);
    return s[by];
  }
  function sortGrid() {
    const by = document.getElementById("sort").value;
    const down = document.getElementById("descending").checked;
    const grid = document.getElementById("grid");
    const order = DATA.datasets.slice().sort((a, b) => {
      const ka = key(a, by), kb = key(b, by);
      if (ka === null && kb === null) return a.name < b.name ? -1 : 1;
      if (ka === null) return 1;  // missing values last, either way
      if (kb === null) return -1;
      if (ka !== kb) return (ka < kb ? -1 : 1) * (down ? -1 : 1);
      return a.name < b.name ? -1 : 1;
    });
    order.forEach((s) => grid.appendChild(document.getElementById("ds-" + s.name)));
  }

  function legend() {
    const box = document.getElementById("legend");
    [["naive Bayes", DATA.colours.nb, ""], ["logistic regression", DATA.colours.lr, "5 3"],
     ["majority class", "#7f7f7f", ""]].forEach(([label, colour, dash]) => {
      const span = html("span", {}, null, box);
      const sw = svg("svg", { class: "swatch", width: 26, height: 10 }, span);
      svg("line", { x1: 1, y1: 5, x2: 25, y2: 5, stroke: colour, "stroke-width": label === "majority class" ? 1 : 2, "stroke-dasharray": dash }, sw);
      span.appendChild(document.createTextNode(label));
    });
    DATA.groups.forEach((g) => {  // the dot before each dataset's name: its verdict
      const span = html("span", { class: "group" }, null, box);
      html("span", { class: "verdict", style: "background:" + GROUP_COLOUR[g] }, null, span);
      span.appendChild(document.createTextNode(g));
    });
  }

  drawScatter();
  legend();
  const grid = document.getElementById("grid");
  DATA.datasets.forEach((s) => grid.appendChild(drawMultiple(s)));
  document.getElementById("sort").addEventListener("change", sortGrid);
  document.getElementById("descending").addEventListener("change", sortGrid);
  document.body.dataset.ready = "1";
})();

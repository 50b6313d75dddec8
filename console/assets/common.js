// Helpers shared by weir's console and simulator: building elements, the
// formats the pages use (the tests format the same way in Go), and a small
// SVG line chart with axes. No library: plain modern JavaScript.

export const SVGNS = "http://www.w3.org/2000/svg";

// The palette of the simulator, and colours for partitions.
export const C = {
  ink: "#1d2b4f", teal: "#2a9d8f", tomato: "#e4572e", mustard: "#f2b134", muted: "#8a8f9e",
  grid: "#d9cfbd", white: "#fffdf8", indigo: "#3d5a98", plum: "#8e5ea2",
};
export const PARTITION_COLORS = ["#2a9d8f", "#3d5a98", "#e08a00", "#8e5ea2", "#c2452a", "#4f8f3a", "#b0508a", "#5f6b7a"];

// mtime.MinTime and mtime.MaxTime: "no watermark yet" and "end of input".
export const MIN_TIME = -62135596800000;
export const MAX_TIME = 253402300799999;

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h builds an HTML element: h("td", {class: "num"}, "12").
export function h(tag, attrs, ...children) { return build(document.createElement(tag), attrs, children); }

// s builds an SVG element.
export function s(tag, attrs, ...children) { return build(document.createElementNS(SVGNS, tag), attrs, children); }

export const $ = id => document.getElementById(id);

// setText sets an element's text (only when it changes, so selections stay).
export function setText(id, text) {
  const el = typeof id === "string" ? $(id) : id;
  if (el && el.textContent !== text) el.textContent = text;
}

// tenths formats n / unit with one decimal, rounding half up, from integers:
// tenths(2350, 1000) is "2.4". Integer arithmetic, so that Go can format
// the same way exactly.
export function tenths(n, unit) {
  const t = Math.floor((n * 10 + unit / 2) / unit);
  return `${Math.floor(t / 10)}.${t % 10}`;
}

// secs formats seconds (a number of milliseconds / 1000) with one decimal.
export function secs(x) {
  const ms = Math.round(x * 1000);
  return ms < 0 ? "-" + tenths(-ms, 1000) : tenths(ms, 1000);
}

// isoShort turns "2025-01-01T00:00:02.999Z" into "2025-01-01 00:00:02.999".
export function isoShort(iso) { return String(iso).replace("T", " ").replace(/Z$/, ""); }

// fmtTime formats an instant in milliseconds (UTC).
export function fmtTime(ms) {
  if (ms === null || ms === undefined || ms <= MIN_TIME) return "none";
  if (ms >= MAX_TIME) return "end of input";
  return isoShort(new Date(ms).toISOString());
}

// fmtSpan formats a window from its bounds as the panes give them, without
// the date of its end when it is that of its start, and without
// milliseconds when both bounds are whole seconds.
export function fmtSpan(start, end) {
  let a = isoShort(start), b = isoShort(end);
  if (a.endsWith(".000") && b.endsWith(".000")) { a = a.slice(0, -4); b = b.slice(0, -4); }
  return a.slice(0, 10) === b.slice(0, 10) ? `${a} → ${b.slice(11)}` : `${a} → ${b}`;
}

// fmtDuration formats milliseconds for a person.
export function fmtDuration(ms) {
  if (ms < 0) return "-" + fmtDuration(-ms);
  if (ms < 60000) return tenths(ms, 1000) + " s";
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

// fmtBytes formats a size in bytes.
export function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return tenths(n, 1024) + " KiB";
  if (n < 1024 ** 3) return tenths(n, 1024 ** 2) + " MiB";
  return tenths(n, 1024 ** 3) + " GiB";
}

// niceTicks returns about n round numbers between lo and hi.
export function niceTicks(lo, hi, n = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(v => v >= raw) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800]
  .map(x => x * 1000);

// timeTicks returns about n round instants (ms) between lo and hi.
export function timeTicks(lo, hi, n = 5) {
  if (!(hi > lo)) return [lo];
  const step = TIME_STEPS.find(st => (hi - lo) / st <= n) || TIME_STEPS[TIME_STEPS.length - 1];
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
}

// clock formats an instant as a time of day (UTC), for axes.
export function clock(ms, withMs = false) {
  const iso = new Date(ms).toISOString();
  return withMs ? iso.slice(11, 23) : iso.slice(11, 19);
}

// lineChart draws series of [x, y] points with axes, grid lines and titles.
//   series: [{name, color, points, width, dash, step, dots}]
//   x, y: {domain: [lo, hi], ticks(lo, hi), format(v), title}
//   markers: [{x, y, r, color, label, anchor, class}]
export function lineChart(o) {
  const W = o.width || 640, H = o.height || 240;
  const m = Object.assign({top: 12, right: 16, bottom: 40, left: 64}, o.margin);
  const pts = o.series.flatMap(se => se.points);
  const ext = (i, d) => {
    if (d) return d.slice();
    const vs = pts.map(p => p[i]).concat((o.markers || []).map(mk => i ? mk.y : mk.x));
    return vs.length ? [Math.min(...vs), Math.max(...vs)] : [0, 1];
  };
  let [x0, x1] = ext(0, o.x.domain), [y0, y1] = ext(1, o.y.domain);
  if (x1 <= x0) { x0 -= o.x.pad || 1; x1 += o.x.pad || 1; }
  if (y1 <= y0) { y0 -= o.y.pad || 1; y1 += o.y.pad || 1; }
  const X = v => m.left + ((v - x0) / (x1 - x0)) * (W - m.left - m.right);
  const Y = v => H - m.bottom - ((v - y0) / (y1 - y0)) * (H - m.top - m.bottom);
  const xt = (o.x.ticks || niceTicks)(x0, x1), yt = (o.y.ticks || niceTicks)(y0, y1);
  const fx = o.x.format || String, fy = o.y.format || String;
  const kids = [];
  kids.push(s("g", {class: "grid"}, yt.map(v => s("line", {x1: m.left, x2: W - m.right, y1: Y(v), y2: Y(v)}))));
  kids.push(s("g", {class: "axis"},
    s("line", {x1: m.left, x2: W - m.right, y1: H - m.bottom, y2: H - m.bottom}),
    s("line", {x1: m.left, x2: m.left, y1: m.top, y2: H - m.bottom}),
    xt.map(v => [s("line", {x1: X(v), x2: X(v), y1: H - m.bottom, y2: H - m.bottom + 4}),
      s("text", {x: X(v), y: H - m.bottom + 16, "text-anchor": "middle"}, fx(v))]),
    yt.map(v => [s("line", {x1: m.left - 4, x2: m.left, y1: Y(v), y2: Y(v)}),
      s("text", {x: m.left - 7, y: Y(v) + 4, "text-anchor": "end"}, fy(v))])));
  if (o.x.title) kids.push(s("text", {class: "axis-title", x: (m.left + W - m.right) / 2, y: H - 6, "text-anchor": "middle"}, o.x.title));
  if (o.y.title) {
    const cy = (m.top + H - m.bottom) / 2;
    kids.push(s("text", {class: "axis-title", x: 12, y: cy, "text-anchor": "middle", transform: `rotate(-90 12 ${cy})`}, o.y.title));
  }
  for (const se of o.series) {
    if (!se.points.length) continue;
    let d = "";
    se.points.forEach((p, i) => {
      if (i === 0) d += `M${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`;
      else if (se.step) d += `H${X(p[0]).toFixed(1)}V${Y(p[1]).toFixed(1)}`;
      else d += `L${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`;
    });
    kids.push(s("path", {d, fill: "none", stroke: se.color, "stroke-width": se.width || 2,
      "stroke-dasharray": se.dash, "stroke-linejoin": "round", "stroke-linecap": "round"}, s("title", {}, se.name)));
    if (se.dots || se.points.length === 1) {
      kids.push(s("g", {}, se.points.map(p => s("circle", {cx: X(p[0]), cy: Y(p[1]), r: se.dotR || 2.5, fill: se.color}))));
    }
  }
  for (const mk of o.markers || []) {
    kids.push(s("circle", {class: mk.class, cx: X(mk.x), cy: Y(mk.y), r: mk.r ?? 5, fill: mk.color || C.tomato, stroke: "#fff", "stroke-width": 1.5}));
    if (mk.label) {
      kids.push(s("text", {class: ["halo", mk.class && mk.class + "-label"].filter(Boolean).join(" "), x: X(mk.x) + (mk.dx ?? 8), y: Y(mk.y) + (mk.dy ?? -8), "text-anchor": mk.anchor || "start",
        style: `fill:${mk.labelColor || C.ink};font-weight:${mk.bold ? 600 : 400}`}, mk.label));
    }
  }
  return s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": o.label || ""}, kids);
}

// getJSON fetches a JSON document; it throws with the status on an error.
export async function getJSON(url, signal) {
  const r = await fetch(url, {cache: "no-store", signal});
  if (!r.ok) {
    const err = new Error(`${url}: ${r.status} ${(await r.text()).trim()}`);
    err.status = r.status;
    throw err;
  }
  return r.json();
}

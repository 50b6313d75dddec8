// The watermark simulator. The page only draws: every result
// (each tap's fate, when each window closed, its counts, the trade-off curve
// and the summary) comes from GET api/simulate, which replays the taps
// through weir's own engine.
import {$, h, s, C, PARTITION_COLORS, secs, setText, lineChart, niceTicks, getJSON} from "./common.js";

const XMAX = 120; // seconds shown on both lines

const SLIDERS = {
  delay: v => `${v} s`,
  tunnel: v => `${v}%`,
  interval: v => (+v === 0 ? "after every tap" : `every ${v} s`),
  partitions: v => `${v}`,
  "idle-after": v => (+v === 0 ? "never" : `${v} s`),
  idle: v => (+v === 0 ? "none" : `${v} s`),
};

let seed = 81;
let inflight = null;

const checked = name => document.querySelector(`input[name=${name}]:checked`).value;

// params are the controls, as /api/simulate names them.
function params() {
  return {
    size: +checked("size"), delay: +$("delay").value, tunnel: +$("tunnel").value, policy: checked("policy"), seed,
    interval: +$("interval").value, partitions: +$("partitions").value, idle_after: +$("idle-after").value, idle: +$("idle").value,
  };
}

function showValues() {
  for (const [id, f] of Object.entries(SLIDERS)) setText(`${id}-value`, f($(id).value));
  setText("seed", String(seed));
  $("quiet-control").classList.toggle("muted", +$("partitions").value < 2);
}

// fromURL sets the controls from the page's query (a shared link).
function fromURL() {
  const q = new URLSearchParams(location.search);
  const set = (id, name) => { if (q.has(name)) $(id).value = q.get(name); };
  set("delay", "delay"); set("tunnel", "tunnel"); set("interval", "interval");
  set("partitions", "partitions"); set("idle-after", "idle_after"); set("idle", "idle");
  for (const name of ["size", "policy"]) {
    const el = q.has(name) && document.querySelector(`input[name=${name}][value="${CSS.escape(q.get(name))}"]`);
    if (el) el.checked = true;
  }
  if (q.has("seed") && Number.isInteger(+q.get("seed"))) seed = +q.get("seed");
}

async function update() {
  showValues();
  const p = params();
  const query = new URLSearchParams(Object.entries(p).map(([k, v]) => [k, String(v)])).toString();
  history.replaceState(null, "", "?" + query);
  if (inflight) inflight.abort();
  const ctl = new AbortController();
  inflight = ctl;
  try {
    const res = await getJSON("api/simulate?" + query, ctl.signal);
    if (inflight !== ctl) return; // a newer request is on its way
    $("error").hidden = true;
    render(res);
  } catch (e) {
    if (e.name === "AbortError") return;
    $("error").hidden = false;
    setText("error", "The simulation failed: " + e.message);
  }
}

function render(res) {
  setText("n", String(res.n));
  setText("late", String(res.late));
  setText("lost", String(res.lost));
  setText("wait", secs(res.wait) + " s");
  setText("summary", res.summary);
  $("lanes").replaceChildren(drawLanes(res));
  $("windows").tBodies[0].replaceChildren(...res.windows.map((w, i) => h("tr", {},
    h("td", {}, String(i + 1)),
    h("td", {class: "span"}, `${w.start}–${w.end} s`),
    h("td", {class: "num"}, w.close === null ? "not yet" : secs(w.close) + " s"),
    h("td", {class: "num"}, w.close === null ? "" : secs(w.close - w.end) + " s"),
    h("td", {class: "num count"}, w.close === null ? `${w.waiting} waiting` : w.updates ? `${w.first} → ${w.count}` : String(w.count)))));
  $("curve").replaceChildren(drawCurve(res));
  // Last: the tests wait for the parameters of the result on the page.
  $("sim").dataset.params = JSON.stringify(res.params);
}

function fateColor(f) {
  return !f ? C.muted : f === "on time" ? C.teal : f === "added late" ? C.mustard : C.tomato;
}

function drawLanes(res) {
  const P = res.params.partitions, W = 1200, L = 118, R = 24, TOP = 46;
  const gap = P > 1 ? 18 : 0;
  const top = k => TOP + k * gap;
  const last = top(P - 1), BOT = last + 150, H = BOT + 58;
  const x = v => L + (Math.min(v, XMAX) / XMAX) * (W - L - R);
  const out = [];
  res.windows.forEach((w, i) => {
    out.push(s("rect", {x: x(w.start), y: TOP - 14, width: x(w.end) - x(w.start), height: last - TOP + 28,
      fill: i % 2 ? C.teal : C.mustard, "fill-opacity": 0.14, stroke: "#e2dccd"}));
    out.push(s("text", {x: (x(w.start) + x(w.end)) / 2, y: TOP - 19, "text-anchor": "middle", style: `fill:${C.ink};font-size:12px`}, String(i + 1)));
    if (w.close !== null && w.close <= XMAX) {
      out.push(s("line", {x1: x(w.close), x2: x(w.close), y1: BOT - 16, y2: BOT + 16, stroke: C.ink, "stroke-width": 2}));
      out.push(s("text", {x: x(w.close), y: BOT + 31, "text-anchor": "middle", style: `fill:${C.ink};font-size:12px;font-weight:600`}, String(i + 1)));
    }
  });
  for (let k = 0; k < P; k++) {
    const quietFrom = P > 1 && k === P - 1 && res.params.idle_after > 0 ? res.params.idle_after : null;
    if (quietFrom === null || quietFrom >= XMAX) {
      out.push(s("line", {x1: L - 4, x2: W - R, y1: top(k), y2: top(k), stroke: C.ink, "stroke-width": 1.5}));
    } else {
      out.push(s("line", {x1: L - 4, x2: x(quietFrom), y1: top(k), y2: top(k), stroke: C.ink, "stroke-width": 1.5}));
      out.push(s("line", {x1: x(quietFrom), x2: W - R, y1: top(k), y2: top(k), stroke: C.muted, "stroke-width": 1.5, "stroke-dasharray": "3 4"}));
      out.push(s("text", {x: x(quietFrom) + 6, y: top(k) + 13, style: `fill:${C.muted};font-size:11px;font-style:italic`}, `partition ${k} quiet from ${quietFrom} s`));
    }
    if (P > 1) {
      out.push(s("text", {x: L - 10, y: top(k) + 4, "text-anchor": "end", style: `fill:${PARTITION_COLORS[k]};font-size:11px;font-weight:600`}, `p${k}`));
    }
  }
  out.push(s("text", {x: 4, y: (TOP + last) / 2 + 4, style: `fill:${C.ink};font-size:13px;font-weight:600`}, "happened"));
  out.push(s("line", {x1: L - 4, x2: W - R, y1: BOT, y2: BOT, stroke: C.ink, "stroke-width": 1.5}));
  out.push(s("text", {x: 4, y: BOT + 4, style: `fill:${C.ink};font-size:13px;font-weight:600`}, "arrived"));
  for (const tap of res.taps) {
    if (tap.ts > XMAX) continue;
    const f = tap.fate, color = fateColor(f), late = f && f !== "on time", y0 = top(tap.partition);
    out.push(s("line", {class: "tap", "data-fate": f, "data-partition": tap.partition, x1: x(tap.ts), y1: y0, x2: x(tap.arr), y2: BOT, stroke: color, "stroke-width": late ? 1.8 : 1, "stroke-opacity": f ? 0.9 : 0.4}));
    out.push(s("circle", {cx: x(tap.ts), cy: y0, r: 3.2, fill: color}));
    out.push(s("circle", {cx: x(tap.arr), cy: BOT, r: 3.6, fill: late ? C.white : color, stroke: color, "stroke-width": 1.6}));
    if (tap.arr > XMAX) out.push(s("text", {x: W - R + 2, y: BOT - 8, "text-anchor": "end", style: `fill:${color};font-size:11px`}, "→"));
  }
  for (let v = 0; v <= XMAX; v += 15) {
    out.push(s("line", {x1: x(v), x2: x(v), y1: BOT + 40, y2: BOT + 44, stroke: "#9aa1b2"}));
    out.push(s("text", {x: x(v), y: H - 2, "text-anchor": "middle", style: `fill:${C.muted};font-size:11px`}, `${v} s`));
  }
  const label = `Windows of ${res.params.size} seconds. ${res.late} of ${res.n} taps were late. ` +
    `Results came about ${secs(res.wait)} seconds after each window ended.`;
  return s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label}, out);
}

function drawCurve(res) {
  const pts = res.curve.map(p => [p.wait, 100 * p.late]);
  const now = res.curve.find(p => p.delay === res.params.delay);
  const xMax = Math.max(1, ...res.curve.map(p => p.wait)) * 1.05;
  const yMax = Math.max(5, ...pts.map(p => p[1])) * 1.12;
  const markers = res.curve.filter(p => p.delay % 10 === 0).map(p => ({
    x: p.wait, y: 100 * p.late, r: 3, color: C.muted, label: `${p.delay} s`, labelColor: C.muted, dx: 6, dy: -6,
  }));
  if (now) {
    markers.push({class: "now", x: now.wait, y: 100 * now.late, r: 6, color: C.tomato, bold: true, dx: 10, dy: 16,
      label: `delay ${now.delay} s: ${Math.round(100 * now.late)}% late, ${secs(now.wait)} s wait`});
  }
  return lineChart({
    width: 560, height: 260, margin: {left: 52, bottom: 42, right: 20, top: 14},
    series: [{name: "late taps against waiting", color: C.ink, points: pts, width: 1.8, dots: true, dotR: 1.8}],
    x: {domain: [0, xMax], ticks: (a, b) => niceTicks(a, b, 6), format: v => `${v} s`, title: "mean wait after each window ends"},
    y: {domain: [0, yMax], ticks: (a, b) => niceTicks(a, b, 5), format: v => `${v}%`, title: "late taps"},
    markers,
    label: "The trade-off for this stream: a longer watermark delay gives fewer late taps but slower results.",
  });
}

fromURL();
for (const el of document.querySelectorAll("#controls-card input")) {
  el.addEventListener("input", update);
  el.addEventListener("change", update);
}
$("new-stream").addEventListener("click", () => { seed += 1; update(); });
update();

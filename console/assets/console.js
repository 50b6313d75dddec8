// weir's web console: polls api/status, api/panes and api/late every second,
// keeps a rolling history in the page (seeded from api/history, which the
// server keeps, so that a page opened late or after the end has the charts
// from before it), and draws it.
import {
  $, h, C, PARTITION_COLORS, MIN_TIME, MAX_TIME, setText, fmtTime, fmtSpan, fmtDuration, fmtBytes, tenths,
  isoShort, clock, lineChart, niceTicks, timeTicks, getJSON,
} from "./common.js";

const EVERY = 1000;   // ms between polls
const KEEP = 600;     // status reports kept (10 minutes)
// The fields of a pane that are not aggregates (job/config.go's reserved
// output fields).
const PANE_FIELDS = new Set(["key", "window_start", "window_end", "revision", "timing", "final", "retract", "watermark", "emitted_at",
  "status", "version", "updated_at", "delta_id"]);

const history = [];   // {t, wm, parts: {name: wm}, lateAccepted, tooLate}
const colors = new Map(); // partition name -> colour, in order of appearance
let lastAt = null, jobShown = false, busy = false, seeded = false;

const DIAG_CLASS = {
  "active": "active", "inactive": "inactive", "backlogged": "backlogged",
  "transport interrupted": "interrupted", "declared idle": "idle",
};

function colorOf(name) {
  if (!colors.has(name)) colors.set(name, PARTITION_COLORS[colors.size % PARTITION_COLORS.length]);
  return colors.get(name);
}

const known = ms => ms > MIN_TIME && ms < MAX_TIME;
const count = n => String(n ?? 0);
const badge = (text, cls) => h("span", {class: `badge ${cls}`}, text);

// show displays a JSON value of a pane or a late event.
function show(v) {
  if (v === null || v === undefined) return "(all)";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

async function tick() {
  if (busy) return;
  busy = true;
  try {
    const [reply, panes, late] = await Promise.all([getJSON("api/status"), getJSON("api/panes"), getJSON("api/late")]);
    if (!seeded) {
      seeded = true;
      seed(await getJSON("api/history"));
    }
    $("error").hidden = true;
    render(reply, panes, late);
  } catch (e) {
    $("error").hidden = false;
    if (e.status === 404) {
      $("error").replaceChildren("This server runs no job. ", h("a", {href: "simulator"}, "Try the watermark simulator."));
      setText("job-name", "no job");
      $("state").className = "badge stopped";
      setText("state", "no job");
    } else {
      setText("error", "Cannot reach the job: " + e.message);
      $("state").className = "badge stale";
      setText("state", "unreachable");
    }
  } finally {
    busy = false;
  }
}

// seed starts the page's history with the samples the server kept.
function seed(samples) {
  for (const e of samples || []) {
    if (!known(e.t)) continue;
    history.push({t: e.t, wm: e.watermark, parts: e.partitions || {}, lateAccepted: e.late_accepted, tooLate: e.too_late});
  }
  while (history.length > KEEP) history.shift();
}

function render(reply, panes, late) {
  const st = reply.status;
  const last = history.length ? history[history.length - 1].t : null;
  if (st.at !== lastAt && known(st.processing_time) && (last === null || st.processing_time > last)) {
    lastAt = st.at;
    const parts = {};
    for (const p of st.partitions || []) parts[p.name] = p.watermark;
    history.push({t: st.processing_time, wm: st.watermark, parts,
      lateAccepted: st.counts.late_accepted, tooLate: st.counts.too_late});
    if (history.length > KEEP) history.shift();
  }
  if (!jobShown) { renderJob(reply.job); jobShown = true; }
  renderHeader(st);
  renderTiles(st);
  renderHeld(st);
  renderPartitions(st);
  renderWatermarkChart(st);
  renderLateChart();
  renderRecords(st);
  renderCheckpoints(st, reply.checkpoint_age_ms);
  renderSinks(st);
  renderPanes(panes);
  renderLate(late);
  $("console").dataset.samples = history.length;
  // Last: the tests wait for the status the page shows.
  $("console").dataset.at = st.at;
}

function renderJob(job) {
  setText("job-name", job.name || job.file || "job");
  document.title = `weir: ${job.name || job.file}`;
  setText("job-file", job.file || "–");
  $("settings").tBodies[0].replaceChildren(...(job.settings || []).map(s =>
    h("tr", {}, h("th", {}, s.name), h("td", {class: "mono"}, s.value))));
  const warnings = job.warnings || [];
  $("warnings").replaceChildren(...(warnings.length ? warnings.map(w => h("li", {}, w)) : [h("li", {class: "none"}, "None.")]));
  setText("job-text", job.text || "");
}

function renderHeader(st) {
  const el = $("state");
  el.className = `badge ${st.state === "running" ? "running" : "stopped"}`;
  setText(el, st.state + (st.live ? "" : " · replay"));
  $("stale").hidden = !st.stale;
  setText("updated", clock(Date.parse(st.at)));
}

function renderTiles(st) {
  setText("watermark", fmtTime(st.watermark));
  setText("wm-gap", known(st.watermark) ? fmtDuration(st.watermark_gap_ms) : "–");
  setText("skew", fmtDuration(st.event_time_skew_ms));
  setText("accepted", count(st.counts.accepted));
  setText("late-accepted", count(st.counts.late_accepted));
  setText("too-late", count(st.counts.too_late));
  setText("open-windows", count(st.open_windows));
  setText("keys", count(st.keys));
}

// held says whether a partition holds the combined watermark back: it is
// behind the others by the watermark delay (and a second) or more. Closer,
// the partitions are level.
const held = st => st.held_back_by && (st.event_time_skew_ms || 0) >= Math.max(st.watermark_delay_ms || 0, 1000);

// renderHeld says which partition holds the combined watermark back, or
// that they are level, the slowest within the delay of the others.
function renderHeld(st) {
  const el = $("held-by");
  if (st.held_back_by && !held(st)) {
    el.className = "banner ok";
    el.replaceChildren(h("span", {id: "held-by-name"},
      `The partitions are level: the slowest, ${st.held_back_by}, is within ${fmtDuration(st.event_time_skew_ms || 0)} of the others.`));
  } else if (st.held_back_by) {
    el.className = "banner held";
    el.replaceChildren("Partition ", h("strong", {id: "held-by-name"}, st.held_back_by),
      " holds the combined watermark back, since ", h("span", {class: "mono", id: "held-by-since"}, fmtTime(st.held_back_since)),
      h("span", {class: "span"}, known(st.held_back_since) ? ` (${fmtDuration(st.processing_time - st.held_back_since)} ago)` : ""), ".");
  } else {
    el.className = "banner ok";
    el.replaceChildren(h("span", {id: "held-by-name"}, (st.partitions || []).length > 1
      ? "No partition holds the watermark back: they are level, or idle." : "One partition: it sets the watermark."));
  }
}

function renderPartitions(st) {
  const parts = st.partitions || [];
  const rows = parts.map(p => h("tr", {"data-partition": p.name},
    h("td", {class: "p-name mono"}, h("span", {class: "swatch", style: `display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;background:${colorOf(p.name)}`}), p.name),
    h("td", {class: "p-diagnosis"}, badge(p.diagnosis, DIAG_CLASS[p.diagnosis] || "inactive")),
    h("td", {class: "p-watermark mono"}, fmtTime(p.watermark)),
    h("td", {class: "p-max mono"}, fmtTime(p.max_event_time)),
    h("td", {class: "p-last mono"}, fmtTime(p.last_event)),
    h("td", {class: "p-backlog num"}, p.backlog < 0 ? "–" : String(p.backlog)),
    h("td", {class: "p-holds"}, p.holds_back && held(st) ? badge("holds back", "holds") : (p.error ? h("span", {class: "error"}, p.error) : ""))));
  $("partitions").tBodies[0].replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", {class: "empty", colspan: 7}, "No partition yet."))]));
  $("wm-legend").replaceChildren(...parts.map(p => h("span", {},
    h("span", {class: "swatch", style: `background:${colorOf(p.name)}`}), p.name, " ",
    badge(p.diagnosis, DIAG_CLASS[p.diagnosis] || "inactive"))),
  parts.length ? h("span", {}, h("span", {class: "swatch", style: `background:${C.ink};height:2px;border-top:2px dashed ${C.ink};background:none`}), "combined watermark") : "");
}

function timeAxis(lo, hi) {
  const day = hi - lo > 86400000;
  return v => (day ? new Date(v).toISOString().slice(5, 16).replace("T", " ") : clock(v));
}

function renderWatermarkChart(st) {
  const names = (st.partitions || []).map(p => p.name);
  const series = names.map(name => ({
    name, color: colorOf(name), width: 2.2, step: true,
    points: history.filter(e => known(e.parts[name])).map(e => [e.t, e.parts[name]]),
  }));
  series.push({name: "combined watermark", color: C.ink, width: 1.6, dash: "5 4", step: true,
    points: history.filter(e => known(e.wm)).map(e => [e.t, e.wm])});
  if (!series.some(se => se.points.length)) {
    $("wm-chart").replaceChildren(h("div", {class: "chart-empty"}, "No watermark yet: no event has arrived."));
    return;
  }
  const ys = series.flatMap(se => se.points.map(p => p[1]));
  const ts = history.map(e => e.t);
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y1 - y0 < 2000) { y0 -= 1000; y1 += 1000; }
  const pad = (y1 - y0) * 0.06;
  const x0 = Math.min(...ts), x1 = Math.max(Math.max(...ts), x0 + 10000);
  const date = new Date(y0).toISOString().slice(0, 10);
  $("wm-chart").replaceChildren(lineChart({
    width: 860, height: 250, margin: {left: 78, right: 18, bottom: 40},
    series,
    x: {domain: [x0, x1], ticks: (a, b) => timeTicks(a, b, 7), format: timeAxis(x0, x1), title: "processing time (UTC)"},
    y: {domain: [y0 - pad, y1 + pad], ticks: (a, b) => timeTicks(a, b, 5), format: timeAxis(y0, y1), title: `event time (UTC, ${date})`},
    label: "The watermark of each partition over time.",
  }));
}

function renderLateChart() {
  if (!history.length) return;
  const ts = history.map(e => e.t);
  const x0 = Math.min(...ts), x1 = Math.max(Math.max(...ts), x0 + 10000);
  const top = Math.max(4, ...history.map(e => Math.max(e.lateAccepted, e.tooLate)));
  $("late-chart").replaceChildren(lineChart({
    width: 420, height: 200, margin: {left: 44, right: 30, bottom: 38},
    series: [
      {name: "late, accepted", color: C.mustard, width: 2.2, step: true, points: history.map(e => [e.t, e.lateAccepted])},
      {name: "too late", color: C.tomato, width: 2.2, step: true, points: history.map(e => [e.t, e.tooLate])},
    ],
    x: {domain: [x0, x1], ticks: (a, b) => timeTicks(a, b, 3), format: timeAxis(x0, x1), title: "processing time (UTC)"},
    y: {domain: [0, top * 1.1], ticks: (a, b) => niceTicks(a, b, 4).filter(v => Number.isInteger(v)), title: "events"},
    label: "Late events accepted and too-late events, over time.",
  }));
}

function renderRecords(st) {
  const c = st.counts, byTiming = st.panes_by_timing || {};
  setText("read", count(c.read));
  setText("duplicates", count(c.duplicates));
  setText("filtered", count(c.filtered));
  setText("beyond-dedup-horizon", count(c.beyond_dedup_horizon));
  setText("late-for-some-windows", count(c.late_for_some_windows));
  setText("trigger-finished", count(c.trigger_finished));
  setText("superseded", count(c.superseded));
  setText("revisions-too-late", count(c.revisions_too_late));
  setText("revisions", count(c.revisions));
  setText("quarantined", count(c.quarantined));
  setText("lost", count(c.lost));
  setText("windows-fired", count(c.windows_fired));
  setText("panes-on-time", count(byTiming.ON_TIME));
  setText("panes-late", count(byTiming.LATE));
  setText("panes-early", count(byTiming.EARLY));
  setText("state-bytes", fmtBytes(st.state_bytes || 0));
  // A job of several aggregations: each one's share, by name.
  const aggs = st.aggregations || [];
  $("aggregations").hidden = aggs.length === 0;
  $("aggregations").replaceChildren(...aggs.flatMap(a => [
    h("dt", {}, `${a.name}: accepted`), h("dd", {}, count(a.counts.accepted)),
    h("dt", {}, `${a.name}: too late`), h("dd", {}, count(a.counts.too_late)),
    h("dt", {}, `${a.name}: too late for some windows`), h("dd", {}, count(a.counts.late_for_some_windows)),
  ]));
}

function renderCheckpoints(st, age) {
  const ck = st.checkpoint || {};
  setText("ckpt-total", count(ck.total));
  setText("ckpt-failed", count(ck.failed_total));
  setText("ckpt-failing", count(ck.failures_in_a_row));
  const some = age !== undefined && age !== null;
  setText("ckpt-last", some ? `${ck.kind} ${ck.id}` : "none yet");
  setText("ckpt-duration", some ? tenths(ck.duration_ns, 1e6) + " ms" : "–");
  setText("ckpt-size", some ? fmtBytes(ck.bytes) : "–");
  setText("ckpt-age", some ? fmtDuration(age) : "–");
  $("ckpt-failing").parentElement.classList.toggle("bad", (ck.failures_in_a_row || 0) > 0);
}

function renderSinks(st) {
  $("sinks").tBodies[0].replaceChildren(...(st.sinks || []).map(k => h("tr", {},
    h("td", {}, k.name, h("div", {class: "span", style: "font-size:0.72rem"}, k.guarantee.replaceAll("_", " "))),
    h("td", {class: "num"}, String(k.written)), h("td", {class: "num"}, String(k.committed)))));
}

function renderPanes(panes) {
  const aggs = [];
  for (const p of panes) for (const k of Object.keys(p)) if (!PANE_FIELDS.has(k) && !aggs.includes(k)) aggs.push(k);
  const head = ["Emitted", "Key", "Window", "Timing", "Revision", "Status", "Watermark", ...aggs];
  const tr = $("panes").tHead.rows[0];
  if (tr.cells.length !== head.length || [...tr.cells].some((c, i) => c.textContent !== head[i])) {
    tr.replaceChildren(...head.map((name, i) => h("th", {class: i === 4 || i >= 7 ? "num" : ""}, name)));
  }
  const rows = panes.slice().reverse().map(p => h("tr", {},
    h("td", {class: "mono"}, String(p.emitted_at).slice(11, 23)),
    h("td", {class: "mono"}, show(p.key)),
    h("td", {class: "mono"}, p.window_start !== undefined ? fmtSpan(p.window_start, p.window_end) : "global"),
    h("td", {}, badge(p.timing, `timing-${p.timing}`)),
    h("td", {class: "num"}, String(p.revision)),
    h("td", {class: "status"}, p.status ?? (p.retract ? "retracted" : p.final ? "closed" : "provisional")),
    h("td", {class: "mono"}, isoShort(p.watermark)),
    ...aggs.map(k => h("td", {class: "num"}, k in p ? show(p[k]) : ""))));
  $("panes").tBodies[0].replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", {class: "empty", colspan: head.length}, "No pane yet."))]));
}

function renderLate(late) {
  const rows = late.slice().reverse().map(l => h("tr", {},
    h("td", {class: "mono"}, isoShort(l.event_time)),
    h("td", {class: "mono"}, show(l.key)),
    h("td", {class: "mono"}, l.window_start !== undefined ? fmtSpan(l.window_start, l.window_end) : "global"),
    h("td", {class: "mono"}, isoShort(l.watermark)),
    h("td", {class: "mono"}, "line" in l ? `line ${l.line}` : `${l.partition} @${l.offset}`),
    h("td", {class: "mono", style: "max-width:34rem;overflow:hidden;text-overflow:ellipsis", title: JSON.stringify(l.event)}, JSON.stringify(l.event))));
  $("late-events").tBodies[0].replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", {class: "empty", colspan: 6}, "No too-late event yet."))]));
}

tick();
setInterval(tick, EVERY);

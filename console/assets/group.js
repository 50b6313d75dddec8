// weir's console for an instance of a consumer-group job: polls api/status
// (the instance's membership and tasks) every second and lists the tasks,
// each linked to its own console (task/P/).
import {$, h, setText, fmtTime, clock, getJSON} from "./common.js";

let busy = false;

async function tick() {
  if (busy) return;
  busy = true;
  try {
    const reply = await getJSON("api/status");
    $("error").hidden = true;
    render(reply);
  } catch (e) {
    $("error").hidden = false;
    setText("error", "Cannot reach the instance: " + e.message);
    $("state").className = "badge stale";
    setText("state", "unreachable");
  } finally {
    busy = false;
  }
}

function render(reply) {
  const g = reply.group;
  setText("job-name", reply.job.name);
  $("state").className = "badge running";
  setText("state", g.member ? "in the group" : "joining");
  setText("updated", clock(Date.now()));
  setText("membership", `group ${g.group}, generation ${g.generation}`);
  setText("owns", `Owns ${(g.owned || []).length} of the ${g.partitions} partitions of ${g.topic}; state in ${g.changelog}.`);
  const rows = (g.tasks || []).map(t => {
    const name = `${g.topic}/${t.partition}`;
    const st = t.status || {};
    const c = st.counts || {};
    const restored = t.restored && t.restored.checkpoint ? `checkpoint ${t.restored.checkpoint} in ${t.restored.ms} ms` : "afresh";
    return h("tr", {},
      h("td", {}, t.state === "running" ? h("a", {href: `task/${t.partition}/`}, name) : name),
      h("td", {}, h("span", {class: `badge ${t.state === "running" ? "running" : "stopped"}`}, t.state)),
      h("td", {class: "mono"}, t.state === "running" ? fmtTime(st.watermark) : "–"),
      h("td", {class: "num"}, String(c.read ?? 0)),
      h("td", {class: "num"}, String(c.too_late ?? 0)),
      h("td", {class: "num"}, String(st.open_windows ?? 0)),
      h("td", {}, restored + (t.error ? ` (${t.error})` : "")));
  });
  $("tasks").tBodies[0].replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", {class: "empty", colspan: "7"}, "No task: this instance owns no partition now."))]));
  const members = (g.members || []).map(m => h("tr", {},
    h("td", {}, m.client + (m.member === g.member ? " (this one)" : "")),
    h("td", {class: "mono"}, String(m.host || "").replace(/^\//, "")),
    h("td", {}, (m.partitions || []).map(p => `${g.topic}/${p}`).join(", ") || "–")));
  $("members").tBodies[0].replaceChildren(...(members.length ? members : [h("tr", {}, h("td", {class: "empty", colspan: "3"}, g.members_error || "–"))]));
}

tick();
setInterval(tick, 1000);

// The lab page: renders what /events streams (snapshot, timeline, scenario); no reloads.
"use strict";

const csrfToken = document.querySelector('meta[name="lab-csrf-token"]').content;
const actionsOn = document.querySelector('meta[name="lab-actions"]').content === "on";
document.body.dataset.actions = actionsOn ? "on" : "off";
const MAX_TIMELINE_ENTRIES = 1000;

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setPill(node, text, kind) {
  node.textContent = text;
  node.className = "pill " + (kind || "");
}

async function act(body, path) {
  const result = document.getElementById("action-result");
  result.textContent = "…";
  try {
    const response = await fetch(path || "/api/action", {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Lab-CSRF-Token": csrfToken},
      body: JSON.stringify(body || {}),
    });
    const answer = await response.json();
    result.textContent = answer.output || answer.error || (response.ok ? "ok" : response.status);
  } catch (error) {
    result.textContent = "request failed: " + error;
  }
}

function actionButtons(target, id, alive) {
  if (!actionsOn) return null;
  const cell = el("td", {class: "actions-only"});
  const verbs = alive ? [["kill", "kill -9"], ["term", "SIGTERM"], ["stop", "pause"], ["cont", "resume"]]
                      : [["start", "start"]];
  for (const [verb, label] of verbs) {
    cell.append(el("button", {type: "button", "data-target": target, "data-id": id, "data-action": verb,
      onclick: () => act({target: target, id: id, action: verb})}, label));
  }
  return cell;
}

function renderBrokers(view) {
  const body = document.querySelector("#brokers tbody");
  body.replaceChildren();
  for (const b of view.brokers) {
    const registered = b.registered === null ? "unknown" : (b.registered ? "yes" : "no");
    const process = b.alive ? (b.paused ? `paused (pid ${b.pid})` : `alive (pid ${b.pid})`) : "dead";
    const row = el("tr", {"data-broker": b.id, class: b.alive ? (b.paused ? "paused" : "") : "dead"},
      el("td", {}, b.id),
      el("td", {class: "process"}, process),
      el("td", {class: "registered"}, registered),
      el("td", {class: "crown"}, b.controller ? "♛ controller" : ""),
      el("td", {class: "epoch"}, b.epoch === null ? "" : b.epoch),
      el("td", {class: "endpoints"}, b.endpoints.join(" ")),
      el("td", {}, b.metrics_url ? el("a", {href: b.metrics_url, target: "_blank"}, b.metrics_ok ? "metrics" : "metrics (down)") : ""),
      actionButtons("broker", b.id, b.alive));
    body.append(row);
  }
  const zk = view.zookeeper;
  setPill(document.getElementById("zookeeper-state"),
          zk.reachable ? "ZooKeeper connected" : "ZooKeeper unreachable", zk.reachable ? "good" : "bad");
  const zkBody = document.querySelector("#zookeeper tbody");
  zkBody.replaceChildren();
  for (const s of zk.servers) {
    zkBody.append(el("tr", {"data-zookeeper": s.id, class: s.alive ? "" : "dead"},
      el("td", {}, s.id), el("td", {}, s.port),
      el("td", {}, s.alive ? `alive (pid ${s.pid})` : "dead"),
      el("td", {class: "mode"}, s.mode),
      actionButtons("zookeeper", s.id, s.alive)));
  }
  document.getElementById("controller-id").textContent = view.controller.id === null ? "none" : view.controller.id;
  document.getElementById("controller-epoch").textContent = view.controller.epoch === null ? "?" : view.controller.epoch;
  document.getElementById("updated").textContent = view.time.slice(11);
}

function replicaCell(p) {
  const cell = el("td", {class: "replicas"});
  p.replicas.forEach((r, index) => {
    const classes = [];
    if (r === p.leader) classes.push("leader");
    if (!p.isr.includes(r)) classes.push("out-of-isr");
    const end = p.log_end[String(r)];
    const text = `${r}` + (end === undefined || end === null ? "" : `@${end}`);
    if (index > 0) cell.append(" ");
    cell.append(el("span", {class: classes.join(" "), title: `broker ${r}, log end offset ${end ?? "?"}`}, text));
  });
  return cell;
}

function renderPartitions(view) {
  const holder = document.getElementById("partitions");
  holder.replaceChildren();
  if (view.topics.length === 0) {
    holder.append(el("p", {class: "note"}, view.zookeeper.reachable ? "no topics yet" : "ZooKeeper unreachable"));
    return;
  }
  for (const topic of view.topics) {
    const table = el("table", {"data-topic": topic.name},
      el("thead", {}, el("tr", {}, el("th", {}, "partition"), el("th", {}, "replicas (@log end)"),
        el("th", {}, "leader"), el("th", {}, "ISR"), el("th", {}, "leader epoch"), el("th", {}, "state"))));
    const body = el("tbody");
    for (const p of topic.partitions) {
      const state = p.offline ? "offline" : (p.under_replicated ? "under-replicated" : "ok");
      const classes = [p.offline ? "offline" : "", p.under_replicated ? "under-replicated" : ""].join(" ").trim();
      body.append(el("tr", {"data-partition": `${topic.name}-${p.partition}`, class: classes},
        el("td", {}, p.partition), replicaCell(p),
        el("td", {class: "leader-id"}, p.leader),
        el("td", {class: "isr"}, p.isr.join(",")),
        el("td", {class: "leader-epoch"}, p.leader_epoch ?? ""),
        el("td", {class: "state"}, state)));
    }
    table.append(body);
    holder.append(el("h3", {}, topic.name), table);
  }
}

function renderChart(points) {
  const svg = document.getElementById("chart");
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  const width = 600, height = 160;
  if (points.length < 2) return;
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  const peak = Math.max(1, ...points.map((p) => p[1]));
  const x = (t) => (t1 === t0 ? 0 : ((t - t0) / (t1 - t0)) * width);
  const y = (v) => height - 14 - (v / peak) * (height - 28);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#2471a3");
  line.setAttribute("stroke-width", "2");
  svg.append(line);
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "4"); label.setAttribute("y", "12"); label.setAttribute("font-size", "11");
  label.textContent = `peak ${peak.toFixed(1)}/s over the last ${Math.round(t1 - t0)} s`;
  svg.append(label);
  document.getElementById("chart-now").textContent = `now: ${points[points.length - 1][1].toFixed(1)} messages/s`;
}

function renderTimeline(entries) {
  const list = document.getElementById("timeline");
  for (const e of entries) {
    list.prepend(el("li", {class: `kind-${e.kind}`},
      el("span", {class: "time"}, e.time.slice(11)), " ",
      el("span", {class: "source"}, e.source), " ", e.message));
  }
  while (list.children.length > MAX_TIMELINE_ENTRIES) list.lastChild.remove();
}

function renderScenario(run) {
  const kind = run.status === "done" ? "good" : (run.status === "failed" ? "bad" : "warn");
  setPill(document.getElementById("scenario-status"),
          run.status + (run.reason ? `: ${run.reason}` : ""), kind);
  const list = document.getElementById("scenario-steps");
  list.replaceChildren();
  for (const step of run.steps) {
    list.append(el("li", {class: step.state},
      el("b", {}, step.title), ` [${step.state}]`,
      el("div", {class: "explanation"}, step.explanation),
      step.observed ? el("div", {class: "observed"}, `observed ${step.time.slice(11)}: ${step.observed}`) : null));
  }
}

async function readZnode(path) {
  document.getElementById("znode-path").value = path;
  const response = await fetch("/api/znode?path=" + encodeURIComponent(path));
  const found = await response.json();
  const children = document.getElementById("znode-children");
  const data = document.getElementById("znode-data");
  const stat = document.querySelector("#znode-stat tbody");
  children.replaceChildren(); stat.replaceChildren();
  if (found.error) { data.textContent = found.error; return; }
  if (path !== "/") {
    const parent = path.slice(0, path.lastIndexOf("/")) || "/";
    children.append(el("li", {}, el("a", {onclick: () => readZnode(parent)}, "..")));
  }
  for (const child of found.children) {
    const childPath = (path === "/" ? "" : path) + "/" + child;
    children.append(el("li", {}, el("a", {"data-path": childPath, onclick: () => readZnode(childPath)}, child)));
  }
  data.textContent = found.data !== null ? found.data : `(not UTF-8) hex: ${found.data_hex}`;
  for (const [key, value] of Object.entries(found.stat)) {
    const shown = key.endsWith("zxid") || key === "ephemeral_owner" ? `${value} (0x${value.toString(16)})` : value;
    stat.append(el("tr", {}, el("th", {}, key), el("td", {"data-stat": key}, shown)));
  }
}

document.getElementById("znode-form").addEventListener("submit", (event) => {
  event.preventDefault();
  readZnode(document.getElementById("znode-path").value.trim() || "/");
});
document.getElementById("scenario-start").addEventListener("click", () => act({}, "/api/scenario/kill-the-controller"));

function connect() {
  const source = new EventSource("/events");
  const state = document.getElementById("connection");
  source.onopen = () => setPill(state, "live", "good");
  source.onerror = () => setPill(state, "reconnecting", "bad");  // EventSource retries by itself
  source.addEventListener("snapshot", (message) => {
    const view = JSON.parse(message.data);
    renderBrokers(view);
    renderPartitions(view);
    renderChart(view.throughput);
  });
  source.addEventListener("timeline", (message) => renderTimeline(JSON.parse(message.data)));
  source.addEventListener("scenario", (message) => renderScenario(JSON.parse(message.data)));
}

connect();
readZnode("/");

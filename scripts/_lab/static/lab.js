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

function actionButtons(target, id, alive, netns) {
  if (!actionsOn) return null;
  const cell = el("td", {class: "actions-only"});
  const verbs = alive ? [["kill", "kill -9"], ["term", "SIGTERM"], ["stop", "pause"], ["cont", "resume"]]
                      : [["start", "start"]];
  // On a --network netns cluster: cut the node off from every other one, or heal its links.
  if (netns) verbs.push(["cut", "cut off"], ["heal", "heal"]);
  for (const [verb, label] of verbs) {
    cell.append(el("button", {type: "button", "data-target": target, "data-id": id, "data-action": verb,
      onclick: () => act({target: target, id: id, action: verb})}, label));
  }
  return cell;
}

function renderNetwork(network) {
  const section = document.getElementById("network");
  section.hidden = !network.netns;
  const links = document.getElementById("cut-links");
  links.replaceChildren();
  if (network.cuts.length === 0) links.textContent = "none";
  for (const [from, to] of network.cuts) {
    links.append(el("span", {class: "cut-link", "data-from": from, "data-to": to}, `${from} → ${to}`), " ");
  }
  return new Set(network.cuts.flat());
}

function renderBrokers(view) {
  const network = view.network || {netns: false, cuts: []};
  const netns = network.netns;
  const cutNodes = renderNetwork(network);
  const body = document.querySelector("#brokers tbody");
  body.replaceChildren();
  for (const b of view.brokers) {
    const registered = b.registered === null ? "unknown" : (b.registered ? "yes" : "no");
    const process = b.alive ? (b.paused ? `paused (pid ${b.pid})` : `alive (pid ${b.pid})`) : "dead";
    const row = el("tr", {"data-broker": b.id, class: b.alive ? (b.paused ? "paused" : "") : "dead"},
      el("td", {}, b.id),
      el("td", {class: "impl"}, b.impl === "kafka" ? "Apache Kafka" : "ours"),
      el("td", {class: "process"}, process),
      el("td", {class: "registered"}, registered),
      el("td", {class: "crown"}, b.controller ? "♛ controller" : ""),
      el("td", {class: "epoch"}, b.epoch === null ? "" : b.epoch),
      el("td", {class: "endpoints"}, b.endpoints.join(" ")),
      el("td", {}, b.metrics_url ? el("a", {href: b.metrics_url, target: "_blank"}, b.metrics_ok ? "metrics" : "metrics (down)") : ""),
      actionButtons("broker", b.id, b.alive, netns));
    if (cutNodes.has(`broker-${b.id}`)) row.classList.add("cut");
    body.append(row);
  }
  const zk = view.zookeeper;
  setPill(document.getElementById("zookeeper-state"),
          zk.reachable ? "ZooKeeper connected" : "ZooKeeper unreachable", zk.reachable ? "good" : "bad");
  const zkBody = document.querySelector("#zookeeper tbody");
  zkBody.replaceChildren();
  for (const s of zk.servers) {
    const classes = [s.alive ? "" : "dead", cutNodes.has(`zookeeper-${s.id}`) ? "cut" : ""];
    zkBody.append(el("tr", {"data-zookeeper": s.id, class: classes.join(" ").trim()},
      el("td", {}, s.id), el("td", {}, netns ? `${s.address}:${s.port}` : s.port),
      el("td", {}, s.alive ? `alive (pid ${s.pid})` : "dead"),
      el("td", {class: "mode"}, s.mode),
      actionButtons("zookeeper", s.id, s.alive, netns)));
  }
  document.getElementById("controller-id").textContent = view.controller.id === null ? "none" : view.controller.id;
  document.getElementById("controller-epoch").textContent = view.controller.epoch === null ? "?" : view.controller.epoch;
  document.getElementById("updated").textContent = view.time.slice(11);
}

function replicaCell(p) {
  const cell = el("td", {class: "replicas"});
  p.replicas.forEach((r, index) => {
    const classes = ["replica"];
    if (r === p.leader) classes.push("leader");
    if (!p.isr.includes(r)) classes.push("out-of-isr");
    const end = p.log_end[String(r)];
    const hw = p.high_watermark[String(r)];
    const hwText = hw ? el("span", {class: hw.source === "live" ? "hw-live" : "hw-checkpoint"}, hw.offset) : "?";
    if (index > 0) cell.append(" ");
    cell.append(el("span", {
      class: classes.join(" "), "data-replica": r,
      "data-log-end": end ?? "", "data-hw": hw ? hw.offset : "", "data-hw-source": hw ? hw.source : "",
      title: `broker ${r}: log end offset ${end ?? "?"} (/metrics), high watermark ${hw ? hw.offset : "?"} ` +
             (hw ? (hw.source === "live" ? "(leader, ListOffsets)" : "(replication-offset-checkpoint)") : ""),
    }, el("b", {}, r), " ", end ?? "?", "/", hwText));
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
      el("thead", {}, el("tr", {}, el("th", {}, "partition"), el("th", {}, "replicas: log end / high watermark"),
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
    const internal = topic.name.startsWith("__");
    const block = internal ? el("details", {}, el("summary", {}, `${topic.name} (${topic.partitions.length} partitions)`), table)
                           : el("div", {}, el("h3", {}, topic.name), table);
    holder.append(block);
  }
}

// Keeps a <select>'s choice while its options follow the cluster.
function fillSelect(id, values) {
  const select = document.getElementById(id);
  const wanted = values.join("\n");
  if (select.dataset.values === wanted) return;
  const chosen = select.value;
  select.replaceChildren(...values.map((v) => el("option", {value: v}, v)));
  if (values.includes(chosen)) select.value = chosen;
  select.dataset.values = wanted;
}

function renderToolbars(view) {
  const topics = view.topics.map((t) => t.name).filter((n) => !n.startsWith("__"));
  fillSelect("produce-topic", topics);
  fillSelect("member-topic", topics);
  fillSelect("reassign-partition", view.topics.filter((t) => !t.name.startsWith("__"))
    .flatMap((t) => t.partitions.map((p) => `${t.name}-${p.partition}`)));
}

const charts = {};

function bytes(value) {
  if (value >= 1048576) return `${+(value / 1048576).toFixed(1)} MiB`;
  if (value >= 1024) return `${+(value / 1024).toFixed(1)} KiB`;
  return `${value} B`;
}
window.labCharts = charts;

function chartOptions(element, series, axes) {
  return {width: Math.max(300, element.clientWidth - 4), height: 180, axes: axes,
          series: [{}, ...series.map((s) => ({...s, points: {show: false}}))],
          legend: {live: false}, cursor: {show: false}};
}

function makeCharts() {
  if (typeof uPlot === "undefined") return;
  const throughput = document.getElementById("throughput-chart");
  charts.throughput = new uPlot(chartOptions(throughput, [
    {label: "messages in/s", stroke: "#2471a3", width: 2, scale: "messages"},
    {label: "bytes in/s", stroke: "#1e8449", scale: "bytes"},
    {label: "bytes out/s (to consumers)", stroke: "#d68910", scale: "bytes"},
  ], [{}, {scale: "messages", size: 60}, {scale: "bytes", side: 1, size: 75, grid: {show: false}, values: (u, ticks) => ticks.map(bytes)}]),
  [[], [], [], []], throughput);
  const latency = document.getElementById("latency-chart");
  charts.latency = new uPlot(chartOptions(latency, [
    {label: "Produce p50", stroke: "#7d3c98", scale: "ms"},
    {label: "Produce p99", stroke: "#c0392b", width: 2, scale: "ms"},
  ], [{}, {scale: "ms"}]), [[], [], []], latency);
  window.addEventListener("resize", () => {
    for (const [name, chart] of Object.entries(charts)) {
      const holder = document.getElementById(`${name}-chart`);
      chart.setSize({width: Math.max(300, holder.clientWidth - 4), height: 180});
    }
  });
}

function renderCharts(series) {
  if (!charts.throughput || !series) return;
  charts.throughput.setData([series.time, series.messages_in, series.bytes_in, series.bytes_out]);
  charts.latency.setData([series.time, series.produce_p50, series.produce_p99]);
  const last = (values) => values.length ? values[values.length - 1] : null;
  const fixed = (value, digits) => value === null || value === undefined ? "?" : value.toFixed(digits);
  document.getElementById("chart-now").textContent =
    `now: ${fixed(last(series.messages_in), 1)} messages/s in, ` +
    `${fixed(last(series.bytes_in) / 1024, 1)} KiB/s in, ${fixed(last(series.bytes_out) / 1024, 1)} KiB/s out; ` +
    `Produce p99 ${fixed(last(series.produce_p99), 1)} ms`;
}

function renderGroups(view) {
  const holder = document.getElementById("groups");
  holder.replaceChildren();
  if (view.kafka && view.kafka.error) holder.append(el("p", {class: "note"}, `admin client: ${view.kafka.error}`));
  if (!view.groups.length) {
    holder.append(el("p", {class: "note"}, "no consumer groups yet"));
  }
  for (const g of view.groups) {
    const members = el("ul", {class: "members"});
    for (const m of g.members) {
      members.append(el("li", {class: "member", "data-client-id": m.client_id},
        el("b", {}, m.client_id), ` ${m.host} `,
        el("span", {class: "assignment"}, m.assignment.map(([t, p]) => `${t}-${p}`).join(", ") || "(nothing assigned)")));
    }
    const rows = el("tbody");
    for (const p of g.partitions) {
      rows.append(el("tr", {"data-group-partition": `${p.topic}-${p.partition}`},
        el("td", {}, `${p.topic}-${p.partition}`),
        el("td", {class: "committed"}, p.committed ?? "-"),
        el("td", {class: "log-end"}, p.log_end ?? "-"),
        el("td", {class: "lag"}, p.lag ?? "-"),
        el("td", {class: "owner"}, p.owner ?? "-")));
    }
    const totalLag = g.partitions.reduce((sum, p) => sum + (p.lag ?? 0), 0);
    holder.append(el("div", {class: "group", "data-group": g.group},
      el("h3", {}, g.group, " ", el("span", {class: "pill group-state"}, g.state),
        el("span", {class: "hint"}, ` coordinator broker ${g.coordinator ?? "?"}, ${g.members.length} member(s), total lag `),
        el("span", {class: "total-lag"}, totalLag)),
      members,
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "partition"), el("th", {}, "committed"),
        el("th", {}, "high watermark"), el("th", {}, "lag"), el("th", {}, "owner"))), rows)));
  }
  const mine = document.getElementById("lab-members");
  mine.replaceChildren();
  for (const m of view.lab_members || []) {
    mine.append(el("li", {"data-member": m.id},
      `${m.client_id} in ${m.group} on ${m.topic}: ${m.state}, ${m.consumed} consumed `,
      m.state === "running" || m.state === "starting"
        ? el("button", {type: "button", class: "member-stop", onclick: () => act({id: m.id}, "/api/members/stop")}, "stop")
        : null));
  }
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
  document.getElementById("scenario-name").textContent = run.name;
  const list = document.getElementById("scenario-steps");
  list.replaceChildren();
  for (const step of run.steps) {
    list.append(el("li", {class: step.state},
      el("b", {}, step.title), ` [${step.state}]`,
      el("div", {class: "explanation"}, step.explanation),
      step.observed ? el("div", {class: "observed"}, `observed ${step.time.slice(11)}: ${step.observed}`) : null));
  }
  const detail = document.getElementById("scenario-detail");
  detail.hidden = !run.detail.length;
  detail.textContent = run.detail.join("\n");
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
document.getElementById("scenario-start").addEventListener("click",
  () => act({}, "/api/scenario/" + document.getElementById("scenario-select").value));
document.getElementById("elect-preferred").addEventListener("click", () => act({}, "/api/elect"));
document.getElementById("reassign-go").addEventListener("click", () => {
  const name = document.getElementById("reassign-partition").value;
  const at = name.lastIndexOf("-");
  const replicas = document.getElementById("reassign-replicas").value.split(",")
    .map((r) => parseInt(r.trim(), 10)).filter((r) => !Number.isNaN(r));
  act({topic: name.slice(0, at), partition: parseInt(name.slice(at + 1), 10), replicas: replicas}, "/api/reassign");
});
document.getElementById("produce-go").addEventListener("click", () => act({
  topic: document.getElementById("produce-topic").value,
  count: parseInt(document.getElementById("produce-count").value, 10)}, "/api/produce"));
document.getElementById("member-start").addEventListener("click", () => act({
  group: document.getElementById("member-group").value.trim(),
  topic: document.getElementById("member-topic").value}, "/api/members/start"));

function connect() {
  const source = new EventSource("/events");
  const state = document.getElementById("connection");
  source.onopen = () => setPill(state, "live", "good");
  source.onerror = () => setPill(state, "reconnecting", "bad");  // EventSource retries by itself
  source.addEventListener("snapshot", (message) => {
    const view = JSON.parse(message.data);
    renderBrokers(view);
    renderPartitions(view);
    renderToolbars(view);
    renderCharts(view.series);
    renderGroups(view);
  });
  source.addEventListener("timeline", (message) => renderTimeline(JSON.parse(message.data)));
  source.addEventListener("scenario", (message) => renderScenario(JSON.parse(message.data)));
}

makeCharts();
connect();
readZnode("/");

// The followgraph console: reads /metrics, /readyz, the server's history
// of the metrics it charts (/console/history: the last minutes, so that
// the charts open drawn) and the /v1 API of the server that serves it,
// with the operator's token, and shows them. It writes nothing; closing
// it stops every request. ?user=ID (and &relations=2,3) in its address
// looks a user up, and a look-up puts them there, so that it can be
// linked.
"use strict";

const POLL_SECONDS = 2;
const WINDOW = 150; // samples kept per chart: 5 minutes at POLL_SECONDS
const TOKEN_KEY = "followgraph.console.token";
const LIST_LIMIT = 20;

// --- requests ---------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

// get fetches path from this server with the operator's token, if any.
async function get(path) {
  const headers = {};
  if (token()) headers.Authorization = "Bearer " + token();
  return fetch(path, { headers, cache: "no-store" });
}

// getJSON returns {status, body} for path; body is the parsed JSON answer,
// or null when the answer was not JSON.
async function getJSON(path) {
  const resp = await get(path);
  let body = null;
  try { body = await resp.json(); } catch (_) { /* not JSON */ }
  return { status: resp.status, body };
}

// failure says what went wrong with an answer, in the API's words.
function failure(r) {
  const e = r.body && r.body.error;
  return e ? `${r.status} ${e.code}: ${e.message}` : `HTTP ${r.status}`;
}

// --- the Prometheus text format ---------------------------------------

// parseMetrics returns a Map from each metric name to its samples,
// [{labels, value}]. Comments and histogram buckets are skipped.
function parseMetrics(text) {
  const out = new Map();
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const l of text.split("\n")) {
    if (l === "" || l[0] === "#") continue;
    const m = line.exec(l);
    if (!m || m[1].endsWith("_bucket")) continue;
    const labels = {};
    for (const [, k, v] of (m[2] || "").matchAll(label)) labels[k] = v;
    if (!out.has(m[1])) out.set(m[1], []);
    out.get(m[1]).push({ labels, value: parseFloat(m[3]) });
  }
  return out;
}

// sum adds the samples of name whose labels pass keep; undefined when
// the server does not export name.
function sum(metrics, name, keep = () => true) {
  const samples = metrics.get(name);
  if (!samples) return undefined;
  return samples.filter(s => keep(s.labels)).reduce((a, s) => a + s.value, 0);
}

// --- charts -----------------------------------------------------------

// apiRoute reports whether the labels of a request's metric are of the
// API's routes (or of none: a 404), not the operators' (/metrics,
// /readyz, /healthz, /console/history), which this page polls itself:
// the request charts count the clients' traffic, not this page's.
const apiRoute = l => /^[A-Z]+ \/v1\//.test(l.route || "") || l.route === "unmatched";

// Each chart is one series of the last minutes. value reads a gauge;
// rate is the per-second rate of a counter between two polls. A chart
// whose metric the server does not export (the relay's without Redis) is
// not shown. The server keeps the same samples (Go's
// console.HistoryMetrics names the metrics), which the page draws first.
const charts = [
  { id: "backlog", title: "Log backlog", unit: "events", value: m => sum(m, "followgraph_persister_pending_events") },
  { id: "backlog-age", title: "Oldest unstored event", unit: "s", value: m => sum(m, "followgraph_persister_pending_seconds") },
  { id: "persister-rate", title: "Persister rate", unit: "events/s", rate: m => sum(m, "followgraph_persister_events_total") },
  { id: "persister-lag", title: "Persister lag", unit: "s", value: m => sum(m, "followgraph_persister_lag_seconds") },
  { id: "persister-failures", title: "Persister failures", unit: "/s", rate: m => sum(m, "followgraph_persister_failures_total") },
  { id: "relay-rate", title: "Relay rate (outbox to log)", unit: "events/s", rate: m => sum(m, "followgraph_relay_events_total") },
  { id: "relay-lag", title: "Relay lag", unit: "s", value: m => sum(m, "followgraph_relay_lag_seconds") },
  { id: "second-steps", title: "Deferred Cluster second steps", unit: "total", value: m => sum(m, "followgraph_redis_second_steps_deferred_total") },
  { id: "requests", title: "API requests", unit: "/s", rate: m => sum(m, "followgraph_http_requests_total", apiRoute) },
  { id: "errors", title: "API 5xx answers", unit: "/s", rate: m => sum(m, "followgraph_http_requests_total", l => apiRoute(l) && (l.code || "").startsWith("5")) },
];

const series = new Map(charts.map(c => [c.id, []])); // chart id → values, oldest first
const last = new Map(); // chart id → {t, v} of a rate's previous poll

// sample appends each chart's value at time t (seconds) from metrics.
function sample(metrics, t) {
  for (const c of charts) {
    let v;
    if (c.value) {
      v = c.value(metrics);
    } else {
      const now = c.rate(metrics);
      const prev = last.get(c.id);
      if (now !== undefined) last.set(c.id, { t, v: now });
      if (now === undefined || !prev) continue;
      v = now >= prev.v && t > prev.t ? (now - prev.v) / (t - prev.t) : 0; // a restart resets counters
    }
    if (v === undefined) continue;
    const s = series.get(c.id);
    s.push(v);
    if (s.length > WINDOW) s.shift();
  }
}

function format(v) {
  if (!isFinite(v)) return String(v);
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + "k";
  return Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 2 : 1);
}

const SVG = "http://www.w3.org/2000/svg";

// drawCharts draws a sparkline of each chart that has samples: its last
// value, and its highest in the window on the figure's data-max. The
// figures are made at the first draw, in the order of charts, and shown
// once they have samples.
function drawCharts() {
  const box = document.getElementById("charts");
  for (const c of charts) {
    const s = series.get(c.id);
    let fig = document.getElementById("chart-" + c.id);
    if (!fig) {
      fig = document.createElement("figure");
      fig.id = "chart-" + c.id;
      const cap = document.createElement("figcaption");
      cap.append(c.title, document.createElement("b"));
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("viewBox", `0 0 ${WINDOW - 1} 40`);
      svg.setAttribute("preserveAspectRatio", "none");
      svg.append(document.createElementNS(SVG, "polyline"));
      fig.append(cap, svg);
      box.append(fig);
    }
    fig.hidden = s.length === 0;
    if (fig.hidden) continue;
    const max = Math.max(...s);
    fig.dataset.max = String(max);
    fig.dataset.samples = String(s.length);
    fig.querySelector("b").textContent = `${format(s[s.length - 1])} ${c.unit}`;
    fig.title = `highest in the window: ${format(max)} ${c.unit}`;
    const x0 = WINDOW - s.length;
    const points = s.map((v, i) => `${x0 + i},${(40 - (max > 0 ? v / max : 0) * 38 - 1).toFixed(1)}`);
    fig.querySelector("polyline").setAttribute("points", points.join(" "));
  }
}

// --- backends and jobs ------------------------------------------------

function drawBackends(metrics, ready) {
  const list = document.getElementById("backends");
  list.replaceChildren();
  for (const s of metrics.get("followgraph_backend_up") || []) {
    const li = document.createElement("li");
    const state = s.value === 1 ? "up" : s.labels.degradable === "true" ? "degraded" : "down";
    li.className = state;
    li.textContent = `${s.labels.backend}: ${state}`;
    list.append(li);
  }
  const r = document.getElementById("ready");
  r.textContent = ready.status === 200 ? "ready" : `not ready (${failure(ready)})`;
  r.className = ready.status === 200 ? "up" : "down";
}

function backendDown(metrics, name) {
  return (metrics.get("followgraph_backend_up") || []).some(s => s.labels.backend === name && s.value === 0);
}

// jobSources each read a poll's metrics and return the jobs they see
// running, as {job, state, progress}: the jobs of account states (hiding,
// restoring or deleting a user's edges), the start-up load (recovery) and
// the rebuild of a Redis that lost the graph, which a node does under the
// rebuild lease.
const jobSources = [
  function accountStates(metrics) {
    const running = sum(metrics, "followgraph_jobs_running");
    if (!running) return [];
    const pending = sum(metrics, "followgraph_jobs_pending_edges") || 0;
    const changed = sum(metrics, "followgraph_jobs_changed_edges_total") || 0;
    return [{
      job: "account states",
      state: `${format(running)} running`,
      progress: `${format(pending)} edges left; ${format(changed)} changed since the node started`,
    }];
  },
  function startupLoad(metrics) {
    if (!backendDown(metrics, "recovery")) return [];
    const edges = sum(metrics, "followgraph_engine_edges");
    return [{
      job: "start-up load",
      state: "running: the API answers 503 until it ends",
      progress: edges === undefined ? "the log's tail into the engine" : `${format(edges)} edges loaded`,
    }];
  },
  function redisRebuild(metrics) {
    if (!backendDown(metrics, "redis")) return [];
    return [{
      job: "Redis rebuild",
      state: "Redis lost the graph or does not answer; the node holding the rebuild lease rebuilds it",
      progress: "not exported: the nodes' logs say when Redis holds the graph again",
    }];
  },
];

function drawJobs(metrics) {
  const rows = document.getElementById("job-rows");
  const jobs = jobSources.flatMap(source => source(metrics));
  rows.replaceChildren(...jobs.map(j => row([j.job, j.state, j.progress])));
  if (jobs.length === 0) rows.append(row(["none running", "", ""]));
}

// row makes a table row of cells: a string, or a node (a link).
function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.append(c);
    tr.append(td);
  }
  return tr;
}

// userLink is a link that looks id up.
function userLink(id) {
  const a = document.createElement("a");
  a.href = "?user=" + id;
  a.textContent = id;
  a.addEventListener("click", ev => {
    ev.preventDefault();
    lookUp(id, []);
  });
  return a;
}

// time is a cell's time: an API time, kept on one line.
function time(t) {
  const s = document.createElement("span");
  s.className = "time";
  s.textContent = t || "";
  return s;
}

// --- the server's history ---------------------------------------------

let historyLoaded = false;
let clockOffset = 0; // the server's clock less this page's, in ms

// loadHistory draws the samples the server kept before the page opened,
// once: each as the metrics of a poll at the server's time of it. The
// page's own samples then go on in the server's time too (clockOffset),
// so that the first rate after the history is right.
async function loadHistory() {
  const r = await getJSON("/console/history");
  if (r.status === 401 || r.status === 403) return; // tried again with a token
  historyLoaded = true;
  if (r.status !== 200 || !r.body) return; // an older server: the charts start now
  clockOffset = r.body.now - Date.now();
  const { times, series: kept } = r.body;
  for (let i = 0; i < times.length; i++) {
    const metrics = new Map();
    for (const s of kept) {
      if (s.values[i] === null) continue;
      if (!metrics.has(s.name)) metrics.set(s.name, []);
      metrics.get(s.name).push({ labels: s.labels, value: s.values[i] });
    }
    sample(metrics, times[i] / 1000);
  }
}

// --- polling ----------------------------------------------------------

let timer = null;

// poll reads /metrics and /readyz once and draws them; it polls again
// after POLL_SECONDS while the page is visible.
async function poll() {
  timer = null;
  const access = document.getElementById("access");
  try {
    const [resp, ready] = await Promise.all([get("/metrics"), getJSON("/readyz")]);
    if (resp.status === 401 || resp.status === 403) {
      access.textContent = "The metrics need a token with scope admin: enter it above.";
    } else if (!resp.ok) {
      access.textContent = `/metrics answered HTTP ${resp.status}`;
    } else {
      access.textContent = "";
      const text = await resp.text();
      if (!historyLoaded) await loadHistory();
      const metrics = parseMetrics(text);
      const build = (metrics.get("followgraph_build_info") || [])[0];
      document.getElementById("version").textContent = build ? build.labels.version : "";
      sample(metrics, (Date.now() + clockOffset) / 1000);
      drawCharts();
      drawBackends(metrics, ready);
      drawJobs(metrics);
    }
  } catch (err) {
    access.textContent = "The server does not answer: " + err.message;
  }
  schedule();
}

function schedule() {
  if (timer === null && !document.hidden) timer = setTimeout(poll, POLL_SECONDS * 1000);
}

// A hidden page polls nothing; shown again, it polls at once.
document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    clearTimeout(timer);
    timer = null;
  } else if (timer === null) {
    poll();
  }
});

// --- the user ---------------------------------------------------------

const ID = /^[1-9][0-9]{0,18}$/;

// lookUp shows user, and their relations to others; the page's address
// then names them (?user=1&relations=2,3), so that it can be linked.
async function lookUp(user, others) {
  const out = document.getElementById("user");
  out.replaceChildren();
  document.getElementById("user-id").value = user;
  document.getElementById("relation-ids").value = others.join(",");
  if (!ID.test(user)) { out.append(error("an id is a positive decimal integer")); return; }
  const bad = others.find(id => !ID.test(id));
  if (bad !== undefined) { out.append(error(`relations: ${JSON.stringify(bad)} is not an id`)); return; }
  const address = "?user=" + user + (others.length ? "&relations=" + others.join(",") : "");
  if (location.search !== address) history.pushState(null, "", address);
  const base = "/v1/users/" + user;
  const [counts, settings, following, followers, relations] = await Promise.all([
    getJSON(base),
    getJSON(base + "/settings"),
    getJSON(`${base}/following?limit=${LIST_LIMIT}`),
    getJSON(`${base}/followers?limit=${LIST_LIMIT}`),
    others.length ? getJSON(`${base}/relations?ids=${others.join(",")}`) : null,
  ]);
  out.append(countsPart(counts, settings));
  const lists = document.createElement("div");
  lists.className = "lists";
  lists.append(listPart("following", "Following", following), listPart("followers", "Followers", followers));
  out.append(lists);
  if (relations) out.append(relationsPart(relations));
}

function error(text) {
  const p = document.createElement("p");
  p.className = "error";
  p.textContent = text;
  return p;
}

function countsPart(counts, settings) {
  if (counts.status !== 200) return error("counts: " + failure(counts));
  const c = counts.body;
  let privacy;
  if (settings.status === 200) privacy = settings.body.private ? "private" : "public";
  else if (settings.status === 404) privacy = "settings not served by this server";
  else privacy = "settings: " + failure(settings);
  const dl = document.createElement("dl");
  dl.id = "counts";
  const fields = [
    ["id", c.id],
    ["state", c.state || "active"],
    ["following", c.following_count],
    ["followers", c.follower_count],
    ["pending follow requests", c.follow_requests_count],
    ["account", privacy],
  ];
  for (const [k, v] of fields) {
    if (v === undefined) continue;
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = String(v);
    dd.dataset.field = k;
    dl.append(dt, dd);
  }
  return dl;
}

function listPart(id, title, page) {
  const div = document.createElement("div");
  div.id = "list-" + id;
  const h = document.createElement("h3");
  h.textContent = title;
  div.append(h);
  if (page.status !== 200) { div.append(error(failure(page))); return div; }
  const table = document.createElement("table");
  table.append(row(["id", "since"]));
  for (const u of page.body.users) table.append(row([userLink(u.id), time(u.since)]));
  div.append(table);
  if (page.body.next_cursor) div.append(`first ${page.body.users.length} shown; there are more`);
  if (page.body.users.length === 0) div.append("none");
  return div;
}

function relationsPart(r) {
  const div = document.createElement("div");
  div.id = "relations";
  const h = document.createElement("h3");
  h.textContent = "Relations";
  div.append(h);
  if (r.status !== 200) { div.append(error(failure(r))); return div; }
  const flags = ["blocking", "blocked_by", "muting", "requested", "requested_by"];
  const table = document.createElement("table");
  table.append(row(["id", "relation", "following since", "followed by since", "also"]));
  for (const e of r.body.relations) {
    table.append(row([userLink(e.id), e.relation, time(e.following_since), time(e.followed_by_since),
      flags.filter(f => e[f]).join(", ")]));
  }
  div.append(table);
  return div;
}

// --- the page ---------------------------------------------------------

document.getElementById("interval").textContent = String(POLL_SECONDS);
document.getElementById("window").textContent = String(WINDOW * POLL_SECONDS / 60);
document.getElementById("token").value = token();

document.getElementById("token-form").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  clearTimeout(timer);
  poll();
});
document.getElementById("token-forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("token").value = "";
});
document.getElementById("user-form").addEventListener("submit", ev => {
  ev.preventDefault();
  lookUp(document.getElementById("user-id").value.trim(), idList(document.getElementById("relation-ids").value));
});

function idList(s) { return (s || "").split(",").map(s => s.trim()).filter(s => s !== ""); }

// lookUpAddress looks up the user the page's address names, if any.
function lookUpAddress() {
  const q = new URLSearchParams(location.search);
  if (q.has("user")) lookUp(q.get("user").trim(), idList(q.get("relations")));
  else document.getElementById("user").replaceChildren();
}
window.addEventListener("popstate", lookUpAddress);

poll();
lookUpAddress();

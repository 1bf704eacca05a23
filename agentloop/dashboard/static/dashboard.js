// agent-loop's dashboard: one page for the live run (--serve) and the report (--report).
// Everything an agent or a plan wrote goes into the page as text (textContent), never as HTML.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const REPORT = document.getElementById("report-data");
const model = { plans: {}, order: [], selected: null, ready: false, connected: false,
                openGroups: new Set(), task: null, message: "" };

// -- building elements -----------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
const money = (usd) => "$" + (Number(usd) || 0).toFixed(2);
function span(seconds) {
  seconds = Math.max(0, Math.round(seconds));
  const h = Math.floor(seconds / 3600), m = Math.floor(seconds / 60) % 60, s = seconds % 60;
  return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(s).padStart(2, "0")}s` : `${s}s`;
}
const since = (iso) => iso ? (Date.now() - Date.parse(iso)) / 1000 : 0;
const between = (a, b) => (a && b) ? span((Date.parse(b) - Date.parse(a)) / 1000) : "";
const clock = (iso) => iso ? new Date(iso).toLocaleTimeString() : "";

// -- the model: a plan's state, and what its run's events say ------------------------------------
function plan(key) {
  if (!model.plans[key]) {
    model.plans[key] = { key, view: null, lanes: {}, live: {}, feed: [], conflicts: [],
                         hold: null, run: null, finished: null, runCost: 0 };
    model.order.push(key);
    if (model.selected === null) model.selected = key;
  }
  return model.plans[key];
}

function reset(key) {
  const p = plan(key);
  Object.assign(p, { lanes: {}, live: {}, feed: [], conflicts: [], hold: null, run: null,
                     finished: null, runCost: 0 });
}

function laneOf(p, ev) { return ev.lane || "main"; }

function apply(key, ev) {
  const p = plan(key);
  const lane = laneOf(p, ev);
  switch (ev.type) {
    case "RunStarted":
      p.run = ev; p.finished = null;
      note(p, ev, `run started: ${ev.pending} of ${ev.total} tasks to do` +
           (ev.parallel > 1 ? `, ${ev.parallel} groups at once` : ""));
      break;
    case "TaskStarted":
      p.live[ev.index] = "running";
      p.lanes[lane] = { name: lane, task: ev.index, summary: ev.summary, attempt: ev.attempt,
                        started: ev.time, turns: 0, calls: 0, tool: "", text: "", cost: 0,
                        role: "developer", idle: false };
      note(p, ev, `task ${ev.index} started (attempt ${ev.attempt}): ${ev.summary}`);
      break;
    case "AgentStarted":
      if (p.lanes[lane]) Object.assign(p.lanes[lane], { role: ev.role, turns: 0, calls: 0 });
      break;
    case "AgentActivity":
      if (p.lanes[lane]) Object.assign(p.lanes[lane], { turns: ev.turns, calls: ev.tool_calls,
                                                        tool: ev.tool || p.lanes[lane].tool,
                                                        text: ev.text });
      break;
    case "AgentFinished":
      p.runCost += Number(ev.cost_usd) || 0;
      if (p.lanes[lane]) p.lanes[lane].cost += Number(ev.cost_usd) || 0;
      break;
    case "TaskFinished":
      p.live[ev.index] = ev.status;
      for (const l of Object.values(p.lanes)) if (l.task === ev.index) l.idle = true;
      if (ev.status === "conflicted") p.conflicts.push({ index: ev.index, text: ev.error || "" });
      note(p, ev, `task ${ev.index} ${ev.status}` + (ev.error ? `: ${ev.error}` : ""));
      break;
    case "LimitWait":
      p.hold = ev;
      note(p, ev, `usage limit: waiting until ${clock(new Date(ev.until * 1000).toISOString())}` +
           ` (${ev.reason})`);
      break;
    case "LimitWaitOver":
      p.hold = null; note(p, ev, "the usage-limit wait is over"); break;
    case "LaneNote":
      note(p, ev, ev.text); break;
    case "RetryDecided":
      note(p, ev, `task ${ev.index}: ${ev.retry ? "retries" : "gives up"} (${ev.reason})`); break;
    case "ReviewVerdict":
      note(p, ev, `task ${ev.index}: review ${ev.round}/${ev.rounds} ${ev.verdict}`); break;
    case "ChecksDone":
      if (ev.failed && ev.failed.length) note(p, ev, `task ${ev.index}: checks failed: ${ev.failed.join(", ")}`);
      break;
    case "RunFinished":
      p.finished = ev; p.hold = null;
      for (const l of Object.values(p.lanes)) l.idle = true;
      note(p, ev, "run finished" + (ev.stopped ? `: ${ev.stopped}` : ""));
      break;
  }
}

function note(p, ev, text) {
  p.feed.push({ time: ev.time, lane: ev.lane || "", text });
  if (p.feed.length > 300) p.feed.splice(0, p.feed.length - 300);
}

// -- drawing ---------------------------------------------------------------------------------
let drawing = false;
function redraw() {
  if (drawing) return;
  drawing = true;
  requestAnimationFrame(() => { drawing = false; draw(); });
}

function draw() {
  const root = document.getElementById("app");
  const p = model.plans[model.selected];
  const main = el("main", {}, p ? [totals(p), controls(p), hold(p), conflicts(p), lanes(p),
                                   groups(p), feed(p)] : el("p", { class: "empty" }, "no plan has run here yet"));
  const detail = document.getElementById("detail") || el("section", { id: "detail" });
  root.replaceChildren(header(), main, detail);
}

function header() {
  const ended = model.order.length && model.order.every((k) => model.plans[k].finished);
  const status = REPORT ? "report" : model.connected ? (model.ready ? "live" : "loading…")
    : ended ? "the run has ended; the dashboard is no longer served" : "disconnected, retrying…";
  return el("header", {},
    el("h1", {}, "agent-loop"),
    el("nav", {}, model.order.map((key) => {
      const v = model.plans[key].view;
      return el("button", { class: key === model.selected ? "tab on" : "tab", "data-plan": key,
                            onclick: () => { model.selected = key; redraw(); } },
                v ? v.task_file : key);
    })),
    el("span", { class: "conn", id: "conn" }, status));
}

function totals(p) {
  const v = p.view || { tasks: [], cost_usd: 0 };
  const counts = {};
  for (const t of v.tasks) { const s = p.live[t.index] || t.status; counts[s] = (counts[s] || 0) + 1; }
  const budget = v.budget !== null && v.budget !== undefined ? ` of ${money(v.budget)} budget` : "";
  const elapsed = p.run ? (p.finished ? span(p.finished.seconds) : span(since(p.run.time))) : "";
  return el("section", { class: "totals", id: "totals" },
    el("strong", {}, v.title || v.task_file || p.key),
    el("span", {}, `${money(v.cost_usd)}${v.cost_known === false ? "+" : ""}${budget}`),
    p.run ? el("span", {}, `this run: ${money(p.runCost)}, ${elapsed}`) : null,
    Object.entries(counts).map(([s, n]) => el("span", { class: "badge " + s }, `${n} ${s}`)),
    p.finished ? el("span", { class: "done", id: "run-finished" },
                    "run finished" + (p.finished.stopped ? `: ${p.finished.stopped}` : "")) : null,
    v.error ? el("span", { class: "error" }, v.error) : null);
}

function controls(p) {
  if (REPORT) return null;
  const running = p.run && !p.finished;
  return el("section", { class: "controls" },
    el("button", { id: "stop-after", disabled: !running, onclick: () => stop(p.key, false) },
       "stop after the running tasks"),
    el("button", { id: "stop-now", class: "danger", disabled: !running,
                   onclick: () => { if (confirm("Stop the run now, as Ctrl+C does?")) stop(p.key, true); } },
       "stop now"),
    el("span", { id: "control-message" }, model.message));
}

async function stop(key, now) {
  const answer = await fetch("api/stop?token=" + encodeURIComponent(TOKEN), {
    method: "POST", headers: { "Content-Type": "application/json", "X-Token": TOKEN },
    body: JSON.stringify({ plan: key, now }) });
  const body = await answer.json().catch(() => ({ message: `refused (${answer.status})` }));
  model.message = body.message || body.error || "";
  redraw();
}

function hold(p) {
  if (!p.hold) return null;
  const until = new Date(p.hold.until * 1000);
  return el("section", { class: "hold", id: "hold" },
    `usage limit: every lane waits until ${until.toLocaleTimeString()} ` +
    `(in ${span((until - Date.now()) / 1000)}; wait ${p.hold.wait} of ${p.hold.max_waits}): ${p.hold.reason}`);
}

function conflicts(p) {
  if (!p.conflicts.length) return null;
  return el("section", { class: "conflicts", id: "conflicts" }, el("h2", {}, "conflicts for a person"),
    p.conflicts.map((c) => el("div", { class: "conflict" }, el("strong", {}, `task ${c.index}`),
                              el("pre", {}, c.text))));
}

function lanes(p) {
  const all = Object.values(p.lanes);
  if (!all.length) return null;
  return el("section", { class: "lanes", id: "lanes" }, all.map((l) => el("div", {
      class: "lane" + (l.idle ? " idle" : ""), "data-lane": l.name },
    el("div", { class: "lane-head" }, el("strong", {}, l.name), ` task ${l.task}`,
       l.attempt > 1 ? ` (attempt ${l.attempt})` : "", l.role !== "developer" ? ` · ${l.role}` : ""),
    el("div", { class: "summary" }, l.summary),
    el("div", { class: "stats" }, `${l.turns} turns · ${l.calls} tool calls · ${money(l.cost)} · ` +
       (l.idle ? "done" : span(since(l.started)))),
    el("div", { class: "tool" }, l.tool ? "→ " + l.tool : ""),
    el("div", { class: "said" }, l.text !== l.tool ? l.text : ""))));
}

function groups(p) {
  const v = p.view;
  if (!v) return null;
  const byGroup = new Map();
  for (const t of v.tasks) { if (!byGroup.has(t.group)) byGroup.set(t.group, []); byGroup.get(t.group).push(t); }
  return el("section", { class: "groups", id: "groups" }, [...byGroup].map(([name, tasks]) => {
    const id = p.key + "\u0000" + name;
    const done = tasks.filter((t) => ["completed", "skipped"].includes(p.live[t.index] || t.status)).length;
    // Many groups: the finished ones start folded, the ones at work or in trouble open.
    const busy = tasks.some((t) => !["completed", "skipped", "pending"].includes(p.live[t.index] || t.status));
    const open = model.openGroups.has("open:" + id) ||
      (!model.openGroups.has("closed:" + id) && (byGroup.size <= 8 || busy));
    const box = el("details", { open, "data-group": name },
      el("summary", {}, el("strong", {}, name || "(no group)"), ` ${done}/${tasks.length}`),
      el("table", {}, el("tbody", {}, tasks.map((t) => row(p, t)))));
    box.addEventListener("toggle", () => {
      model.openGroups.delete(box.open ? "closed:" + id : "open:" + id);
      model.openGroups.add(box.open ? "open:" + id : "closed:" + id);
    });
    return box;
  }));
}

function row(p, t) {
  const status = p.live[t.index] || t.status;
  return el("tr", { "data-task": t.index, class: model.task === t.index ? "picked" : "",
                    onclick: () => pick(p, t) },
    el("td", { class: "num" }, t.index),
    el("td", { class: "task-summary" }, t.summary),
    el("td", { class: "status" }, el("span", { class: "badge " + status }, status)),
    el("td", { class: "attempts" }, t.attempts ? `${t.attempts} att.` : ""),
    el("td", { class: "cost" }, t.cost_usd ? money(t.cost_usd) : ""),
    el("td", { class: "time" }, between(t.started_at, t.finished_at)),
    el("td", { class: "change" }, t.change_id ? t.change_id.slice(0, 12) : ""));
}

function feed(p) {
  return el("section", { class: "feed", id: "feed" }, el("h2", {}, "events"),
    el("ol", {}, p.feed.slice(-60).reverse().map((n) =>
      el("li", {}, el("time", {}, clock(n.time)), n.lane ? el("b", {}, n.lane) : null, n.text))));
}

// -- a task's log and diff, fetched a page at a time --------------------------------------------
function api(path, params) {
  const query = new URLSearchParams({ ...params, token: TOKEN });
  return fetch(`${path}?${query}`);
}

function pick(p, t) {
  model.task = t.index;
  const detail = el("section", { id: "detail" },
    el("h2", {}, `task ${t.index}: `, t.summary),
    t.error ? el("pre", { class: "error" }, t.error) : null,
    t.files && t.files.length ? el("ul", { class: "files" }, t.files.map((f) => el("li", {}, f))) : null);
  if (REPORT) {
    detail.append(el("p", { class: "empty" }, "logs and diffs are not part of the report: " +
                     "run agent-loop --serve in the repository to read them"));
  } else {
    const body = el("div", { class: "viewer" });
    const logs = t.logs || [];
    const chooser = el("select", { id: "log-choice" }, logs.map((name, n) =>
      el("option", { value: n, selected: n === logs.length - 1 }, name.split("/").pop())));
    const search = el("input", { id: "log-search", type: "search", placeholder: "search the log" });
    detail.append(el("div", { class: "viewer-bar" },
      logs.length ? chooser : "no log yet",
      logs.length ? el("button", { id: "show-log", onclick: () => showLog(p, t, chooser.value, -1, body) }, "log") : null,
      logs.length ? search : null,
      logs.length ? el("button", { onclick: () => findInLog(p, t, chooser.value, search.value, body) }, "find") : null,
      t.change_id ? el("button", { id: "show-diff", onclick: () => showDiff(p, t, body) }, "diff") : null), body);
    search.addEventListener("keydown", (e) => { if (e.key === "Enter") findInLog(p, t, chooser.value, search.value, body); });
    if (logs.length) showLog(p, t, logs.length - 1, -1, body);
  }
  document.getElementById("detail").replaceWith(detail);
  redraw();
}

async function showLog(p, t, n, offset, body, mark) {
  const answer = await api("api/log", { plan: p.key, task: t.index, n, offset });
  const page = await answer.json();
  if (page.error) { body.replaceChildren(el("p", { class: "error" }, page.error)); return; }
  const go = (label, to) => el("button", { disabled: to === null, onclick: () => showLog(p, t, n, to, body) }, label);
  const lines = el("div", { class: "log", id: "log" });
  let results = null;
  for (const [i, line] of page.lines.entries()) {
    const kind = line.startsWith("→ ") ? "call" : /^\s+[←✗] /.test(line) ? "result" : "said";
    if (kind === "result") {
      if (!results) { results = el("details", { class: "results" }, el("summary", {}, "output")); lines.append(results); }
      results.append(el("div", { class: "line result" }, line));
    } else {
      results = null;
      lines.append(el("div", { class: "line " + kind, id: i === 0 && mark ? "mark" : null }, line));
    }
  }
  body.replaceChildren(el("div", { class: "pager" }, go("start", page.offset ? 0 : null),
    go("earlier", page.before), go("later", page.after), go("end", page.after === null ? null : -1),
    el("span", {}, `bytes ${page.offset}–${page.offset + page.lines.join("\n").length} of ${page.size}`)), lines);
}

async function findInLog(p, t, n, query, body) {
  if (!query) return;
  const answer = await api("api/log", { plan: p.key, task: t.index, n, q: query });
  const found = await answer.json();
  body.replaceChildren(el("div", { class: "hits" }, el("p", {}, `${found.hits.length}${found.more ? "+" : ""} lines hold “`, query, "”"),
    found.hits.map((h) => el("div", { class: "hit", onclick: () => showLog(p, t, n, h.offset, body, true) }, h.line))));
}

async function showDiff(p, t, body) {
  const answer = await api("api/diff", { plan: p.key, task: t.index });
  const text = await answer.text();
  const files = text.split(/\n(?=diff --git )/);
  body.replaceChildren(el("div", { class: "diff", id: "diff" }, files.map((part, i) => {
    const head = part.split("\n", 1)[0];
    const lines = part.split("\n").map((l) => el("span", { class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "" }, l + "\n"));
    return i === 0 && !head.startsWith("diff --git") ? el("pre", { class: "stat" }, lines)
      : el("details", { open: true }, el("summary", {}, head.replace(/^diff --git a\//, "").replace(/ b\/.*$/, "")), el("pre", {}, lines));
  })));
}

// -- where the data comes from: the server's event stream, or the report's own copy ---------------
function connect() {
  const source = new EventSource("events?token=" + encodeURIComponent(TOKEN));
  source.onopen = () => { model.connected = true; redraw(); };
  source.onerror = () => { model.connected = false; model.ready = false; redraw(); };
  source.addEventListener("reset", (m) => { reset(JSON.parse(m.data).plan); redraw(); });
  source.addEventListener("plan", (m) => {
    const view = JSON.parse(m.data);
    const p = plan(view.key);
    p.view = view; p.live = {};   // the state is saved before its events are written
    redraw();
  });
  source.addEventListener("event", (m) => { const d = JSON.parse(m.data); apply(d.plan, d.event); redraw(); });
  source.addEventListener("ready", () => { model.ready = true; redraw(); });
}

if (REPORT) {
  const data = JSON.parse(REPORT.textContent);
  for (const item of data.plans) {
    plan(item.view.key).view = item.view;
    for (const ev of item.events) apply(item.view.key, ev);
    model.plans[item.view.key].live = {};
  }
  model.ready = true;
  draw();
} else {
  draw();
  connect();
  setInterval(() => { if (Object.values(model.plans).some((p) => p.run && !p.finished)) redraw(); }, 1000);
}

// pgmbus dashboard: plain JavaScript, no build step. Reads the JSON API with the API key kept
// in this tab's sessionStorage; refreshes the visible page every few seconds.
"use strict";

const EVERY_MS = 3000;
const state = { key: sessionStorage.getItem("pgmbus-key") || "", scopes: [], client: null,
                page: "queues", prevDepth: new Map(), dmqOpen: null, cbOpen: null, timer: null,
                charted: { queues: null, streams: null, timers: null } };

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function globMatch(glob, name) {
  const re = "^" + glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")
    .replace(/\?/g, ".") + "$";
  return new RegExp(re).test(name);
}

// Mirrors pgmbus.http.scopes: write covers everything; consume and post also cover read.
function can(engine, action, name) {
  return state.scopes.some((s) => {
    const [e, a, ...rest] = s.split(":");
    if (e !== engine || !globMatch(rest.join(":"), name)) return false;
    return a === action || a === "write" || (action === "read" && (a === "consume" || a === "post"));
  });
}

async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  opts.headers["authorization"] = "Bearer " + state.key;
  if (opts.body && typeof opts.body !== "string") {
    opts.headers["content-type"] = "application/json";
    opts.body = JSON.stringify(opts.body);
  }
  const r = await fetch(path, opts);
  if (r.status === 204) return null;
  const body = await r.json().catch(() => ({ error: "BadResponse", message: r.statusText }));
  if (!r.ok) throw new Error(`${r.status} ${body.error}: ${body.message}`);
  return body;
}

function fmtTime(t) {
  if (!t) return "";
  const d = new Date(t);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}
const fmtNum = (x, digits) => (x === null || x === undefined ? "" :
  Number(x).toFixed(digits === undefined ? 0 : digits));

// A duration as a person reads it: "42.5 s", "7 min 3 s", "5 h 12 min", "3 d 0 h".
function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(Number(seconds))) return "";
  const s = Math.max(0, Number(seconds));
  if (s < 60) return `${s.toFixed(1)} s`;
  const whole = Math.floor(s);
  const [d, h, m] = [Math.floor(whole / 86400), Math.floor(whole / 3600) % 24, Math.floor(whole / 60) % 60];
  if (d) return `${d} d ${h} h`;
  if (h) return `${h} h ${m} min`;
  return `${m} min ${whole % 60} s`;
}

// --- charts: SVG drawn here from the service's samples (GET /v1/ops/series/...) -------------

const CHART_W = 320, CHART_H = 90, PAD = 4;

// One chart of one field: a polyline over time; the drawn points are kept in data-values
// ([[at, value], ...]) so that what is on the page can be read back.
function chart(title, points, field, fmt) {
  const drawn = points.filter((p) => p[field] !== null && p[field] !== undefined)
    .map((p) => [p.at, Number(p[field])]);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${CHART_W} ${CHART_H}`);
  svg.setAttribute("width", CHART_W);
  svg.setAttribute("height", CHART_H);
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  if (drawn.length) {
    const t0 = drawn[0][0], t1 = Math.max(drawn[drawn.length - 1][0], t0 + 1);
    const top = Math.max(...drawn.map((d) => d[1]), 1);
    line.setAttribute("points", drawn.map(([t, v]) =>
      `${(PAD + (t - t0) / (t1 - t0) * (CHART_W - 2 * PAD)).toFixed(1)},` +
      `${(CHART_H - PAD - v / top * (CHART_H - 2 * PAD)).toFixed(1)}`).join(" "));
  }
  svg.append(line);
  const last = drawn.length ? fmt(drawn[drawn.length - 1][1]) : "no samples yet";
  const peak = drawn.length ? fmt(Math.max(...drawn.map((d) => d[1]))) : "";
  return el("figure", { class: "chart", "data-field": field, "data-values": JSON.stringify(drawn) },
    el("figcaption", {}, `${title}: `, el("b", { class: "last" }, last),
      peak ? el("span", { class: "muted" }, ` (peak ${peak})`) : null), svg);
}

const perSecond = (x) => `${fmtNum(x, 1)}/s`;
const count = (x) => fmtNum(x, 0);

async function drawCharts(page) {
  const box = $(`#${page}-charts`);
  const picked = state.charted[page];
  if (!picked) { box.hidden = true; return; }
  let title, figures, r;
  if (page === "queues") {
    r = await api(`/v1/ops/series/queues/${encodeURIComponent(picked.queue)}`);
    const c = r.consumers.find((x) => x.consumer === picked.consumer) || { points: [] };
    title = `${picked.queue} / ${picked.consumer}`;
    figures = [chart("depth", c.points, "depth", count),
               chart("posted", c.points, "posted_per_s", perSecond),
               chart("consumed", c.points, "consumed_per_s", perSecond),
               chart("dead", c.points, "dead_per_s", perSecond)];
  } else if (page === "streams") {
    r = await api(`/v1/ops/series/streams/${encodeURIComponent(picked.group)}`);
    const s = r.slots.find((x) => x.slot === picked.slot) || { points: [] };
    title = `${picked.group} slot ${picked.slot}`;
    figures = [chart("unread", s.points, "unread", count),
               chart("lag", s.points, "lag_s", fmtDuration)];
  } else {
    r = await api(`/v1/ops/series/timers/${encodeURIComponent(picked.client)}`);
    title = picked.client;
    figures = [chart("due", r.points, "due", count), chart("late", r.points, "late", count),
               chart("lateness", r.points, "lateness_s", fmtDuration),
               chart("failed", r.points, "failed_per_s", perSecond)];
  }
  // where the figures come from: Prometheus, or the service's samples (and why, when a
  // configured Prometheus did not answer)
  const from = r.source === "prometheus" ? "from Prometheus" : "from the service's samples" +
    (r.prometheus_error ? `; ${r.prometheus_error}` : "");
  box.querySelector(".chart-title").textContent = `${title} · ${from}`;
  box.querySelector(".chart-row").replaceChildren(...figures);
  box.hidden = false;
}

function pick(page, what) {
  state.charted[page] = what;
  drawCharts(page).catch((e) => setStatus(e.message, true));
}

function fill(tableSel, rows) {
  const body = $(tableSel + " tbody");
  body.replaceChildren(...rows);
  if (!rows.length) {
    const cols = $(tableSel + " thead tr").children.length;
    body.append(el("tr", {}, el("td", { colspan: cols, class: "muted" }, "none")));
  }
}

function setStatus(text, isError) {
  const s = $("#status");
  s.textContent = text || "";
  s.className = isError ? "error" : "";
}

// --- pages ---------------------------------------------------------------------------------

async function loadQueues() {
  const queues = await api("/v1/queues");
  const stats = (await Promise.all(queues.map((q) => api(`/v1/queues/${q.qname}/stats`)))).flat();
  const now = performance.now();
  fill("#queues-table", stats.map((s) => {
    const k = s.qname + "/" + s.cname;
    const prev = state.prevDepth.get(k);
    state.prevDepth.set(k, { depth: s.depth, at: now });
    const rate = prev ? (s.depth - prev.depth) / ((now - prev.at) / 1000) : null;
    return el("tr", { "data-queue": s.qname, "data-consumer": s.cname, class: "clickable",
                      onclick: (ev) => { if (ev.target.tagName !== "BUTTON") pick("queues", { queue: s.qname, consumer: s.cname }); } },
      el("td", {}, s.qname), el("td", {}, s.cname),
      el("td", { class: "n depth" }, s.depth), el("td", { class: "n ready" }, s.ready),
      el("td", { class: "n delayed" }, s.delayed), el("td", { class: "n leased" }, s.leased),
      el("td", { class: "n expired" }, s.expired),
      el("td", { class: "n oldest", title: fmtNum(s.oldest_age_s, 1) + " s" }, fmtDuration(s.oldest_age_s)),
      el("td", { class: "n dead" + (s.dmq ? " bad" : "") }, s.dmq),
      el("td", { class: "n rate" }, rate === null ? "" : fmtNum(rate, 1)),
      el("td", { class: "n posted" }, s.posted), el("td", { class: "n consumed" }, s.consumed),
      el("td", {}, el("button", { class: "write pause", disabled: !can("queues", "write", s.qname),
        onclick: () => pauseAction(s) }, s.paused ? "resume" : "pause")));
  }));
}

// Pause or resume one consumer (a paused queue shows every consumer paused: resume the queue).
async function pauseAction(s) {
  const kind = s.paused ? "resume" : "pause";
  try {
    let r = await api(`/v1/queues/${s.qname}/${kind}`, { method: "POST", body: { consumer: s.cname } });
    if (kind === "resume" && !r.changed) {
      r = await api(`/v1/queues/${s.qname}/resume`, { method: "POST", body: {} });
    }
    setStatus(`${kind}d ${s.qname}/${s.cname}`);
    await loadQueues();
  } catch (e) { setStatus(e.message, true); }
}

async function loadDmq() {
  const page = await api("/v1/dmq?limit=500");
  fill("#dmq-table", page.items.map((m) =>
    el("tr", { class: "clickable", "data-dmq-id": m.dmq_id, onclick: () => openDmq(m) },
      el("td", { class: "n" }, m.dmq_id), el("td", {}, m.qname), el("td", {}, m.cname || ""),
      el("td", {}, m.iid), el("td", { class: "n" }, m.attempts), el("td", {}, m.reason),
      el("td", {}, fmtTime(m.died_at)),
      el("td", {}, el("button", { onclick: (ev) => { ev.stopPropagation(); openDmq(m); } },
        "open")))));
  if (state.dmqOpen && !page.items.some((m) => m.dmq_id === state.dmqOpen.dmq_id)) closeDmq();
}

function openDmq(m) {
  state.dmqOpen = m;
  $("#dmq-detail-id").textContent = `${m.dmq_id} (${m.iid})`;
  $("#dmq-detail-body").textContent = JSON.stringify(
    { data: m.data, headers: m.headers, properties: m.properties, reason: m.reason }, null, 2);
  const writable = can("queues", "write", m.qname);
  $("#dmq-replay").disabled = !writable;
  $("#dmq-delete").disabled = !writable;
  $("#dmq-detail").hidden = false;
}

function closeDmq() {
  state.dmqOpen = null;
  $("#dmq-detail").hidden = true;
}

async function dmqAction(kind) {
  const m = state.dmqOpen;
  if (!m) return;
  if (kind === "delete" && !confirm(`Delete dead message ${m.dmq_id} for good?`)) return;
  try {
    if (kind === "replay") {
      const r = await api(`/v1/queues/${m.qname}/dmq/${m.dmq_id}/replay`, { method: "POST" });
      setStatus(`replayed dead message ${m.dmq_id} as ${r.iid}`);
    } else {
      await api(`/v1/queues/${m.qname}/dmq/${m.dmq_id}`, { method: "DELETE" });
      setStatus(`deleted dead message ${m.dmq_id}`);
    }
    closeDmq();
    await loadDmq();
  } catch (e) { setStatus(e.message, true); }
}

async function loadStreams() {
  const groups = await api("/v1/streams/groups");
  const rows = [];
  for (const g of groups) {
    for (const s of g.slot_status) {
      const lease = g.http_leases.find((l) => l.slot === s.slot);
      const writable = can("streams", "write", g.name);
      const input = el("input", { placeholder: "beginning | now | id | time", "data-seek": g.name });
      const seek = el("form", { class: "seek", onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          await api(`/v1/streams/groups/${g.name}/seek`, { method: "POST", body: { start: input.value } });
          setStatus(`group ${g.name} moved to ${input.value}`);
          await loadStreams();
        } catch (e) { setStatus(e.message, true); }
      } }, input, el("button", { class: "write", disabled: !writable }, "seek"));
      rows.push(el("tr", { "data-group": g.name, "data-slot": s.slot, class: "clickable",
                           onclick: (ev) => { if (!ev.target.closest("form")) pick("streams", { group: g.name, slot: s.slot }); } },
        el("td", {}, g.name), el("td", { class: g.state === "expired" ? "bad" : "" }, g.state),
        el("td", { class: "n" }, s.slot), el("td", { class: "n unread" }, s.pending_events),
        el("td", { class: "n lag", title: fmtNum(s.lag_s, 1) + " s" }, fmtDuration(s.lag_s)),
        el("td", {}, fmtTime(s.committed_at)),
        el("td", { class: "n retries" }, g.retries),
        el("td", { class: "n dead" + (g.dmq ? " bad" : "") }, g.dmq),
        el("td", {}, lease ? `${lease.events} events until ${fmtTime(lease.lease_until)}` : ""),
        el("td", {}, seek)));
    }
  }
  fill("#groups-table", rows);
}

async function loadTimers() {
  const overview = await api("/v1/ops/timers");
  fill("#timers-table", overview.map((t) => el("tr", { "data-client": t.client, class: "clickable",
                                                       onclick: () => pick("timers", { client: t.client }) },
    el("td", {}, t.client), el("td", { class: "n pending" }, t.pending),
    el("td", { class: "n due" }, t.due), el("td", { class: "n late" + (t.late ? " warn" : "") }, t.late),
    el("td", { class: "n notified" }, t.notified),
    el("td", { class: "n failed" + (t.failed ? " bad" : "") }, t.failed),
    el("td", { class: "n" }, t.cancelled), el("td", { class: "n" }, t.rejected))));
  const f = $("#cb-filter").value;
  const q = f === "due" ? "&due=true" : f ? `&status=${f}` : "";
  const callbacks = await api(`/v1/ops/callbacks?limit=200${q}`);
  fill("#callbacks-table", callbacks.map((r) => {
    const c = r.callback;
    return el("tr", { class: "clickable", "data-callback": `${r.client}/${c.group_key}/${c.event_key}`,
                      onclick: () => openCallback(r.client, c) },
      el("td", {}, r.client), el("td", {}, `${c.group_key} / ${c.event_key}`),
      el("td", { class: c.status === "failed" ? "bad" : "" }, c.status),
      el("td", {}, fmtTime(c.run_at)), el("td", { class: "n" }, c.attempts),
      el("td", {}, r.last_error || (r.last_status_code ? `HTTP ${r.last_status_code}` : "")));
  }));
  if (state.cbOpen) await openCallback(state.cbOpen.client, state.cbOpen.c);
}

async function openCallback(client, c) {
  state.cbOpen = { client, c };
  const h = await api(`/v1/ops/callbacks/${encodeURIComponent(client)}/` +
    `${encodeURIComponent(c.group_key)}/${encodeURIComponent(c.event_key)}/history`);
  $("#cb-detail-id").textContent = `${client}: ${c.group_key} / ${c.event_key}`;
  fill("#cb-attempts", h.attempts.map((a) => el("tr", {},
    el("td", {}, a.attempt), el("td", {}, a.call), el("td", {}, fmtTime(a.started_at)),
    el("td", { class: a.outcome === "ok" ? "" : "bad" }, a.outcome),
    el("td", {}, a.status_code || ""), el("td", {}, a.error || ""))));
  fill("#cb-changes", h.changes.map((x) => el("tr", {},
    el("td", {}, fmtTime(x.at)), el("td", {}, x.action), el("td", {}, x.old_status || ""),
    el("td", {}, x.new_status || ""))));
  $("#cb-detail").hidden = false;
}

async function loadSagas() {
  const sagas = await api("/v1/ops/sagas?limit=200");
  fill("#sagas-table", sagas.map((s) => {
    const steps = el("div", { class: "steps" });
    for (const [name, st] of Object.entries(s.steps || {})) {
      const comp = st.compensation ? `, undo ${st.compensation}` : "";
      steps.append(el("span", { class: st.forward, title: `forward ${st.forward}${comp}` },
        `${name}: ${st.forward}${comp}`));
    }
    return el("tr", { "data-saga": s.saga_id },
      el("td", { class: "n" }, s.saga_id), el("td", {}, s.name),
      el("td", { class: "saga-state" + (s.state.startsWith("compens") ? " warn" : "") }, s.state),
      el("td", {}, steps), el("td", {}, s.reason || ""), el("td", {}, fmtTime(s.created_at)),
      el("td", {}, fmtTime(s.finished_at)));
  }));
}

async function loadSchedules() {
  const rows = await api("/v1/ops/schedules");
  fill("#schedules-table", rows.map((r) => {
    const s = r.schedule;
    const every = s.cron ? `cron ${s.cron} (${s.timezone})` : `every ${s.interval_s} s`;
    return el("tr", { "data-schedule": `${r.client}/${s.schedule_key}` },
      el("td", {}, r.client), el("td", {}, s.schedule_key), el("td", {}, every),
      el("td", {}, s.url), el("td", { class: s.paused ? "warn" : "" }, s.paused ? "paused" : "active"),
      el("td", {}, fmtTime(s.generated_until)));
  }));
}

const LOADERS = { queues: loadQueues, dmq: loadDmq, streams: loadStreams, timers: loadTimers,
                  sagas: loadSagas, schedules: loadSchedules };

async function refresh() {
  if (!state.key) { setStatus("enter an API key to start"); return; }
  try {
    await LOADERS[state.page]();
    if (state.charted[state.page] !== undefined) await drawCharts(state.page);
    $("#updated").textContent = new Date().toLocaleTimeString();
    document.body.dataset.loaded = state.page;
    if ($("#status").className === "error") setStatus("");
  } catch (e) {
    if (e.message.startsWith("401 ")) forget();  // the key was revoked or expired meanwhile
    setStatus(e.message, true);
  }
}

function show(page) {
  state.page = LOADERS[page] ? page : "queues";
  for (const s of document.querySelectorAll(".page")) s.classList.toggle("active", s.id === "page-" + state.page);
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.page === state.page);
  delete document.body.dataset.loaded;
  setStatus("");
  refresh();
}

async function login(key) {
  state.key = key;
  sessionStorage.setItem("pgmbus-key", key);
  try {
    const me = await api("/v1/whoami");
    state.scopes = me.scopes;
    state.client = me.client;
    const writes = me.scopes.filter((s) => s.split(":")[1] === "write").length;
    $("#whoami").textContent = `${me.client} (${writes ? "write" : "read-only"})`;
    setStatus("");
    show(state.page);
  } catch (e) {
    forget();
    setStatus(e.message, true);
  }
}

// A key that did not authenticate: nothing read with the previous key stays on the page.
function forget() {
  state.key = "";
  state.scopes = [];
  state.client = null;
  state.prevDepth.clear();
  state.charted = { queues: null, streams: null, timers: null };
  sessionStorage.removeItem("pgmbus-key");
  $("#whoami").textContent = "";
  for (const body of document.querySelectorAll("table tbody")) body.replaceChildren();
  for (const box of document.querySelectorAll(".detail, .charts")) box.hidden = true;
  for (const row of document.querySelectorAll(".chart-row")) row.replaceChildren();
  $("#dmq-detail-body").textContent = "";
  state.dmqOpen = null;
  state.cbOpen = null;
  if (typeof forgetBrowse === "function") forgetBrowse();  // browse.js's pages
  delete document.body.dataset.loaded;
}

function schedule() {
  clearInterval(state.timer);
  state.timer = setInterval(() => { if ($("#auto").checked) refresh(); }, EVERY_MS);
}

$("#every").textContent = EVERY_MS / 1000;
$("#login").addEventListener("submit", (ev) => { ev.preventDefault(); login($("#key").value.trim()); });
$("#dmq-replay").addEventListener("click", () => dmqAction("replay"));
$("#dmq-delete").addEventListener("click", () => dmqAction("delete"));
$("#dmq-close").addEventListener("click", closeDmq);
$("#cb-close").addEventListener("click", () => { state.cbOpen = null; $("#cb-detail").hidden = true; });
$("#cb-filter").addEventListener("change", refresh);
window.addEventListener("hashchange", () => show(location.hash.slice(1)));
state.page = location.hash.slice(1) || "queues";
schedule();
if (state.key) login(state.key); else show(state.page);

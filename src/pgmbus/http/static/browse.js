// pgmbus dashboard, the message browser: a queue's messages (filters, pages, a detail pane,
// operators' actions behind a confirmation) and a stream group's events around its cursor.
// Loaded after app.js, whose helpers (state, api, el, $, can, fill, setStatus, show, LOADERS)
// it uses; the server checks every scope again, the page only hides what a key cannot do.
"use strict";

const PAGE_SIZE = 50;
const browse = { queue: "", filters: {}, cursors: [null], next: null, open: null };
const around = { group: "", topic: "", slot: "", n: 5, shown: false };

const FILTERS = { state: "#msg-state", consumer: "#msg-consumer", priority: "#msg-priority",
                  header: "#msg-header", field: "#msg-field", iid: "#msg-iid" };

function readFilters() {
  const f = {};
  for (const [name, sel] of Object.entries(FILTERS)) {
    const v = $(sel).value.trim();
    if (v && !(name === "state" && v === "all")) f[name] = v;
  }
  // datetime-local is the browser's local time: sent as UTC
  for (const name of ["since", "until"]) {
    const v = $(`#msg-${name}`).value;
    if (v) f[name] = new Date(v).toISOString();
  }
  return f;
}

function badge(stateName) {
  return el("span", { class: `badge state-${stateName}` }, stateName);
}

const preview = (data) => {
  const text = JSON.stringify(data);
  return text.length > 80 ? text.slice(0, 79) + "…" : text;
};

function fillQueues(queues) {
  const select = $("#msg-queue");
  const names = queues.map((q) => q.qname);
  if (!names.includes(browse.queue)) {
    browse.queue = names[0] || "";
    browse.cursors = [null];
    browse.open = null;
  }
  select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  select.value = browse.queue;
}

async function loadMessages() {
  fillQueues(await api("/v1/queues"));
  if (!browse.queue) { fill("#messages-table", []); closeMessage(); return; }
  const params = new URLSearchParams(Object.assign({ limit: PAGE_SIZE }, browse.filters));
  const after = browse.cursors[browse.cursors.length - 1];
  if (after) params.set("after", after);
  const page = await api(`/v1/queues/${browse.queue}/messages?${params}`);
  browse.next = page.next_after;
  fill("#messages-table", page.items.map((m) =>
    el("tr", { class: "clickable", "data-iid": m.iid, "data-state": m.state,
               "data-consumer": m.consumer || "", onclick: () => openMessage(m.iid) },
      el("td", { class: "iid" }, m.iid), el("td", {}, m.consumer || ""),
      el("td", { class: "state" }, badge(m.state)), el("td", { class: "n" }, m.priority),
      el("td", {}, fmtTime(m.added)),
      el("td", {}, m.state === "dead" ? `died ${fmtTime(m.died_at)}` :
        m.vt ? fmtTime(m.vt) : "waits for consume_after"),
      el("td", { class: "n" }, m.attempts),
      el("td", { class: "data", title: m.reason || "" },
        m.reason ? el("span", { class: "bad" }, `${m.reason}: `) : null, preview(m.data)))));
  $("#msg-prev").disabled = browse.cursors.length < 2;
  $("#msg-first").disabled = browse.cursors.length < 2;
  $("#msg-next").disabled = !browse.next;
  // a page reads at most 10,000 rows: fewer matches than a page, and more to read
  const short = page.items.length < PAGE_SIZE && page.next_after;
  $("#msg-page").textContent = `page ${browse.cursors.length}` +
    (short ? " (the filters matched less than a page in the rows read: Next reads on)" : "");
  if (browse.open) await openMessage(browse.open, true);
}

function facts(d) {
  const items = [];
  const add = (term, value) => {
    if (value === null || value === undefined || value === "" ||
        (Array.isArray(value) && !value.length)) return;
    items.push(el("dt", {}, term), el("dd", {}, Array.isArray(value) ? value.join(", ") : value));
  };
  add("added", fmtTime(d.added));
  add("waits for", d.waiting_for);
  add("waiting since", fmtTime(d.waiting_since));
  add("seen by databases", d.history.seenby);
  add("first posted in", d.history.source_db);
  add("first posted at", d.history.enqueue_time);
  add("triggers copy to", d.triggers_to);
  add("routes forward to", d.routes.map((r) => `${r.link}:${r.queue} (route ${r.route})`));
  if (d.saga) {
    add("saga", `${d.saga.name} #${d.saga.saga_id}, step ${d.saga.step}: ${d.saga.state}`);
    add("saga steps", d.saga.steps.map((s) =>
      `${s.step} (${s.queue}${s.done_at ? ", done" : ""}${s.compensated_at ? ", compensated" : ""})`));
  }
  return items;
}

async function openMessage(iid, quiet) {
  const q = browse.queue;
  let d;
  try {
    d = await api(`/v1/queues/${q}/messages/${encodeURIComponent(iid)}`);
  } catch (e) {
    closeMessage();
    if (e.message.startsWith("404 ")) { if (!quiet) setStatus(`${iid} is gone from ${q}`); return; }
    throw e;
  }
  browse.open = iid;
  $("#msg-detail-id").textContent = `${d.iid} of ${d.queue}`;
  fill("#msg-deliveries", d.deliveries.map((x) => el("tr", { "data-consumer": x.consumer },
    el("td", {}, x.consumer), el("td", { class: "state" }, badge(x.state)),
    el("td", {}, x.waiting ? "waits for consume_after" : fmtTime(x.lease_until || x.vt)),
    el("td", { class: "n" }, x.attempts), el("td", { class: "n" }, x.priority),
    el("td", {}, fmtTime(x.expires)))));
  fill("#msg-dead", d.dead.map((x) => el("tr", { "data-dmq-id": x.dmq_id },
    el("td", { class: "n" }, x.dmq_id), el("td", {}, x.consumer || ""),
    el("td", { class: "bad" }, x.reason), el("td", {}, fmtTime(x.died_at)),
    el("td", { class: "n" }, x.attempts))));
  $("#msg-facts").replaceChildren(...facts(d));
  $("#msg-detail-body").textContent = JSON.stringify(
    { data: d.data, headers: d.headers, properties: d.properties }, null, 2);
  const writable = can("queues", "write", q);
  const leased = d.deliveries.some((x) => x.state === "leased");
  $("#msg-replay").hidden = !(writable && d.dead.length);
  $("#msg-release").hidden = !(writable && leased);
  $("#msg-bury").hidden = !(writable && !leased && d.deliveries.length);
  $("#msg-delete").hidden = !(writable && !leased);
  $("#msg-detail").hidden = false;
}

function closeMessage() {
  browse.open = null;
  $("#msg-detail").hidden = true;
}

// The confirmation dialog: resolves to the reason typed (or "") when confirmed, null if not.
function ask(text, wantsReason) {
  const dialog = $("#confirm-dialog");
  $("#confirm-text").textContent = text;
  $("#confirm-extra").hidden = !wantsReason;
  $("#confirm-reason").value = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok" ? $("#confirm-reason").value.trim() : null);
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

const ACTION_TEXT = {
  replay: "Replay the dead copies of %s: delivered again to their consumers?",
  release: "Release the lease on %s? Its worker loses it; the message is claimable at once.",
  bury: "Bury %s: move its deliveries to the dead-message queue?",
  delete: "Delete %s for good (its deliveries and dead copies)?",
};

async function messageAction(kind) {
  const q = browse.queue, iid = browse.open;
  if (!iid) return;
  const reason = await ask(ACTION_TEXT[kind].replace("%s", iid), kind === "bury");
  if (reason === null) return;
  const path = `/v1/queues/${q}/messages/${encodeURIComponent(iid)}`;
  try {
    const r = kind === "delete" ? await api(path, { method: "DELETE" }) :
      await api(`${path}/${kind}`, { method: "POST", body: reason ? { reason } : {} });
    const done = { replay: "replayed", release: "released", bury: "buried", delete: "deleted" };
    setStatus(`${done[kind]} ${iid} (${r.changed} changed)`);
    if (kind === "delete") closeMessage();
    await loadMessages();
  } catch (e) { setStatus(e.message, true); }
}

function turnPage(step) {
  if (step === "first") browse.cursors = [null];
  else if (step === "prev" && browse.cursors.length > 1) browse.cursors.pop();
  else if (step === "next" && browse.next) browse.cursors.push(browse.next);
  refresh();
}

// --- a stream group's events around its cursor ----------------------------------------------

async function loadAround() {
  const groups = await api("/v1/streams/groups");
  const select = $("#around-group");
  const names = groups.map((g) => g.name);
  if (!names.includes(around.group)) around.group = names[0] || "";
  select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  select.value = around.group;
  const g = groups.find((x) => x.name === around.group);
  if (g && !$("#around-topic").value && g.topics && g.topics.length) {
    $("#around-topic").value = g.topics[0];
  }
  if (!around.shown || !around.group || !around.topic) return;
  const params = new URLSearchParams({ n: around.n });
  if (around.slot !== "") params.set("slot", around.slot);
  const r = await api(`/v1/streams/${encodeURIComponent(around.topic)}/groups/` +
    `${around.group}/around?${params}`);
  const row = (e, side) => el("tr", { "data-event-id": e.id, "data-side": side,
                                      class: side === "before" ? "muted" : "" },
    el("td", { class: "n" }, e.id), el("td", {}, side === "before" ? "consumed" : "next"),
    el("td", {}, e.key || ""), el("td", {}, fmtTime(e.published_at)),
    el("td", { class: "data" }, preview(e.payload)));
  fill("#around-table", [
    ...r.before.slice().reverse().map((e) => row(e, "before")),
    el("tr", { class: "cursor-mark" }, el("td", { colspan: 5 },
      `▲ consumed · cursor of ${r.group}${r.slot === null ? "" : ` slot ${r.slot}`}: ${r.cursor} · next ▼`)),
    ...r.after.map((e) => row(e, "after")),
  ]);
}

// A key that did not authenticate: the browser keeps nothing the previous key read.
function forgetBrowse() {
  Object.assign(browse, { queue: "", filters: {}, cursors: [null], next: null, open: null });
  Object.assign(around, { group: "", topic: "", shown: false });
  for (const sel of ["#msg-queue", "#around-group", "#msg-facts"]) $(sel).replaceChildren();
  $("#msg-detail-body").textContent = "";
  $("#msg-detail-id").textContent = "";
  $("#msg-page").textContent = "";
  $("#around-topic").value = "";
}

LOADERS.messages = loadMessages;
const loadStreamGroups = LOADERS.streams;
LOADERS.streams = async () => { await loadStreamGroups(); await loadAround(); };

$("#msg-filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  browse.queue = $("#msg-queue").value;
  browse.filters = readFilters();
  browse.cursors = [null];
  refresh();
});
$("#msg-queue").addEventListener("change", () => {
  browse.queue = $("#msg-queue").value;
  browse.cursors = [null];
  closeMessage();
  refresh();
});
$("#msg-first").addEventListener("click", () => turnPage("first"));
$("#msg-prev").addEventListener("click", () => turnPage("prev"));
$("#msg-next").addEventListener("click", () => turnPage("next"));
$("#msg-close").addEventListener("click", closeMessage);
for (const kind of Object.keys(ACTION_TEXT)) {
  $(`#msg-${kind}`).addEventListener("click", () => messageAction(kind));
}
$("#around-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  Object.assign(around, { group: $("#around-group").value, topic: $("#around-topic").value.trim(),
                          slot: $("#around-slot").value.trim(), n: $("#around-n").value || 5,
                          shown: true });
  refresh();
});
// app.js showed its first page before this file added one: show ours when it was asked for
if (location.hash.slice(1) === "messages") {
  state.page = "messages";
  if (!state.key) show("messages");
}

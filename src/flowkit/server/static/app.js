// flowkit review page: an inbox of the threads waiting for a person (and failed ones, and timers
// due), and a page per thread with what its pause shows, explicit actions, what changed since
// the last answer, its diagram, state and history, retry / edit / fork; live over server-sent
// events.
// What the user may do comes from GET /me. Every value from the server is shown with
// textContent, never as markup.
"use strict";

const main = document.getElementById("main");
const notice = document.getElementById("notice");
const liveBadge = document.getElementById("live");
let stream = null; // the thread page's event stream: {stop()}
let routed = 0; // counts routes: a page drawn for an older one stops there
let listTimer = null;

// -- small helpers -------------------------------------------------------------------------

function say(message, kind) {
  notice.hidden = !message;
  notice.className = "notice " + (kind || "info");
  notice.replaceChildren();
  if (!message) return;
  if (message instanceof Problem) {
    notice.append(el("strong", { text: message.code + ": " }), message.message);
    if (message.errors.length) {
      notice.append(el("ul", {}, message.errors.map((e) =>
        el("li", { text: (e.loc || []).join(".") + ": " + e.msg }))));
    }
    if (message.status === 401) notice.append(el("p", { text: "Enter the server's token above." }));
  } else {
    notice.textContent = String(message);
  }
}

function when(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}

function threadHref(id) { return "#/threads/" + encodeURIComponent(id); }

// -- who is looking: GET /me says what the token's roles allow ------------------------------

let me = { principal: null, actions: [] };
let flows = []; // GET /flows, read once per route

function can(action) { return me.actions.includes(action); }

async function loadMe() {
  try { me = await api("/me"); } catch (error) { me = { principal: null, actions: [] }; }
  try { flows = await api("/flows"); } catch (error) { flows = []; }
  document.getElementById("who").textContent = me.principal
    ? me.principal + (me.roles ? " (" + me.roles.join(", ") + ")" : "") : "";
}

function flowInfo(name) { return flows.find((f) => f.name === name) || null; }

// -- the inbox: threads waiting for a person, failed ones, timers due, and all, with filters -----

// A table of threads read a page at a time (GET /threads, or `source`'s path and list, with
// its `next_cursor`): "More" shows the next page; a refresh reads again as many pages as are
// shown.
function pagedThreads(id, query, size, headings, cells, nobody, source) {
  const { path, key } = source || { path: "/threads", key: "threads" };
  const body = el("tbody");
  const more = el("button", { type: "button", class: "more", id: id + "-more", text: "More", hidden: true });
  let pages = 1;
  async function refresh() {
    const rows = [];
    let cursor = null;
    const asked = query();
    for (let page = 0; page < pages; page++) {
      const found = await api(path + "?" + (asked ? asked + "&" : "") + "limit=" + size +
        (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
      rows.push(...found[key]);
      cursor = found.next_cursor;
      if (!cursor) break;
    }
    body.replaceChildren(...rows.map((t) => el("tr", { "data-thread": t.thread_id },
      el("td", {}, el("a", { href: threadHref(t.thread_id), text: t.thread_id })), ...cells(t))));
    if (!rows.length) body.append(el("tr", {}, el("td", { colspan: headings.length, text: nobody })));
    more.hidden = !cursor;
  }
  more.addEventListener("click", async () => {
    pages += 1;
    try { await refresh(); } catch (error) { say(error, "error"); }
  });
  const table = el("table", { class: "threads", id },
    el("thead", {}, el("tr", {}, headings.map((h) => el("th", { text: h })))), body);
  return { nodes: [table, more], refresh, reset() { pages = 1; } };
}

const filters = { flow: "", status: "", within: "3600" };

// How far ahead "Timers due" looks (seconds from now): passed ones are always listed.
const HORIZONS = [["0", "passed"], ["3600", "passed or within the hour"], ["86400", "passed or within a day"]];

// "overdue by 2 hours" / "due in 20 minutes", by this browser's clock.
function dueWords(iso) {
  const ms = Date.parse(iso) - Date.now();
  const seconds = Math.abs(ms) / 1000;
  let text = "less than a minute";
  for (const [unit, size] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (seconds >= size) {
      const count = Math.floor(seconds / size);
      text = count + " " + unit + (count === 1 ? "" : "s");
      break;
    }
  }
  return ms <= 0 ? "overdue by " + text : "due in " + text;
}

function timerCells(t) {
  const what = t.kind === "deadline" ? "deadline of gate " : "wake-up of node ";
  return [el("td", { text: t.flow }), el("td", {}, what, el("code", { text: t.at })),
    el("td", { class: Date.parse(t.due) <= Date.now() ? "due overdue" : "due" }, dueWords(t.due), " ",
      el("time", { datetime: t.due, text: "(" + new Date(t.due).toLocaleString() + ")" }))];
}

function query(extra) {
  const parts = [];
  if (filters.flow) parts.push("flow=" + encodeURIComponent(filters.flow));
  for (const [key, value] of Object.entries(extra)) if (value) parts.push(key + "=" + encodeURIComponent(value));
  return parts.join("&");
}

async function showList(mine) {
  const statusCell = (t) => el("td", {}, el("span", { class: "status " + t.status, text: t.status }));
  const waiting = pagedThreads("waiting", () => query({ status: "waiting" }), 50, ["Thread", "Flow", "Waiting at", "Since"],
    (t) => [el("td", { text: t.flow }), el("td", { text: t.node }), el("td", { text: when(t.updated) })],
    "Nobody is waited for.");
  const failed = pagedThreads("failed", () => query({ status: "failed" }), 20, ["Thread", "Flow", "Failed at", "Since"],
    (t) => [el("td", { text: t.flow }), el("td", { text: t.node }), el("td", { text: when(t.updated) })],
    "Nothing failed.");
  const until = () => new Date(Date.now() + Number(filters.within) * 1000).toISOString();
  const timers = pagedThreads("timers", () => query({ until: until() }), 20, ["Thread", "Flow", "Timer", "Due"],
    timerCells, "No timer is due.", { path: "/timers", key: "timers" });
  const recent = pagedThreads("recent", () => query({ status: filters.status }), 20, ["Thread", "Flow", "Status", "Updated"],
    (t) => [el("td", { text: t.flow }), statusCell(t), el("td", { text: when(t.updated) })],
    "No threads yet.");
  const tables = [waiting, failed, timers, recent];
  const flowPick = el("select", { id: "filter-flow" }, el("option", { value: "", text: "every flow" }),
    flows.map((f) => el("option", { value: f.name, text: f.name, selected: f.name === filters.flow })));
  const statusPick = el("select", { id: "filter-status" }, ["", "pending", "waiting", "done", "failed"].map((s) =>
    el("option", { value: s, text: s || "any status", selected: s === filters.status })));
  const duePick = el("select", { id: "filter-due" }, HORIZONS.map(([value, text]) =>
    el("option", { value, text, selected: value === filters.within })));
  const changed = () => {
    filters.flow = flowPick.value;
    filters.status = statusPick.value;
    filters.within = duePick.value;
    for (const t of tables) t.reset();
    refresh();
  };
  flowPick.addEventListener("change", changed);
  statusPick.addEventListener("change", changed);
  duePick.addEventListener("change", changed);
  main.replaceChildren(
    el("form", { class: "filters", id: "filters", on: { submit: (e) => e.preventDefault() } },
      el("label", {}, "Flow ", flowPick), el("label", {}, "Status (all threads) ", statusPick),
      el("label", {}, "Timers due ", duePick)),
    el("h1", { text: "Waiting for a person" }), ...waiting.nodes,
    el("h2", { text: "Failed" }), ...failed.nodes,
    el("h2", { text: "Timers due", id: "timers-due" }), ...timers.nodes,
    el("h2", { text: "All threads, recently updated first" }), ...recent.nodes,
    ...(can("start") ? [startForm()] : []), // (null would be drawn as the text "null")
  );
  async function refresh() {
    try {
      for (const t of tables) await t.refresh();
      if (mine === routed) say("");
    } catch (error) { if (mine === routed) say(error, "error"); }
  }
  await refresh();
  if (mine === routed) listTimer = setInterval(refresh, 5000);
}

// Start a thread of a flow, its input built from the flow's state schema (fields left empty
// keep the state's defaults).
function startForm() {
  const section = el("section", { class: "start", id: "start" }, el("h2", { text: "Start a thread" }));
  if (!flows.length) return section;
  const pick = el("select", { id: "start-flow" }, flows.map((f) => el("option", { value: f.name, text: f.name })));
  const idBox = el("input", { id: "start-id", type: "text", maxlength: 120, placeholder: "(generated)" });
  const holder = el("div", { class: "start-fields" });
  let fields = [];
  const draw = () => {
    const schema = (flowInfo(pick.value) || {}).state_schema || {};
    fields = Object.entries(schema.properties || {}).filter(([name]) => name !== "started_by")
      .map(([name, prop]) => fieldFor("start", name, resolve(schema, prop), false, { optionalBool: true }));
    holder.replaceChildren(...fields.map((f) => f.node));
  };
  pick.addEventListener("change", draw);
  draw();
  const form = el("form", { class: "panel", id: "start-form" },
    el("div", { class: "field" }, el("label", { for: "start-flow", text: "Flow" }), pick),
    el("div", { class: "field" }, el("label", { for: "start-id", text: "Thread id" }), idBox),
    holder, el("button", { type: "submit", class: "primary", id: "start-thread", text: "Start" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let input;
    try { input = collect(fields, true); } catch (error) { say(error.message, "error"); return; }
    try {
      const made = await api("/flows/" + encodeURIComponent(pick.value) + "/threads", {
        method: "POST",
        body: JSON.stringify({ input, wait: false, thread_id: idBox.value.trim() || null }),
      });
      location.hash = threadHref(made.thread_id);
    } catch (error) { say(error, "error"); }
  });
  section.append(form);
  return section;
}

// -- one thread -----------------------------------------------------------------------------

// What a page has to say after a refused answer ("this moved since you looked"), drawn
// above the new content by the next drawing.
let moved = null;

async function showThread(id, mine) {
  const parts = {
    title: el("h1", { text: id }),
    summary: el("p", { class: "summary" }),
    diagram: el("figure", { class: "diagram" }),
    review: el("section", { class: "review", id: "review" }),
    recover: el("section", { class: "recover", id: "recover" }),
    state: el("pre", { class: "state", id: "state" }),
    history: el("ol", { class: "history", id: "history" }),
  };
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/", text: "← all threads" })),
    parts.title, parts.summary,
    el("div", { class: "columns" },
      el("div", { class: "left" }, parts.review, parts.recover, el("h2", { text: "Flow" }), parts.diagram),
      el("div", { class: "right" },
        el("h2", { text: "History" }), parts.history,
        el("details", { id: "state-details" }, el("summary", { text: "State" }), parts.state))),
  );
  // One drawing at a time, the newest last: two overlapping drawings could finish out of
  // order and leave an older state on screen. A drawing of the version already shown is
  // skipped, so what a person is typing into a form survives a redraw that changes nothing.
  let pending = null;
  let drawing = null;
  let again = false;
  const shown = { version: null, status: null };
  const redraw = async () => {
    if (drawing) { again = true; return; }
    do {
      again = false;
      drawing = render(id, parts, shown).catch((e) => say(e, "error"));
      await drawing;
      drawing = null;
    } while (again);
  };
  const refresh = () => {
    clearTimeout(pending);
    pending = setTimeout(redraw, 150);
  };
  parts.redraw = () => { shown.version = null; return redraw(); };
  await render(id, parts, shown);
  if (mine === routed) stream = follow(id, refresh);
}

async function render(id, parts, shown) {
  const thread = await api("/threads/" + encodeURIComponent(id));
  if (thread.version === shown.version && thread.status === shown.status) return;
  const view = await api("/threads/" + encodeURIComponent(id) + "/view");
  const history = await loadHistory(id);
  if (thread.status !== "pending" && notice.classList.contains("info")) say("");
  parts.summary.replaceChildren(...[
    el("span", { text: thread.flow }), " · ",
    el("span", { class: "status " + thread.status, id: "status", text: thread.status }),
    " at ", el("code", { text: thread.node }), " · version ", el("span", { id: "version", text: thread.version }),
    thread.due ? el("span", { class: "due", text: " · timer due " + new Date(thread.due).toLocaleString() }) : null,
    view.kind === "chat" ? [" · ", el("a", { id: "chat-link", href: "/chat/" + encodeURIComponent(id), text: "open in the chat page" })] : null,
  ].flat().filter((node) => node !== null));
  parts.state.textContent = JSON.stringify(thread.state, null, 2);
  const note = moved && moved.id === id ? moved : null;
  moved = null;
  renderReview(id, thread, view, parts, history, note);
  renderRecover(id, thread, parts);
  await renderDiagram(id, parts.diagram);
  renderHistory(id, history, parts.history);
  shown.version = thread.version;
  shown.status = thread.status;
}

async function renderDiagram(id, figure) {
  const response = await fetch("/threads/" + encodeURIComponent(id) + "/diagram.svg", { headers: headers() });
  if (!response.ok) return;
  const blob = await response.blob();
  const old = figure.querySelector("img");
  if (old) URL.revokeObjectURL(old.src);
  figure.replaceChildren(el("img", { src: URL.createObjectURL(blob), alt: "the flow, its current state marked" }));
}

// The last 40 checkpoints, oldest first.
async function loadHistory(id) {
  const first = await api("/threads/" + encodeURIComponent(id) + "/history?limit=1");
  const offset = Math.max(0, first.total - 40);
  const page = await api("/threads/" + encodeURIComponent(id) + "/history?limit=40&offset=" + offset);
  return page.checkpoints;
}

// Each step newest first: what it changed (each value beside the one before it), who
// answered or patched and why, how many attempts it took, and "Fork from here".
function renderHistory(id, checkpoints, list) {
  const before = {};
  const items = checkpoints.map((c) => {
    const keys = Object.keys(c.update);
    const values = keys.length ? el("details", { class: "values" }, el("summary", { class: "changed", text: "changed: " + keys.join(", ") }),
      el("dl", {}, keys.map((k) => [el("dt", { text: k }), el("dd", {}, change(before[k], c.update[k]))]))) : null;
    for (const k of keys) before[k] = c.update[k];
    return el("li", { "data-version": c.version },
      el("span", { class: "version", text: "v" + c.version }), " ",
      el("strong", { text: c.kind }), " ", c.node || "", " → ", c.next, " ",
      el("span", { class: "status " + c.status, text: c.status }), " ",
      el("time", { text: when(c.ts) }),
      c.attempts > 1 ? el("span", { class: "changed", text: " after " + c.attempts + " attempts" }) : null,
      c.actor ? el("div", { class: "changed actor", text: byWhom(c) }) : null,
      values,
      can("fork") ? el("button", { type: "button", class: "fork", "data-version": c.version, text: "Fork from here",
        on: { click: () => fork(id, c.version) } }) : null);
  });
  list.replaceChildren(...items.reverse());
}

// Who made a checkpoint: "answered by rita" on an answer (a gate's input, a branch's item),
// "changed by ada: why" on a patch.
function byWhom(c) {
  const verb = c.kind === "patch" ? "changed" : "answered";
  return verb + " by " + c.actor + (c.reason ? ": " + c.reason : "");
}

async function fork(id, version) {
  try {
    const made = await api("/threads/" + encodeURIComponent(id) + "/fork", { method: "POST", body: JSON.stringify({ at: version }) });
    location.hash = threadHref(made.thread_id);
  } catch (error) { say(error, "error"); }
}

// Answers carry the version the page shows: a thread that moved meanwhile is refused (409),
// and the page then draws the new content under "this moved since you looked".
async function send(id, input, gate, version, parts) {
  say("Sent; working…", "info");
  try {
    await api("/threads/" + encodeURIComponent(id) + "/resume", {
      method: "POST",
      body: JSON.stringify({ input: input, gate: gate || null, wait: false, expected_version: version ?? null }),
    });
  } catch (error) {
    if (error.status === 409 && parts && (error.version !== null || error.code === "not_waiting")) {
      say("");
      moved = { id, seen: version };
      await parts.redraw();
      return false;
    }
    say(error, "error");
    return false;
  }
  return true;
}

function renderReview(id, thread, view, parts, history, note) {
  const section = parts.review;
  section.replaceChildren();
  if (note) section.append(movedNote(note, thread, history));
  if (thread.status === "waiting") {
    section.append(el("p", { class: "waiting", text: (can("resume") ? "Waiting for you at " : "Waiting for a person at ") + thread.gates.map((g) => g.name).join(", ") }));
    if (!can("resume")) section.append(el("p", { class: "role-note", id: "role-note", text: "Your role may read this thread, not answer it." }));
  }
  if (thread.error) {
    section.append(el("p", { class: "error", id: "failure", text: "Failed: " + thread.error.type + (thread.error.message ? ": " + thread.error.message : "") }));
  }
  if (view.kind === "sas") renderSas(id, thread, view, section);
  else if (view.kind === "chat") renderChat(id, thread, view, section);
  else {
    const round = sinceLastRound(history, thread);
    if (round && thread.gates.length) section.append(round);
    for (const gate of thread.gates) section.append(gateForm(id, thread, gate, payloadOf(thread, gate.name), parts));
  }
}

function movedNote(note, thread, history) {
  const changes = history.filter((c) => note.seen !== null && c.version > note.seen);
  const keys = [...new Set(changes.flatMap((c) => Object.keys(c.update)))];
  const before = {};
  history.filter((c) => c.version <= note.seen).forEach((c) => Object.assign(before, c.update));
  const now = {};
  changes.forEach((c) => Object.assign(now, c.update));
  return el("div", { class: "moved", id: "moved", role: "alert" },
    el("strong", { text: "This moved since you looked." }),
    " Nothing was sent. You saw version " + note.seen + "; it is now at version " + thread.version +
      " (" + thread.status + ")" + (keys.length ? ", changed: " + keys.join(", ") : "") +
      ". Read what it shows now, below, and decide again.",
    keys.length ? el("dl", {}, keys.map((k) => [el("dt", { text: k }),
      el("dd", {}, change(before[k], k in thread.state ? thread.state[k] : now[k]))])) : null);
}

// What changed since the last answer (the last `input` checkpoint): each field a step wrote
// after it, beside its value before that answer.
function sinceLastRound(history, thread) {
  let last = -1;
  history.forEach((c, i) => { if (c.kind === "input") last = i; });
  if (last < 0) return null;
  const before = {};
  history.slice(0, last + 1).forEach((c) => Object.assign(before, c.update));
  const after = {};
  history.slice(last + 1).forEach((c) => Object.assign(after, c.update));
  const keys = Object.keys(after).filter((k) => JSON.stringify(after[k]) !== JSON.stringify(before[k]));
  if (!keys.length) return null;
  return el("details", { class: "round", id: "round", open: true },
    el("summary", { text: "Changed since the last answer (v" + history[last].version + ")" }),
    el("dl", {}, keys.map((k) => [el("dt", { text: k }),
      el("dd", {}, change(before[k], k in thread.state ? thread.state[k] : after[k]))])));
}

// -- values for people: markdown-ish text, lists, tables of fields, and word diffs -------------
// Everything is built with createElement and textContent: a payload's text is never markup.

// What the open pause `name` shows whoever answers it (its payload); undefined: nothing.
function payloadOf(thread, name) {
  const pause = (thread.pauses || []).find((p) => p.id === name);
  return pause && pause.payload !== null ? pause.payload : undefined;
}

// A payload for people: text as paragraphs, lists and code; objects as labelled fields.
function payloadBlock(name, payload) {
  if (payload === undefined) return null;
  return el("div", { class: "payload", "data-pause": name }, rich(payload));
}

function label(key) { return String(key).replace(/_/g, " "); }

function rich(value) {
  if (value === null || value === undefined) return el("span", { class: "empty", text: "—" });
  if (typeof value === "string") return markdown(value);
  if (Array.isArray(value)) {
    if (!value.length) return el("span", { class: "empty", text: "(none)" });
    return el("ul", {}, value.map((v) => el("li", {}, rich(v))));
  }
  if (typeof value === "object") {
    return el("dl", { class: "fields" }, Object.entries(value).map(([k, v]) =>
      [el("dt", { text: label(k) }), el("dd", { "data-key": k }, rich(v))]));
  }
  return el("span", { text: String(value) });
}

// Paragraphs, `- ` and `1. ` lists, ``` fences, `#` headings, `code` and **bold**.
function markdown(text) {
  const box = el("div", { class: "md" });
  const lines = text.split(/\r?\n/);
  let para = [];
  let list = null;
  const flush = () => {
    if (para.length) box.append(el("p", {}, inline(para.join(" "))));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      flush(); list = null;
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      box.append(el("pre", {}, el("code", { text: code.join("\n") })));
      continue;
    }
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (bullet || numbered) {
      flush();
      const tag = bullet ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== tag) { list = el(tag); box.append(list); }
      list.append(el("li", {}, inline((bullet || numbered)[1])));
      continue;
    }
    list = null;
    const heading = line.match(/^\s*#{1,6}\s+(.*)$/);
    if (heading) { flush(); box.append(el("h4", {}, inline(heading[1]))); continue; }
    if (!line.trim()) { flush(); continue; }
    para.push(line.trim());
  }
  flush();
  return box;
}

function inline(text) {
  return text.split(/(`[^`]+`|\*\*[^*]+\*\*)/).filter((s) => s).map((s) =>
    s.startsWith("`") && s.endsWith("`") && s.length > 1 ? el("code", { text: s.slice(1, -1) })
      : s.startsWith("**") && s.endsWith("**") && s.length > 4 ? el("strong", { text: s.slice(2, -2) })
        : document.createTextNode(s));
}

// A value beside the one before it: text as a word diff, anything else as old → new.
function change(old, now) {
  if (old === undefined) return el("span", { class: "diff" }, el("ins", { text: short(now) }));
  if (typeof old === "string" && typeof now === "string") return wordDiff(old, now);
  if (JSON.stringify(old) === JSON.stringify(now)) return el("span", { text: short(now) });
  return el("span", { class: "diff" }, el("del", { text: short(old) }), " → ", el("ins", { text: short(now) }));
}

function short(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 2000 ? text.slice(0, 2000) + "…" : text;
}

function wordDiff(old, now) {
  const a = old.split(/(\s+)/), b = now.split(/(\s+)/);
  const box = el("span", { class: "diff" });
  if (a.length * b.length > 250000) {
    box.append(el("del", { text: short(old) }), " → ", el("ins", { text: short(now) }));
    return box;
  }
  // Longest common subsequence, then walk it.
  const rows = a.length + 1, cols = b.length + 1;
  const table = new Uint32Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * cols + j] = a[i] === b[j] ? table[(i + 1) * cols + j + 1] + 1
        : Math.max(table[(i + 1) * cols + j], table[i * cols + j + 1]);
    }
  }
  let i = 0, j = 0;
  const push = (tag, text) => {
    const last = box.lastChild;
    if (last && last.nodeName.toLowerCase() === tag) last.textContent += text;
    else box.append(tag === "#text" ? document.createTextNode(text) : el(tag, { text }));
  };
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { push("#text", a[i]); i++; j++; }
    else if (i < a.length && (j >= b.length || table[(i + 1) * cols + j] >= table[i * cols + j + 1])) { push("del", a[i]); i++; }
    else { push("ins", b[j]); j++; }
  }
  return box;
}

// -- sas: the task list and module steps, readable, with approve and feedback ---------------

function renderSas(id, thread, view, section) {
  section.append(el("h2", { text: "Robot task" }), el("blockquote", { class: "request", text: view.request }));
  if (view.error) section.append(el("p", { class: "error", text: view.error }));
  section.append(el("h2", { text: "Task list" }), el("ol", { class: "tasks", id: "tasks" }, view.tasks.map((t) =>
    el("li", {}, el("strong", { text: t.name }), " ", el("span", { class: "type", text: "[" + t.type + "]" }), " ",
      t.description, t.calls.length ? el("div", { class: "calls", text: "calls " + t.calls.join(", ") }) : null))));
  if (view.module_steps.length) {
    section.append(el("h2", { text: "Module steps" }));
    for (const steps of view.module_steps) {
      section.append(el("div", { class: "steps", "data-task": steps.task },
        el("h3", {}, steps.task, " ", el("span", { class: "type", text: "(" + steps.type + ")" })),
        steps.failed ? el("p", { class: "error", text: "failed: " + steps.failed }) : el("pre", { text: steps.text })));
    }
  }
  if (view.files.length) {
    section.append(el("h2", { text: "Robot program" }), el("ul", {}, view.files.map((f) =>
      el("li", {}, el("button", { type: "button", class: "download", "data-file": f.name, text: "Download " + f.name,
        on: { click: () => download(id, f.name) } }), " (" + f.bytes + " bytes)"))));
  }
  if (thread.status !== "waiting") return;
  const message = el("textarea", { id: "feedback", rows: 3, maxlength: 20000, placeholder: "What should change?" });
  const target = el("select", { id: "feedback-task" }, el("option", { value: "", text: "the whole plan" }),
    view.stage === "steps" ? view.tasks.map((t) => el("option", { value: t.name, text: t.name })) : []);
  section.append(el("div", { class: "actions" },
    el("button", { type: "button", id: "approve", class: "primary", text: view.stage === "steps" ? "Approve the module steps" : "Approve the task list",
      on: { click: () => send(id, { action: "approve" }, null, thread.version) } }),
    el("label", { for: "feedback", text: "Feedback" }), message,
    view.stage === "steps" ? el("label", {}, "on ", target) : null,
    el("button", { type: "button", id: "send-feedback", text: "Send feedback", on: { click: async () => {
      if (!message.value.trim()) { say("Write what should change first.", "error"); return; }
      const input = { action: "feedback", message: message.value };
      if (target.value) input.task = target.value;
      if (await send(id, input, null, thread.version)) message.value = "";
    } } })));
}

async function download(id, name) {
  try {
    const response = await fetch("/threads/" + encodeURIComponent(id) + "/files/" + encodeURIComponent(name), { headers: headers() });
    if (!response.ok) throw new Problem(await response.json(), response.status);
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: id + "-" + name });
    document.body.append(link);
    link.click();
    link.remove();
  } catch (error) { say(error, "error"); }
}

// -- a conversation ---------------------------------------------------------------------------

function renderChat(id, thread, view, section) {
  section.append(el("h2", { text: "Conversation" }), el("ol", { class: "chat", id: "chat" }, view.messages.map((m) =>
    el("li", { class: m.speaker.toUpperCase() === "USER" ? "mine" : "theirs" },
      el("span", { class: "speaker", text: m.speaker }), el("span", { class: "text", text: m.text })))));
  if (!view.input_field || thread.status !== "waiting") return;
  const asked = payloadBlock(thread.gates[0].name, payloadOf(thread, thread.gates[0].name));
  if (asked) section.append(asked);
  const box = el("input", { id: "say", type: "text", maxlength: 2000, placeholder: "Say something" });
  section.append(el("form", { class: "say", on: { submit: async (event) => {
    event.preventDefault();
    if (!box.value.trim()) return;
    if (await send(id, { [view.input_field]: box.value }, thread.gates[0].name, thread.version)) box.value = "";
  } } }, box, el("button", { type: "submit", text: "Send" })));
}

// -- any gate: explicit actions and a form generated from its input schema --------------------

// A property's schema with `$ref` and `anyOf: [X, null]` resolved to X.
function resolve(schema, prop) {
  let found = prop || {};
  for (let depth = 0; depth < 5; depth++) {
    if (found.$ref) {
      const name = found.$ref.split("/").pop();
      found = Object.assign({}, (schema.$defs || schema.definitions || {})[name] || {}, { title: prop.title, default: prop.default, description: prop.description || undefined });
    } else if (found.anyOf || found.oneOf) {
      const other = (found.anyOf || found.oneOf).filter((p) => p.type !== "null");
      if (other.length !== 1) break;
      found = Object.assign({}, other[0], { title: found.title, default: found.default, description: found.description });
    } else if (found.allOf && found.allOf.length === 1) {
      found = Object.assign({}, found.allOf[0], { title: found.title, default: found.default });
    } else break;
  }
  if (found.const !== undefined && !found.enum) found = Object.assign({}, found, { enum: [found.const] });
  return found;
}

const YES = /^(approve|approved|accept|accepted|yes|ok|go|publish|ship)$/i;
const APPROVING = /approv|accept|^ok$|confirm|agree|publish/i;
const NO = /^(reject|rejected|decline|declined|no|deny|denied|stop|cancel)$/i;

// The field a person decides with: a required bool, or a required choice of a few words.
// Its values become buttons (a bool: Approve / Reject, or Yes / No when its name is not an
// approval); none is chosen in advance.
function decisionOf(schema) {
  const required = schema.required || [];
  for (const name of required) {
    const prop = resolve(schema, (schema.properties || {})[name]);
    if (prop.type === "boolean") {
      if (APPROVING.test(name)) return { name, choices: [[true, "Approve"], [false, "Reject"]] };
      return { name, prompt: prop.title || label(name), choices: [[true, "Yes"], [false, "No"]] };
    }
  }
  for (const name of required) {
    const prop = resolve(schema, (schema.properties || {})[name]);
    if (prop.enum && prop.enum.length >= 2 && prop.enum.length <= 5 && prop.enum.every((v) => typeof v === "string")) {
      return { name, choices: prop.enum.map((v) => [v, v.charAt(0).toUpperCase() + v.slice(1)]) };
    }
  }
  return null;
}

// One input for a property: check box (an optional bool), yes/no choice (a required one),
// a choice with nothing chosen (an enum), number, text, or JSON for the rest.
function fieldFor(prefix, name, prop, required, options) {
  const type = prop.type || "";
  const inputId = "field-" + prefix + "-" + name;
  const start = (options && options.value !== undefined) ? options.value : prop.default;
  let input;
  let kind = type;
  if (prop.enum) {
    kind = "enum";
    const chosen = required ? undefined : start;
    input = el("select", { id: inputId },
      el("option", { value: "", text: required ? "— choose —" : "(default)", selected: chosen === undefined }),
      prop.enum.map((v, i) => el("option", { value: String(i), text: String(v), selected: chosen !== undefined && chosen === v })));
  } else if (type === "boolean" && (required || (options && options.optionalBool))) {
    kind = "choice";
    input = el("select", { id: inputId }, el("option", { value: "", text: required ? "— choose —" : "(default)" }),
      el("option", { value: "true", text: "yes", selected: start === true && !required }),
      el("option", { value: "false", text: "no", selected: start === false && !required && options && options.value !== undefined }));
  } else if (type === "boolean") input = el("input", { id: inputId, type: "checkbox", checked: start === true });
  else if (type === "integer" || type === "number") input = el("input", { id: inputId, type: "number", step: type === "integer" ? 1 : "any", value: start ?? "" });
  else if (type === "string") input = (prop.maxLength || 0) > 200 || (typeof start === "string" && start.length > 60)
    ? el("textarea", { id: inputId, rows: 4, maxlength: prop.maxLength, text: start ?? "" })
    : el("input", { id: inputId, type: "text", maxlength: prop.maxLength, value: start ?? "" });
  else {
    kind = "json";
    input = el("textarea", { id: inputId, rows: 3, placeholder: "JSON", text: start !== undefined ? JSON.stringify(start, null, 1) : "" });
  }
  const node = el("div", { class: "field" },
    el("label", { for: inputId, text: (prop.title || label(name)) + (required ? " *" : "") }), input,
    prop.description ? el("small", { text: prop.description }) : null);
  return { name, kind, input, prop, required, node };
}

// The input the fields hold; an empty optional field is left out. Throws an Error a person
// can read for a required field left empty or JSON that is not.
function collect(fields, skipEmpty) {
  const input = {};
  for (const f of fields) {
    const value = f.input.value;
    if (f.kind === "boolean") { input[f.name] = f.input.checked; continue; }
    if (value === "" || (skipEmpty && f.kind === "json" && !value.trim())) {
      if (f.required) throw new Error("Fill in “" + (f.prop.title || label(f.name)) + "” first.");
      if (f.kind === "string" && !skipEmpty) input[f.name] = "";
      continue;
    }
    if (f.kind === "enum") input[f.name] = f.prop.enum[Number(value)];
    else if (f.kind === "choice") input[f.name] = value === "true";
    else if (f.kind === "integer" || f.kind === "number") input[f.name] = Number(value);
    else if (f.kind === "string") input[f.name] = value;
    else {
      try { input[f.name] = JSON.parse(value); } catch (error) {
        throw new Error("“" + (f.prop.title || label(f.name)) + "” is not valid JSON: " + error.message);
      }
    }
  }
  return input;
}

function gateForm(id, thread, gate, payload, parts) {
  const schema = gate.input_schema || {};
  const required = new Set(schema.required || []);
  const decision = decisionOf(schema);
  const allowed = can("resume");
  const form = el("form", { class: "gate", "data-gate": gate.name });
  form.append(el("h2", { text: "Answer " + gate.name }));
  if (gate.description) form.append(el("p", { class: "description", text: gate.description }));
  if (payload !== undefined) form.append(payloadBlock(gate.name, payload));
  // Fields named as the state's are an edit of those values: they start from what it holds.
  const state = thread.state || {};
  const fields = [];
  let edits = false;
  for (const [name, raw] of Object.entries(schema.properties || {})) {
    if (decision && name === decision.name) continue;
    const prop = resolve(schema, raw);
    const editing = name in state && state[name] !== "***" && prop.type === typeof state[name];
    edits = edits || editing;
    const f = fieldFor(gate.name, name, prop, required.has(name), editing ? { value: state[name] } : undefined);
    if (!allowed) f.input.disabled = true;
    fields.push(f);
    form.append(f.node);
  }
  const submit = async (value) => {
    let input;
    try { input = collect(fields, false); } catch (error) { say(error.message, "error"); return; }
    if (decision) input[decision.name] = value;
    await send(id, input, gate.name, thread.version, parts);
  };
  const actions = el("div", { class: "buttons" });
  if (decision && decision.prompt) form.append(el("p", { class: "prompt", text: decision.prompt + "?" }));
  if (decision) {
    for (const [value, text] of decision.choices) {
      const kind = YES.test(String(value)) || value === true ? "approve" : NO.test(String(value)) || value === false ? "reject" : "choose";
      actions.append(el("button", { type: "button", class: "action " + kind + (kind === "approve" ? " primary" : ""),
        "data-value": JSON.stringify(value), text, disabled: !allowed, on: { click: () => submit(value) } }));
    }
  } else {
    actions.append(el("button", { type: "submit", class: "action respond primary", text: edits ? "Edit" : "Respond", disabled: !allowed }));
  }
  form.append(actions);
  form.addEventListener("submit", (event) => { event.preventDefault(); if (!decision && allowed) submit(); });
  return form;
}

// -- a failed thread (or any, for who may): retry, edit its state -------------------------------

function renderRecover(id, thread, parts) {
  const section = parts.recover;
  section.replaceChildren();
  const failed = thread.status === "failed";
  // A failed thread runs its failed step again; a pending one (a fork, a run that stopped)
  // runs on from where it stands. Both are a resume with no input.
  if ((failed || thread.status === "pending") && can("resume")) {
    section.append(el("div", { class: "buttons" }, el("button", { type: "button", id: failed ? "retry" : "continue", class: "primary",
      text: (failed ? "Retry from " : "Run on from ") + thread.node, on: { click: async () => {
        say(failed ? "Retrying…" : "Running…", "info");
        try {
          await api("/threads/" + encodeURIComponent(id) + "/resume", {
            method: "POST", body: JSON.stringify({ input: null, wait: false, expected_version: thread.version }),
          });
        } catch (error) {
          if (error.status === 409 && error.version !== null) { moved = { id, seen: thread.version }; say(""); await parts.redraw(); } else say(error, "error");
        }
      } } })));
  }
  if (!can("update")) { section.hidden = !section.childNodes.length; return; }
  const editable = Object.fromEntries(Object.entries(thread.state || {}).filter(([, v]) => v !== "***"));
  const values = el("textarea", { id: "edit-values", rows: 8, spellcheck: "false", text: JSON.stringify(editable, null, 2) });
  const states = (flowInfo(thread.flow) || {}).states || [];
  const goto = el("select", { id: "edit-goto" }, el("option", { value: "", text: "(stay at " + thread.node + ")" }),
    states.map((s) => el("option", { value: s, text: s })));
  const reason = el("input", { id: "edit-reason", type: "text", maxlength: 2000, placeholder: "why (kept in the history)" });
  const form = el("form", { id: "edit-state", class: "panel" },
    el("div", { class: "field" }, el("label", { for: "edit-values", text: "Values (JSON; only the fields you change are sent)" }), values),
    el("div", { class: "field" }, el("label", { for: "edit-goto", text: "Move to" }), goto),
    el("div", { class: "field" }, el("label", { for: "edit-reason", text: "Reason" }), reason),
    el("button", { type: "submit", id: "save-state", text: "Save the state" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let given;
    try { given = JSON.parse(values.value); } catch (error) { say("The values are not valid JSON: " + error.message, "error"); return; }
    const changed = {};
    for (const [k, v] of Object.entries(given || {})) if (JSON.stringify(v) !== JSON.stringify(editable[k])) changed[k] = v;
    try {
      await api("/threads/" + encodeURIComponent(id) + "/state", { method: "PATCH", body: JSON.stringify({
        values: changed, goto: goto.value || null, reason: reason.value, expected_version: thread.version,
      }) });
      say("State saved.", "info");
      await parts.redraw();
    } catch (error) {
      if (error.status === 409 && error.version !== null) { moved = { id, seen: thread.version }; say(""); await parts.redraw(); } else say(error, "error");
    }
  });
  section.append(el("details", { class: "edit", open: failed }, el("summary", { text: "Edit the state" }), form));
  section.hidden = false;
}

// -- live: server-sent events read with fetch (so the token goes in a header) -----------------

function follow(id, onChange) {
  let stopped = false;
  let lastId = null;
  let controller = null;
  async function run() {
    while (!stopped) {
      controller = new AbortController();
      const extra = lastId !== null ? { "Last-Event-ID": lastId } : {};
      try {
        const response = await fetch("/threads/" + encodeURIComponent(id) + "/events", { headers: headers(extra), signal: controller.signal });
        if (!response.ok) throw new Problem(await response.json(), response.status);
        liveBadge.textContent = "live";
        liveBadge.className = "live on";
        // The page was drawn before this stream opened: a step committed in between (a
        // fast run after a quick answer) sends no event here, so draw once more. A reconnect
        // replays what it missed from Last-Event-ID instead.
        if (lastId === null) onChange();
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const raw = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const event = { name: "message", id: null };
            for (const line of raw.split("\n")) {
              const colon = line.indexOf(":");
              if (colon <= 0) continue;
              const field = line.slice(0, colon), text = line.slice(colon + 1).replace(/^ /, "");
              if (field === "id") event.id = text;
              else if (field === "event") event.name = text;
            }
            if (event.id !== null) lastId = event.id;
            if (event.name === "checkpoint") onChange();
            if (event.name === "deleted") { say("This thread was deleted."); stopped = true; }
          }
        }
      } catch (error) {
        if (stopped) break;
        if (error instanceof Problem && error.status < 500) { say(error, "error"); break; }
      }
      if (stopped) break;
      liveBadge.textContent = "reconnecting…";
      liveBadge.className = "live off";
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    liveBadge.textContent = "";
  }
  run();
  return { stop() { stopped = true; if (controller) controller.abort(); } };
}

// -- routing ----------------------------------------------------------------------------------

function route() {
  if (stream) { stream.stop(); stream = null; }
  if (listTimer) { clearInterval(listTimer); listTimer = null; }
  say("");
  const match = location.hash.match(/^#\/threads\/(.+)$/);
  const mine = ++routed;
  const shown = loadMe().then(() => {
    if (mine !== routed) return null; // a later route took over while /me was read
    return match ? showThread(decodeURIComponent(match[1]), mine) : showList(mine);
  });
  shown.catch((error) => { if (mine === routed) say(error, "error"); });
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = document.getElementById("token");
  if (field.value) sessionStorage.setItem(TOKEN_KEY, field.value);
  field.value = "";
  route();
});
window.addEventListener("hashchange", route);
route();

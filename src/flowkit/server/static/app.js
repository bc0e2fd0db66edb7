// flowkit review page: threads waiting for a person, and a page per thread with its diagram,
// state, history and a form per open pause, with what the pause shows (its payload); live over
// server-sent events. Every value from the server is shown with textContent, never as markup.
"use strict";

const TOKEN_KEY = "flowkit-token";
const main = document.getElementById("main");
const notice = document.getElementById("notice");
const liveBadge = document.getElementById("live");
let stream = null; // the thread page's event stream: {stop()}
let listTimer = null;

// -- small helpers -------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

function headers(extra) {
  const found = Object.assign({}, extra || {});
  if (token()) found["Authorization"] = "Bearer " + token();
  return found;
}

class Problem extends Error {
  constructor(body, status) {
    super((body && body.detail) || "HTTP " + status);
    this.status = status;
    this.code = (body && body.code) || "http_" + status;
    this.errors = (body && body.errors) || [];
  }
}

async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = headers(opts.body ? { "Content-Type": "application/json" } : {});
  const response = await fetch(path, opts);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  const body = type.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Problem(body, response.status);
  return body;
}

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

// -- the list of threads waiting for a person ---------------------------------------------

// A table of threads read a page at a time (GET /threads with its `next_cursor`): "More"
// shows the next page; a refresh reads again as many pages as are shown.
function pagedThreads(id, query, size, headings, cells, nobody) {
  const body = el("tbody");
  const more = el("button", { type: "button", class: "more", id: id + "-more", text: "More", hidden: true });
  let pages = 1;
  async function refresh() {
    const rows = [];
    let cursor = null;
    for (let page = 0; page < pages; page++) {
      const found = await api("/threads?" + (query ? query + "&" : "") + "limit=" + size +
        (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
      rows.push(...found.threads);
      cursor = found.next_cursor;
      if (!cursor) break;
    }
    body.replaceChildren(...rows.map((t) => el("tr", {},
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
  return { nodes: [table, more], refresh };
}

async function showList() {
  const waiting = pagedThreads("waiting", "status=waiting", 50, ["Thread", "Flow", "Waiting at", "Since"],
    (t) => [el("td", { text: t.flow }), el("td", { text: t.node }), el("td", { text: when(t.updated) })],
    "Nobody is waited for.");
  const recent = pagedThreads("recent", "", 20, ["Thread", "Flow", "Status", "Updated"],
    (t) => [el("td", { text: t.flow }), el("td", {}, el("span", { class: "status " + t.status, text: t.status })),
      el("td", { text: when(t.updated) })],
    "No threads yet.");
  main.replaceChildren(
    el("h1", { text: "Waiting for a person" }), ...waiting.nodes,
    el("h2", { text: "Recently updated" }), ...recent.nodes,
  );
  async function refresh() {
    try {
      await waiting.refresh();
      await recent.refresh();
      say("");
    } catch (error) { say(error, "error"); }
  }
  await refresh();
  listTimer = setInterval(refresh, 5000);
}

// -- one thread -----------------------------------------------------------------------------

async function showThread(id) {
  const parts = {
    title: el("h1", { text: id }),
    summary: el("p", { class: "summary" }),
    diagram: el("figure", { class: "diagram" }),
    review: el("section", { class: "review", id: "review" }),
    state: el("pre", { class: "state", id: "state" }),
    history: el("ol", { class: "history", id: "history" }),
  };
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/", text: "← all threads" })),
    parts.title, parts.summary,
    el("div", { class: "columns" },
      el("div", { class: "left" }, parts.review, el("h2", { text: "Flow" }), parts.diagram),
      el("div", { class: "right" },
        el("h2", { text: "History" }), parts.history,
        el("details", {}, el("summary", { text: "State" }), parts.state))),
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
  await render(id, parts, shown);
  stream = follow(id, refresh);
}

async function render(id, parts, shown) {
  const thread = await api("/threads/" + encodeURIComponent(id));
  if (thread.version === shown.version && thread.status === shown.status) return;
  const view = await api("/threads/" + encodeURIComponent(id) + "/view");
  if (thread.status !== "pending" && notice.classList.contains("info")) say("");
  parts.summary.replaceChildren(
    el("span", { text: thread.flow }), " · ",
    el("span", { class: "status " + thread.status, id: "status", text: thread.status }),
    " at ", el("code", { text: thread.node }), " · version ", el("span", { id: "version", text: thread.version }));
  parts.state.textContent = JSON.stringify(thread.state, null, 2);
  renderReview(id, thread, view, parts.review);
  await renderDiagram(id, parts.diagram);
  await renderHistory(id, parts.history);
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

async function renderHistory(id, list) {
  const first = await api("/threads/" + encodeURIComponent(id) + "/history?limit=1");
  const offset = Math.max(0, first.total - 40);
  const page = await api("/threads/" + encodeURIComponent(id) + "/history?limit=40&offset=" + offset);
  list.replaceChildren(...page.checkpoints.reverse().map((c) => el("li", {},
    el("span", { class: "version", text: "v" + c.version }), " ",
    el("strong", { text: c.kind }), " ", c.node || "", " → ", c.next, " ",
    el("span", { class: "status " + c.status, text: c.status }), " ",
    el("time", { text: when(c.ts) }),
    Object.keys(c.update).length ? el("div", { class: "changed", text: "changed: " + Object.keys(c.update).join(", ") }) : null,
    c.actor ? el("div", { class: "changed", text: "by " + c.actor + (c.reason ? ": " + c.reason : "") }) : null)));
}

async function send(id, input, gate) {
  say("Sent; working…", "info");
  try {
    await api("/threads/" + encodeURIComponent(id) + "/resume", {
      method: "POST",
      body: JSON.stringify({ input: input, gate: gate || null, wait: false }),
    });
  } catch (error) { say(error, "error"); return false; }
  return true;
}

function renderReview(id, thread, view, section) {
  section.replaceChildren();
  if (thread.status === "waiting") {
    section.append(el("p", { class: "waiting", text: "Waiting for you at " + thread.gates.map((g) => g.name).join(", ") }));
  }
  if (thread.error) {
    section.append(el("p", { class: "error", text: "Failed: " + thread.error.type + (thread.error.message ? ": " + thread.error.message : "") }));
  }
  if (view.kind === "sas") renderSas(id, thread, view, section);
  else if (view.kind === "chat") renderChat(id, thread, view, section);
  else for (const gate of thread.gates) section.append(gateForm(id, gate, payloadOf(thread, gate.name)));
}

// What the open pause `name` shows whoever answers it (its payload); undefined: nothing.
function payloadOf(thread, name) {
  const pause = (thread.pauses || []).find((p) => p.id === name);
  return pause && pause.payload !== null ? pause.payload : undefined;
}

// A payload as text: a string as it is, anything else as indented JSON; never markup.
function payloadBlock(name, payload) {
  if (payload === undefined) return null;
  const text = typeof payload === "string" ? payload : JSON.stringify(payload, null, 2);
  return el("pre", { class: "payload", "data-pause": name, text: text });
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
      on: { click: () => send(id, { action: "approve" }) } }),
    el("label", { for: "feedback", text: "Feedback" }), message,
    view.stage === "steps" ? el("label", {}, "on ", target) : null,
    el("button", { type: "button", id: "send-feedback", text: "Send feedback", on: { click: async () => {
      if (!message.value.trim()) { say("Write what should change first.", "error"); return; }
      const input = { action: "feedback", message: message.value };
      if (target.value) input.task = target.value;
      if (await send(id, input)) message.value = "";
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
    if (await send(id, { [view.input_field]: box.value }, thread.gates[0].name)) box.value = "";
  } } }, box, el("button", { type: "submit", text: "Send" })));
}

// -- any gate: a form generated from its input schema ---------------------------------------------

function gateForm(id, gate, payload) {
  const schema = gate.input_schema || {};
  const required = new Set(schema.required || []);
  const fields = [];
  const form = el("form", { class: "gate", "data-gate": gate.name });
  form.append(el("h2", { text: "Answer " + gate.name }));
  if (gate.description) form.append(el("p", { text: gate.description }));
  if (payload !== undefined) form.append(payloadBlock(gate.name, payload));
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    const type = prop.type || (prop.anyOf ? (prop.anyOf.find((p) => p.type !== "null") || {}).type : "");
    const inputId = "field-" + gate.name + "-" + name;
    let input;
    if (type === "boolean") input = el("input", { id: inputId, type: "checkbox", checked: prop.default === true });
    else if (prop.enum) input = el("select", { id: inputId }, prop.enum.map((v) => el("option", { value: v, text: v })));
    else if (type === "integer" || type === "number") input = el("input", { id: inputId, type: "number", step: type === "integer" ? 1 : "any", value: prop.default ?? "" });
    else if (type === "string") input = (prop.maxLength || 0) > 200
      ? el("textarea", { id: inputId, rows: 3, maxlength: prop.maxLength, text: prop.default ?? "" })
      : el("input", { id: inputId, type: "text", maxlength: prop.maxLength, value: prop.default ?? "" });
    else input = el("textarea", { id: inputId, rows: 3, placeholder: "JSON", text: prop.default !== undefined ? JSON.stringify(prop.default) : "" });
    fields.push({ name, type, input, prop });
    form.append(el("div", { class: "field" },
      el("label", { for: inputId, text: (prop.title || name) + (required.has(name) ? " *" : "") }), input,
      prop.description ? el("small", { text: prop.description }) : null));
  }
  form.append(el("button", { type: "submit", class: "primary", text: "Send" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = {};
    try {
      for (const f of fields) {
        if (f.type === "boolean") input[f.name] = f.input.checked;
        else if (f.input.value === "" && !required.has(f.name)) continue;
        else if (f.type === "integer" || f.type === "number") input[f.name] = Number(f.input.value);
        else if (f.type === "string" || f.prop.enum) input[f.name] = f.input.value;
        else input[f.name] = JSON.parse(f.input.value);
      }
    } catch (error) { say("A JSON field is not valid JSON: " + error.message, "error"); return; }
    await send(id, input, gate.name);
  });
  return form;
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
  const shown = match ? showThread(decodeURIComponent(match[1])) : showList();
  shown.catch((error) => say(error, "error"));
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

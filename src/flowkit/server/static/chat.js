// flowkit chat page: a person talks with a conversational flow (the roundtable's characters,
// the dialogue assistant). The transcript comes from GET /threads/{id}/view; live frames from
// the thread's WebSocket in the roundtable origin's shapes (message, status), plus the opt-in
// token frames (?tokens=true) and a pause frame when the thread waits for the person again.
// What the person types goes over the same socket. Every value is shown with textContent,
// never as markup.
"use strict";

const notice = document.getElementById("notice");
const liveBadge = document.getElementById("live");
const title = document.getElementById("title");
const list = document.getElementById("messages");
const typingLine = document.getElementById("typing");
const ended = document.getElementById("ended");
const composer = document.getElementById("composer");
const box = document.getElementById("say");
const sendButton = document.getElementById("send");
const startSection = document.getElementById("start");

// -- small helpers -------------------------------------------------------------------------

function say(message, kind) {
  notice.hidden = !message;
  notice.className = "notice " + (kind || "info");
  notice.replaceChildren();
  if (!message) return;
  if (message instanceof Problem) {
    notice.append(el("strong", { text: message.code + ": " }), message.message);
    if (message.status === 401) notice.append(el("p", { text: "Enter the server's token above." }));
  } else {
    notice.textContent = String(message);
  }
}

function isPerson(speaker) { return String(speaker).toUpperCase() === "USER"; }

// -- the conversation -------------------------------------------------------------------------

const chat = {
  id: null,
  flow: "",
  field: null,        // the gate's text field; null: the thread does not take text now
  socket: null,
  thinking: new Set(), // characters whose status is THINKING
  awaiting: false,    // the person spoke and the flow has not waited for them again yet
  drafts: new Map(),  // node -> the bubble its streamed tokens go into
  lastSpeaker: "",    // who answered last (named in "… is typing" when no status says)
  statuses: false,    // the flow sends typing statuses: only they say who is typing
  poll: null,
  stopped: false,
};

function bubble(speaker, text, extra) {
  const mine = isPerson(speaker);
  return el("li", { class: "message " + (mine ? "mine" : "theirs") + (extra ? " " + extra : ""), "data-speaker": speaker },
    el("span", { class: "speaker", text: mine ? "You" : speaker }), el("div", { class: "text", text: text }));
}

function scrollDown() { list.scrollTop = list.scrollHeight; }

function showTyping() {
  const names = [...chat.thinking];
  let text = names.length === 1 ? names[0] + " is typing…"
    : names.length ? names.slice(0, -1).join(", ") + " and " + names[names.length - 1] + " are typing…" : "";
  if (!text && chat.awaiting && !chat.statuses && !chat.drafts.size) {
    // A flow that sends no statuses (the dialogue): whoever answered last, else just wait.
    text = chat.lastSpeaker ? chat.lastSpeaker + " is typing…" : "Waiting for the answer…";
  }
  if (typingLine.textContent !== text) typingLine.textContent = text;
  if (typingLine.hidden !== !text) {
    typingLine.hidden = !text;
    scrollDown(); // the list just got shorter or taller: keep the newest message in sight
  }
}

function setComposer() {
  const open = chat.field !== null;
  composer.hidden = !open && !chat.awaiting;
  sendButton.disabled = !open || chat.awaiting;
}

function clearDrafts() {
  for (const draft of chat.drafts.values()) draft.remove();
  chat.drafts.clear();
}

// The thread as stored: the transcript is drawn anew from its state (live bubbles included).
async function reload() {
  const path = "/threads/" + encodeURIComponent(chat.id);
  const thread = await api(path);
  const view = await api(path + "/view");
  chat.flow = thread.flow;
  title.textContent = thread.flow + " · " + chat.id;
  document.title = thread.flow + " · flowkit chat";
  if (view.kind !== "chat") {
    say("This thread is not a conversation; open it on the review page: /#/threads/" + chat.id, "error");
    return thread;
  }
  clearDrafts();
  list.replaceChildren(...view.messages.map((m) => bubble(m.speaker, m.text)));
  const theirs = view.messages.filter((m) => !isPerson(m.speaker));
  if (theirs.length) chat.lastSpeaker = theirs[theirs.length - 1].speaker;
  chat.field = thread.status === "waiting" ? view.input_field : null;
  if (thread.status !== "pending") {
    chat.awaiting = false;
    chat.thinking.clear();
  } else {
    chat.awaiting = true;
  }
  ended.hidden = !(thread.status === "done" || thread.status === "failed");
  ended.textContent = thread.status === "done" ? "The conversation has ended."
    : thread.status === "failed" ? "The conversation stopped: " + ((thread.error && thread.error.type) || "failed") : "";
  setComposer();
  showTyping();
  scrollDown();
  return thread;
}

function refresh() { reload().catch((error) => say(error, "error")); }

// While an answer is on its way, look at the thread's status now and then too: a frame missed
// while the socket was (re)connecting never leaves the page waiting forever. The transcript is
// drawn again only once the run is over, so live bubbles are not swapped for a half-written state.
function watchAnswer() {
  clearInterval(chat.poll);
  chat.poll = setInterval(async () => {
    if (!chat.awaiting) { clearInterval(chat.poll); return; }
    try {
      const thread = await api("/threads/" + encodeURIComponent(chat.id));
      if (thread.status !== "pending") refresh();
    } catch (error) { say(error, "error"); }
  }, 3000);
}

function onFrame(frame) {
  if (frame.type === "status") {
    chat.statuses = true;
    if (frame.status === "THINKING") chat.thinking.add(frame.character);
    else chat.thinking.delete(frame.character);
    showTyping();
  } else if (frame.type === "token") {
    let draft = chat.drafts.get(frame.node);
    if (!draft) {
      const who = chat.thinking.size === 1 ? [...chat.thinking][0] : chat.lastSpeaker || chat.flow;
      draft = bubble(who, "", "draft");
      chat.drafts.set(frame.node, draft);
      list.append(draft);
    }
    draft.querySelector(".text").textContent += frame.text;
    showTyping();
    scrollDown();
  } else if (frame.type === "message") {
    clearDrafts();
    chat.lastSpeaker = frame.speaker;
    list.append(bubble(frame.speaker, frame.text));
    showTyping();
    scrollDown();
  } else if (frame.type === "pause") {
    chat.awaiting = false;
    chat.thinking.clear();
    refresh();
  } else if (frame.type === "error") {
    chat.awaiting = false;
    say(frame.code + ": " + frame.detail, "error");
    refresh();
  }
}

function connect() {
  if (chat.stopped) return;
  if (!token()) return; // the socket serves characters' words to principals only
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(scheme + "//" + location.host + "/threads/" + encodeURIComponent(chat.id) +
    "/ws?tokens=true&auth=message");
  chat.socket = socket;
  socket.addEventListener("open", () => {
    socket.send(JSON.stringify({ type: "auth", token: token() }));
    liveBadge.textContent = "live";
    liveBadge.className = "live on";
    refresh(); // a step committed before the socket listened sends nothing: read once more
  });
  socket.addEventListener("message", (event) => {
    let frame;
    try { frame = JSON.parse(event.data); } catch (error) { return; }
    if (frame && typeof frame === "object") onFrame(frame);
  });
  socket.addEventListener("close", (event) => {
    if (chat.socket !== socket) return;
    chat.socket = null;
    liveBadge.textContent = "reconnecting…";
    liveBadge.className = "live off";
    if (event.code >= 4400 && event.code < 4500) {
      liveBadge.textContent = "";
      if (event.code === 4401 || event.code === 4403) say(new Problem(null, event.code - 4000), "error");
      return; // refused (auth, no such thread): trying again changes nothing
    }
    setTimeout(connect, 2000);
  });
}

function send() {
  const text = box.value;
  if (!text.trim() || chat.field === null || chat.awaiting) return;
  if (!chat.socket || chat.socket.readyState !== WebSocket.OPEN) {
    say("Not connected yet; try again in a moment.", "error");
    return;
  }
  say("");
  chat.socket.send(JSON.stringify({ text: text }));
  list.append(bubble("USER", text));
  box.value = "";
  chat.awaiting = true;
  setComposer();
  showTyping();
  scrollDown();
  watchAnswer();
}

composer.addEventListener("submit", (event) => { event.preventDefault(); send(); });
box.addEventListener("keydown", (event) => {
  // Enter sends, Shift+Enter is a new line; Enter that ends an IME composition is neither.
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
    event.preventDefault();
    send();
  }
});

async function openThread(id) {
  chat.id = id;
  if (!token()) say("Enter the server's token above to read and talk.", "info");
  const thread = await reload();
  if (thread.status === "pending") watchAnswer();
  connect();
  box.focus();
}

// -- starting a conversation: /chat?flow=NAME --------------------------------------------------

async function showStart(flow) {
  startSection.hidden = false;
  list.hidden = true;
  const flows = await api("/flows");
  if (!flow) {
    startSection.replaceChildren(el("h1", { text: "Start a conversation" }),
      el("ul", { class: "flows" }, flows.map((f) => el("li", {},
        el("a", { href: "/chat?flow=" + encodeURIComponent(f.name), text: f.name }), f.description ? " — " + f.description : ""))));
    return;
  }
  const found = flows.find((f) => f.name === flow);
  if (!found) { say("This server serves no flow `" + flow + "`.", "error"); return; }
  title.textContent = flow;
  const idField = el("input", { id: "thread-id", type: "text", maxlength: 128, placeholder: "a new id (optional)", spellcheck: "false" });
  const start = el("button", { type: "submit", id: "start-chat", class: "primary", text: "Start the conversation" });
  startSection.replaceChildren(
    el("h1", { text: "New conversation: " + flow }),
    found.description ? el("p", { text: found.description }) : null,
    el("form", { class: "field", on: { submit: async (event) => {
      event.preventDefault();
      start.disabled = true;
      try {
        const body = idField.value.trim() ? { thread_id: idField.value.trim() } : {};
        const made = await api("/flows/" + encodeURIComponent(flow) + "/threads", { method: "POST", body: JSON.stringify(body) });
        location.assign("/chat/" + encodeURIComponent(made.thread_id));
      } catch (error) { say(error, "error"); start.disabled = false; }
    } } }, el("label", { for: "thread-id", text: "Conversation id" }), idField, start));
}

// -- the page -------------------------------------------------------------------------------------

function main() {
  if (token()) document.getElementById("token").placeholder = "token in use";
  const match = location.pathname.match(/^\/chat\/(.+)$/);
  const shown = match ? openThread(decodeURIComponent(match[1]))
    : showStart(new URLSearchParams(location.search).get("flow") || "");
  shown.catch((error) => say(error, "error"));
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = document.getElementById("token");
  if (field.value) sessionStorage.setItem(TOKEN_KEY, field.value);
  field.value = "";
  chat.stopped = true;
  if (chat.socket) chat.socket.close();
  location.reload();
});
main();

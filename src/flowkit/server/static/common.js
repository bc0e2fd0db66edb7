// Helpers the review page (app.js) and the chat page (chat.js) share, loaded before either:
// elements built from text (never markup), the token the user gave (kept for the tab), and
// the API called with it, its problems thrown as ``Problem``.
"use strict";

const TOKEN_KEY = "flowkit-token"; // one token for both pages (same tab, same origin)

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
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
    this.version = body && typeof body.version === "number" ? body.version : null;
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

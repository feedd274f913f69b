// Redraws a part of the widget in place (components/region.rs): the new
// markup is parsed into an inert template and the part's elements are
// patched to match it, so every element that is still there stays the
// same node. A click pressed on Apply, +/− or Retry lands even when the
// part is redrawn before the button is released; focus, an input
// method's composition, a screen reader's place and an app's frame (which
// would reload) survive. Elements match by tag and by their `id` or
// `data-focus` key, else by position. With `outer`, the markup is the
// root's own (one element, a message: components/messages.rs) and its
// attributes are patched too.
//
// Written here rather than taken from morphdom or idiomorph (3–12 KB
// minified): the widget's opened weight is a budget of 92 KB brotli
// (docs/benchmarks.md) and its markup needs only this much.

const key = (n) => n.nodeName + (n.nodeType == 1 ? n.id || n.getAttribute("data-focus") || "" : "");

export function morph(root, html, outer) {
  const t = document.createElement("template");
  t.innerHTML = html;
  outer ? patch(root, t.content.firstChild) : children(root, t.content);
}

function children(into, from) {
  let at = into.firstChild;
  for (let n = from.firstChild, next; n; n = next) {
    next = n.nextSibling;
    const k = key(n);
    // The same element further on: those before it are gone.
    let m = at;
    while (m && key(m) != k) m = m.nextSibling;
    if (m) {
      while (at != m) {
        const gone = at;
        at = at.nextSibling;
        gone.remove();
      }
      at = m.nextSibling;
      patch(m, n);
    } else {
      into.insertBefore(n, at);
    }
  }
  while (at) {
    const gone = at;
    at = at.nextSibling;
    gone.remove();
  }
}

function patch(el, to) {
  if (el.nodeType != 1) {
    if (el.nodeValue != to.nodeValue) el.nodeValue = to.nodeValue;
    return;
  }
  // A frame's page sizes its frame (an MCP App's bridge sets its height
  // and class): of a frame, only its address and title are the markup's.
  if (el.nodeName == "IFRAME") {
    for (const name of ["src", "title"]) {
      const value = to.getAttribute(name);
      if (value != null && el.getAttribute(name) != value) el.setAttribute(name, value);
    }
    return;
  }
  for (const { name, value } of to.attributes) {
    if (el.getAttribute(name) != value) {
      el.setAttribute(name, value);
      // A field shows the new value unless the visitor is typing in it
      // or it keeps what was typed (`data-keep`).
      if (name == "value" && el != document.activeElement && !el.hasAttribute("data-keep")) el.value = value;
    }
  }
  for (const { name } of [...el.attributes]) if (!to.hasAttribute(name)) el.removeAttribute(name);
  children(el, to);
}

// A tool's question answered (client/elicitations.rs): the form's values
// by field name (`data-name`), typed by `data-kind` — the chosen options
// in the form's order, a box's check, a number as the browser parses it,
// a local date and time as RFC 3339 — leaving out empty optional fields;
// undefined while the browser finds the form invalid (it says why at the
// field). Read here, not in Rust: the same reading there weighed 3 KB of
// the widget's WASM.
export function formValues(form) {
  if (!form.reportValidity()) return;
  const out = {};
  for (const c of form.querySelectorAll("[data-name]")) {
    const kind = c.dataset.kind;
    let v = c.value;
    if (kind == "choices") {
      v = [...c.querySelectorAll("option:checked")].map((o) => o.getAttribute("value") || "");
      if (!v.length && !c.hasAttribute("required")) continue;
    } else if (kind == "boolean") v = c.checked;
    else if (!kind || !v) continue;
    else if (kind == "number" || kind == "integer") v = parseFloat(v);
    else if (c.dataset.format == "date-time") v = new Date(v).toISOString();
    out[c.dataset.name] = v;
  }
  return out;
}

// What a screen reader is told of a finished reply (client/turns.rs): the
// text of the server's sanitized HTML as shown, blocks apart, read from
// an inert template (nothing in it loads or runs).
export function spoken(html) {
  const t = document.createElement("template");
  t.innerHTML = html.replace(/<\/(p|li|h\d|pre|td|th)>|<br>/g, " $&");
  return t.content.textContent.split(/\s+/).filter(Boolean).join(" ");
}

// A message's idempotency key (client/outbox.rs): unique for this
// browser over the server's 24 hours, without `crypto.randomUUID`, which
// a page served over plain http lacks.
export const newKey = () => "w" + Date.now().toString(36) + Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);

// Attachments (issue #32): what uploads and shows them loads on first use
// (/widget/attach.js: the opened widget carries only these lines). A file
// picked with the paperclip, dropped on the panel or pasted goes to it
// when the workspace takes attachments (the paperclip is there); an
// image of a message opens larger through it.
// One import for every call: each `import()` is a promise of its own, and
// Chromium may settle a later one first (two files picked one after the
// other came out in the wrong order); callbacks on one promise run in
// order. A load that failed is tried again by the next call.
let attachJs;
const attachModule = () =>
  (attachJs ||= import("/widget/attach.js").catch((e) => {
    attachJs = null;
    throw e;
  }));
const attach = (how, what) => attachModule().then((m) => m[how](what));
const offer = (files) => {
  const list = [...(files || [])];
  if (list.length && document.querySelector(".ca-file")) attach("add", list);
  return list.length;
};
const dragging = (on) => document.documentElement.classList.toggle("ca-drop", on);
// A page's listeners (none where there is no page: the WASM tests in Node).
const on = (type, listener) => globalThis.document && addEventListener(type, listener);
on("change", (e) => {
  if (e.target.matches?.(".ca-file")) {
    offer(e.target.files);
    e.target.value = "";
  }
});
on("dragover", (e) => {
  if (e.dataTransfer?.types.includes("Files")) {
    e.preventDefault();
    dragging(true);
  }
});
on("dragleave", (e) => e.relatedTarget || dragging(false));
on("drop", (e) => {
  dragging(false);
  if (offer(e.dataTransfer?.files)) e.preventDefault();
});
on("paste", (e) => offer(e.clipboardData?.files) && e.preventDefault());
on("click", (e) => {
  const image = e.target.closest?.(".ca-att-img");
  if (image) attach("view", image);
});

// What the widget keeps in the browser (client/host_page.rs, outbox.rs):
// the messages the server has not taken yet, the conversation to restore
// and its copy for reading offline — one record a workspace, under the
// subject of the token it was kept with: a token of another subject drops
// it (the frame reloads, so nothing of the last user's stays in memory
// either). It lives in the frame's own localStorage where the browser lets
// a cross-site frame have one (partitioned by the host's site: Firefox,
// Safari, Chromium allowing third-party cookies), else in the host page's,
// through the loader: it hands the record back with the token (`caKept`)
// and keeps what the frame posts it, only to the origin the token came
// from (`caHost`: client/session.rs sets both). With
// neither (no loader: the hub's frame), in memory until the frame goes.
// The Storage Access API gave nothing here: Chromium denies it to a frame
// whose site the visitor never used first-party (README, "What the widget
// keeps"). The token's subject is read, not checked: the server checks
// the token on every call.
let kept, where, store;
export function keepToken(ws, token) {
  let sub;
  try {
    sub = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub;
  } catch {}
  if (kept) {
    if (kept.sub === sub) return false;
    kept = { sub };
    save();
    location.reload();
    return true;
  }
  where = "ca:" + ws;
  let text = self.caKept;
  try {
    store = localStorage;
    text = store.getItem(where);
    // Kept before #44 without a subject: nobody's to show.
    for (const k of ["outbox", "view", "conversation"]) store.removeItem(`ca:${k}:${ws}`);
  } catch {
    store = null;
  }
  try {
    kept = JSON.parse(text);
  } catch {}
  if (kept?.sub !== sub) {
    kept = { sub };
    save();
  }
  return false;
}
export const keepGet = (name) => (typeof kept?.[name] == "string" ? kept[name] : undefined);
export function keepSet(name, value) {
  if (!kept) return;
  if (value == null) delete kept[name];
  else kept[name] = value;
  save();
}
function save() {
  let text = JSON.stringify(kept);
  try {
    if (store) store.setItem(where, text);
    // The host page's storage is shared with its own data: the copy for
    // reading offline goes there only while it is small.
    else if (self.caHost) parent.postMessage({ type: "ca:keep", kept: text.length < 4e5 ? text : JSON.stringify({ ...kept, view: null }) }, self.caHost);
  } catch {}
}

// A restored message's files as the queue keeps them (client/turns.rs:
// "Ask again" sends them again): their ids, and their markup after the
// text's paragraph; "" for a message without files.
export const filesOf = (m) =>
  m.attachments?.length ? JSON.stringify({ ids: m.attachments.map((a) => a.id), html: m.html.slice(m.html.indexOf("<ul")) }) : "";

// A turn's event stream (assistant-api.md §3; client/stream.rs): the
// server-sent events of a `fetch` body (EventSource cannot send an
// Authorization header), one at a time. `next()` resolves to `{event,
// data, id}` — `event` named `message` when unnamed, `data` parsed as
// JSON (undefined when it is not), `id` when it has one — or to null at
// the stream's end, and rejects when the connection is lost. An event or
// a character split across chunks waits for the rest; lines end with LF
// or CRLF; an event without `data` is none. Past 1 MiB without an event's
// end what waits is dropped: a hostile stream cannot grow it without
// bound. Read here rather than in Rust, where the same reading weighed
// 1.8 KB brotli of the widget's WASM (0.3 KB here; docs/benchmarks.md).
export function events(body) {
  const reader = body.getReader(),
    utf8 = new TextDecoder(),
    ready = [];
  let rest = "";
  return {
    async next() {
      while (!ready.length) {
        const { done, value } = await reader.read();
        if (done) return null;
        rest += utf8.decode(value, { stream: true });
        for (let end; (end = /\r?\n\r?\n/.exec(rest)); ) {
          const event = block(rest.slice(0, end.index));
          rest = rest.slice(end.index + end[0].length);
          if (event) ready.push(event);
        }
        if (rest.length > 1 << 20) rest = "";
      }
      return ready.shift();
    },
  };
}

function block(text) {
  let event = "message",
    data,
    id;
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    // A comment (`: ping`) or an empty line names nothing.
    if (!colon || !line) continue;
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + (line[colon + 1] == " " ? 2 : 1));
    if (field == "event") event = value || "message";
    else if (field == "data") data = data == null ? value : data + "\n" + value;
    else if (field == "id") id = value;
  }
  if (data == null) return;
  try {
    data = JSON.parse(data);
  } catch {
    data = undefined;
  }
  return id == null ? { event, data } : { event, data, id };
}

// The widget's attachments (issue #32), loaded on first use — a file
// picked, dropped or pasted, or an image opened — so the opened widget
// carries none of it (its weight is a budget: docs/benchmarks.md). Served
// by the server as /widget/attach.js with every language's words and the
// largest upload filled in (server/src/embed.rs).
//
// Each file becomes a chip over the message field: a thumbnail or an
// icon, its name and size, its upload's progress and a remove button.
// It is uploaded at once (POST /v1/attachments, with the token the WASM
// keeps in `caToken`). Send is held back while a file is on its way and
// goes by itself once all have arrived; then the uploaded files are
// handed to the WASM's Send on the message field's `data-files` —
// `{"ids", "html"}`, the ids for the turn and the files drawn for the
// message — which it removes when it takes them. A file refused says why
// in the visitor's language and the typed text stays. A file removed
// before it was sent is deleted on the server too.

const WORDS = /*WORDS*/{};
const MAX_BYTES = /*MAX*/0;
// As many as a message takes (POST /v1/chat/turns' attachment_ids).
const MAX_FILES = 8;

const lang = () => document.documentElement.lang || "en";
// A word in the page's language, with its placeholder (if any) filled in.
const word = (key, placeholder, value) => {
  const text = (WORDS[lang()] || WORDS.en || {})[key] || key;
  return placeholder ? text.replace(placeholder, value) : text;
};
const IMAGES = ["image/png", "image/jpeg", "image/webp", "image/gif"];
const size = (bytes) =>
  new Intl.NumberFormat(lang(), {
    style: "unit",
    unit: bytes < 1e6 ? "kilobyte" : "megabyte",
    maximumFractionDigits: bytes < 1e6 ? 0 : 1,
  }).format(Math.max(bytes < 1e6 ? 1 : 0, bytes / (bytes < 1e6 ? 1e3 : 1e6)));
const el = (tag, attrs, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  e.append(...kids);
  return e;
};

let items = [];
// Send was pressed while a file was still uploading.
let waiting = false;
let list;
let status;
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");

function styled() {
  if (!document.querySelector("link[data-ca-attach]")) {
    document.head.append(el("link", { rel: "stylesheet", href: "/widget/attach.css", "data-ca-attach": "" }));
  }
}

// The chips' row, first in the composer's form.
function row() {
  if (list && list.isConnected) return list;
  styled();
  const form = document.querySelector(".ca-composer");
  list = el("ul", { class: "ca-chips", "aria-label": word("att_list") });
  status = el("p", { class: "ca-sr-only", "aria-live": "polite" });
  form.prepend(list, status);
  return list;
}

const say = (text) => {
  status.textContent = "";
  setTimeout(() => (status.textContent = text), 50);
};

/** Files picked, dropped or pasted: each becomes a chip and uploads. */
export function add(files) {
  row();
  for (const file of files) {
    if (items.length >= MAX_FILES) {
      say(word("att_too_many", "{max}", MAX_FILES));
      break;
    }
    const item = { file, name: file.name || "image.png", size: file.size, state: "uploading", progress: 0 };
    if (IMAGES.includes(file.type)) item.preview = URL.createObjectURL(file);
    items.push(item);
    draw(item);
    if (MAX_BYTES && file.size > MAX_BYTES) fail(item, word("att_too_large", "{max}", size(MAX_BYTES)));
    else upload(item);
  }
}

function draw(item) {
  const name = el("span", { class: "ca-chip-name" }, item.name);
  const bytes = el("span", { class: "ca-chip-size" }, size(item.size));
  const thumb = item.preview
    ? el("img", { class: "ca-chip-thumb", src: item.preview, alt: "" })
    : el("span", { class: "ca-chip-icon", "aria-hidden": "true" }, (item.name.split(".").pop() || "").slice(0, 4).toUpperCase());
  item.bar = el("progress", { max: "100", value: "0", "aria-label": word("att_uploading", "{name}", item.name) });
  item.why = el("span", { class: "ca-chip-error" });
  const remove = el("button", { type: "button", class: "ca-chip-remove", "aria-label": word("att_remove", "{name}", item.name) }, "×");
  remove.onclick = () => drop(item);
  item.chip = el("li", { class: "ca-chip", "data-state": "uploading", "aria-busy": "true" }, thumb, el("span", { class: "ca-chip-text" }, name, bytes, item.bar, item.why), remove);
  list.append(item.chip);
}

function update(item) {
  item.chip.dataset.state = item.state;
  item.chip.setAttribute("aria-busy", String(item.state == "uploading"));
  item.bar.value = Math.round(item.progress * 100);
}

function fail(item, why) {
  item.state = "failed";
  item.why.textContent = why;
  item.why.setAttribute("role", "alert");
  update(item);
  settled();
}

// Why the server refused a file, in the visitor's words.
function reason(status, code) {
  if (status == 413) return code == "image_too_large" ? word("att_image_too_large") : word("att_too_large", "{max}", size(MAX_BYTES));
  if (status == 415) return word(code == "unreadable_file" ? "att_unreadable" : "att_type");
  if (status == 429) return word("att_quota");
  return word("att_failed");
}

function upload(item) {
  const x = new XMLHttpRequest();
  item.xhr = x;
  x.open("POST", "/v1/attachments");
  x.setRequestHeader("Authorization", "Bearer " + (globalThis.caToken || ""));
  x.upload.onprogress = (e) => {
    if (e.lengthComputable) {
      item.progress = e.loaded / e.total;
      update(item);
    }
  };
  x.onload = () => {
    let body = {};
    try {
      body = JSON.parse(x.responseText);
    } catch (e) {}
    if (x.status != 201 || typeof body.id != "string") return fail(item, reason(x.status, body.code));
    Object.assign(item, { id: body.id, name: body.name, media_type: body.media_type, size: body.size, state: "done", progress: 1 });
    update(item);
    say(word("att_uploaded", "{name}", item.name));
    settled();
  };
  x.onerror = () => fail(item, word("att_failed"));
  const form = new FormData();
  form.append("file", item.file, item.name);
  x.send(form);
}

// A file is out of the way: a Send that waited goes now, unless one
// failed (the visitor reads why, and decides).
function settled() {
  if (!waiting || items.some((i) => i.state == "uploading")) return;
  waiting = false;
  if (!items.some((i) => i.state == "failed")) document.querySelector(".ca-composer").requestSubmit();
}

// Uploads removed before they were sent whose deletion did not get
// through (the network was down, the server failed): asked again when the
// browser is back online, while the widget is open (after that, the
// server's retention sweep deletes unsent uploads after a day).
const orphans = new Set();
function forget(id) {
  fetch("/v1/attachments/" + id, { method: "DELETE", headers: { Authorization: "Bearer " + (globalThis.caToken || "") } })
    .then((r) => {
      // 204 deleted, 404 gone already, 409 sent after all: settled.
      if (r.status >= 500 || r.status == 401) throw r.status;
      orphans.delete(id);
    })
    .catch(() => orphans.add(id));
}
addEventListener("online", () => orphans.forEach(forget));

function drop(item) {
  item.xhr?.abort();
  if (item.id && !item.sent) forget(item.id);
  const at = items.indexOf(item);
  items.splice(at, 1);
  item.chip.remove();
  if (item.preview && !item.sent) URL.revokeObjectURL(item.preview);
  // Focus goes on to the next chip's remove, else the message field.
  (list.querySelectorAll(".ca-chip-remove")[at] || list.querySelector(".ca-chip-remove:last-of-type") || document.getElementById("ca-input")).focus();
  settled();
}

// Send (the composer's form submitted, or Enter in its field, before the
// WASM hears it): held back while a file is still uploading; else the
// uploaded files are handed over on the field, and once the WASM took them
// (removed them) the chips go.
function send(e) {
  const field = document.getElementById("ca-input");
  delete field.dataset.files;
  if (!items.length) return;
  if (items.some((i) => i.state == "uploading")) {
    e.preventDefault();
    e.stopImmediatePropagation();
    waiting = true;
    say(word("att_waiting"));
    return;
  }
  waiting = false;
  const sent = items.filter((i) => i.state == "done");
  if (sent.length) field.dataset.files = JSON.stringify({ ids: sent.map((i) => i.id), html: drawn(sent) });
  setTimeout(() => {
    if (field.hasAttribute("data-files")) return;
    for (const i of sent) i.sent = true;
    for (const i of [...items]) drop(i);
  });
}
addEventListener("submit", (e) => e.target.matches(".ca-composer") && send(e), true);
addEventListener(
  "keydown",
  (e) => e.target.id == "ca-input" && e.key == "Enter" && !e.shiftKey && !e.isComposing && send(e),
  true,
);

// The files as the message shows them: an image as a thumbnail that opens
// larger, any other file as a download (the file itself, until a reload
// shows the server's links).
function drawn(sent) {
  const html = sent.map((i) => {
    const url = i.preview || (i.url = URL.createObjectURL(i.file));
    return i.preview
      ? `<li><button type="button" class="ca-att-img" aria-label="${esc(word("open_image", "{name}", i.name))}"><img src="${url}" alt="${esc(i.name)}"></button></li>`
      : `<li><a class="ca-att-file" href="${url}" download="${esc(i.name)}">${esc(i.name)}</a></li>`;
  });
  return `<ul class="ca-atts">${html.join("")}</ul>`;
}

/** An image of a message, larger, over the conversation; Escape closes. */
export function view(button) {
  styled();
  const shown = button.querySelector("img");
  const close = el("button", { type: "button", class: "ca-lightbox-close", "aria-label": word("att_close") }, "×");
  const image = el("img", { src: shown.src, alt: shown.alt });
  const box = el("div", { class: "ca-lightbox", role: "dialog", "aria-modal": "true", "aria-label": shown.alt }, image, close);
  const keys = (e) => {
    if (e.key == "Escape") {
      e.preventDefault();
      e.stopImmediatePropagation();
      shut();
    } else if (e.key == "Tab") {
      // The one control of the dialog keeps focus.
      e.preventDefault();
      close.focus();
    }
  };
  const shut = () => {
    box.remove();
    removeEventListener("keydown", keys, true);
    button.focus();
  };
  box.onclick = (e) => (e.target == image ? null : shut());
  addEventListener("keydown", keys, true);
  (document.querySelector(".ca-widget") || document.body).append(box);
  close.focus();
}

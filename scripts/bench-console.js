#!/usr/bin/env node
// How fast the console's pages are, against a running server (./dev demo
// with CA_ADMIN_TOKEN set): each page's server time (the request to the
// last byte of HTML, in process calls of the API included) over many
// requests, and its load in Debian's Chromium (navigation start to the
// load event, the stylesheet included, each a fresh context: cold cache),
// and until the console's WASM has hydrated it (copy buttons, the live look).
// It first makes a workspace with conversations, audit entries and usage
// through the demo model, so the pages have something to show.
// Usage: CA_ADMIN_TOKEN=… node scripts/bench-console.js [http://127.0.0.1:3000] [requests] [loads]
const crypto = require("crypto");
const path = require("path");
const { chromium } = require(path.join(__dirname, "../end2end/node_modules/playwright"));

const base = process.argv[2] || "http://127.0.0.1:3000";
const requests = Number(process.argv[3] || 200);
const loads = Number(process.argv[4] || 10);
const admin = process.env.CA_ADMIN_TOKEN;
if (!admin) {
  console.error("set CA_ADMIN_TOKEN to the server's admin token");
  process.exit(2);
}

const b64 = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
function mint(workspace, secret, sub) {
  const now = Math.floor(Date.now() / 1000);
  const head = b64({ alg: "HS256", typ: "JWT" });
  const body = b64({ aud: "context-assistant", ws: workspace, sub, permissions: [], iat: now, exp: now + 3600 });
  const signature = crypto.createHmac("sha256", secret).update(`${head}.${body}`).digest("base64url");
  return `${head}.${body}.${signature}`;
}

async function json(method, url, bearer, body) {
  const r = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: body && JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${method} ${url}: ${r.status} ${await r.text()}`);
  return r.json();
}

const quantile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

(async () => {
  // A workspace with something in it: 30 turns of 3 users through the demo model.
  const created = await json("POST", "/v1/workspaces", admin, { name: "Bench Shop", allowed_origins: [] });
  const users = ["ada", "bob", "cy"];
  let conversation = null;
  for (let i = 0; i < 30; i++) {
    const token = mint(created.id, created.embed_secret, users[i % 3]);
    const r = await fetch(`${base}/v1/chat/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: i % 2 ? "show me the menu" : "hello" }),
    });
    const text = await r.text();
    const started = /"conversation_id":"([^"]+)"/.exec(text);
    conversation = conversation || (started && started[1]);
  }
  await json("PATCH", "/v1/workspace", created.api_key, { theme: { mode: "dark", accent: "#aa3300" } });

  // A session, as the browser gets it.
  const signIn = await fetch(`${base}/console/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
    body: new URLSearchParams({ key: created.api_key }),
  });
  const cookie = signIn.headers.get("set-cookie").split(";")[0];
  const [name, value] = cookie.split("=");

  const pages = [
    ["set up", "/console"],
    ["conversations", "/console/conversations"],
    ["one conversation", `/console/conversations/${conversation}`],
    ["usage (30 days)", "/console/usage"],
    ["audit trail", "/console/audit"],
    ["secrets and data", "/console/operations"],
  ];
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  console.log(`| page | HTML | server p50 / p90 (${requests} requests) | browser load p50 / p90 (${loads} cold) | hydrated p50 / p90 |`);
  console.log("|---|---|---|---|---|");
  for (const [label, url] of pages) {
    const times = [];
    let bytes = 0;
    for (let i = 0; i < requests; i++) {
      const started = performance.now();
      const r = await fetch(base + url, { headers: { cookie } });
      const body = await r.arrayBuffer();
      times.push(performance.now() - started);
      if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
      bytes = body.byteLength;
    }
    times.sort((a, b) => a - b);
    const loaded = [];
    const hydrated = [];
    for (let i = 0; i < loads; i++) {
      const context = await browser.newContext();
      await context.addCookies([{ name, value, url: base }]);
      const page = await context.newPage();
      await page.goto(base + url, { waitUntil: "load" });
      await page.waitForSelector("body[data-hydrated]", { state: "attached" });
      const [load, ready] = await page.evaluate(() => {
        const n = performance.getEntriesByType("navigation")[0];
        return [n.loadEventStart - n.startTime, performance.getEntriesByName("console-hydrated")[0].startTime];
      });
      loaded.push(load);
      hydrated.push(ready);
      await context.close();
    }
    loaded.sort((a, b) => a - b);
    hydrated.sort((a, b) => a - b);
    const ms = (v) => v.toFixed(1);
    console.log(`| ${label} | ${(bytes / 1024).toFixed(1)} KB | ${ms(quantile(times, 0.5))} / ${ms(quantile(times, 0.9))} ms | ` +
      `${ms(quantile(loaded, 0.5))} / ${ms(quantile(loaded, 0.9))} ms | ` +
      `${ms(quantile(hydrated, 0.5))} / ${ms(quantile(hydrated, 0.9))} ms |`);
  }
  await browser.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});

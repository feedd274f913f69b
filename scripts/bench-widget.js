#!/usr/bin/env node
// Time from the click on the launcher to an interactive composer (the widget
// hydrated and holding its token), in Debian's Chromium, against a running
// server (./dev demo). Each run is a fresh browser context (cold cache).
// Usage: node scripts/bench-widget.js [http://127.0.0.1:3000] [runs]
const path = require("path");
const { chromium } = require(path.join(__dirname, "../end2end/node_modules/playwright"));

const base = process.argv[2] || "http://127.0.0.1:3000";
const runs = Number(process.argv[3] || 10);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const times = [];
  let bytesBeforeOpen = 0;
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    let wasmBeforeOpen = 0;
    let opened = false;
    page.on("response", async (r) => {
      if (!opened && r.url().endsWith(".wasm")) wasmBeforeOpen += (await r.body()).length;
    });
    await page.goto(base + "/", { waitUntil: "networkidle" });
    bytesBeforeOpen = Math.max(bytesBeforeOpen, wasmBeforeOpen);
    const frame = page.frameLocator("iframe.ca-frame");
    opened = true;
    const started = performance.now();
    await page.click("button.ca-launcher");
    await frame.locator("textarea[placeholder='Type a message…']").waitFor();
    times.push(performance.now() - started);
    await context.close();
  }
  await browser.close();
  times.sort((a, b) => a - b);
  const at = (p) => times[Math.min(times.length - 1, Math.floor(times.length * p))].toFixed(0);
  console.log(`click → interactive composer over ${runs} cold runs: median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms`);
  console.log(`WASM bytes fetched before the first open: ${bytesBeforeOpen}`);
})();

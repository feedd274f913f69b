#!/usr/bin/env node
// Time from the click on the launcher to an interactive composer (the widget
// hydrated and holding its token), in Debian's Chromium, against a running
// server (./dev demo). Each run is a fresh browser context (cold cache).
// Then where the time went, from the frame's own timeline (Navigation and
// Resource Timing, and the widget's marks ca:hydrate, ca:hydrated,
// ca:token): the median of each phase's end, from the click.
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
  const phases = {};
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
    // The click's time on the page's own clock.
    await page.evaluate(() => document.querySelector("button.ca-launcher")
      .addEventListener("click", () => { window.caClicked = performance.timeOrigin + performance.now(); }, true));
    const started = performance.now();
    await page.click("button.ca-launcher");
    await frame.locator("textarea[placeholder='Type a message…']").waitFor();
    times.push(performance.now() - started);
    const clicked = await page.evaluate(() => window.caClicked);
    const widget = page.frames().find((f) => f.url().includes("/widget?"));
    const timeline = await widget.evaluate(() => {
      const at = (t) => performance.timeOrigin + t;
      const nav = performance.getEntriesByType("navigation")[0];
      const resource = (suffix) => performance.getEntriesByType("resource").find((r) => r.name.split("?")[0].endsWith(suffix));
      const mark = (name) => performance.getEntriesByName(name)[0];
      return {
        "frame created, page asked for": at(nav.requestStart),
        "page's first byte (server render)": at(nav.responseStart),
        "page received": at(nav.responseEnd),
        "JS received": resource(".js") && at(resource(".js").responseEnd),
        "WASM received": resource(".wasm") && at(resource(".wasm").responseEnd),
        "hydration started (WASM compiled)": mark("ca:hydrate") && at(mark("ca:hydrate").startTime),
        "hydrated": mark("ca:hydrated") && at(mark("ca:hydrated").startTime),
        "token handed over": mark("ca:token") && at(mark("ca:token").startTime),
        "composer drawn connected (next frame)": mark("ca:interactive") && at(mark("ca:interactive").startTime),
      };
    });
    for (const [phase, t] of Object.entries(timeline)) {
      if (t) (phases[phase] = phases[phase] || []).push(t - clicked);
    }
    await context.close();
  }
  await browser.close();
  const quantile = (list, q) => [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(list.length * q))];
  const line = (list) => `median ${quantile(list, 0.5).toFixed(0)} ms, p90 ${quantile(list, 0.9).toFixed(0)} ms, ` +
    `max ${quantile(list, 1).toFixed(0)} ms`;
  const connected = phases["composer drawn connected (next frame)"] || [];
  console.log(`click → composer drawn connected, by the browser's own clocks, over ${runs} cold runs: ` +
    (connected.length ? line(connected) : "no marks (an older widget build?)"));
  console.log(`click → composer found by Playwright (its polling included): ${line(times)}`);
  console.log(`WASM bytes fetched before the first open: ${bytesBeforeOpen}`);
  console.log("\n| phase ends (ms after the click) | median | p90 |\n|---|---|---|");
  for (const [phase, list] of Object.entries(phases)) {
    console.log(`| ${phase} | ${quantile(list, 0.5).toFixed(0)} | ${quantile(list, 0.9).toFixed(0)} |`);
  }
  console.log(`| composer found by Playwright | ${quantile(times, 0.5).toFixed(0)} | ${quantile(times, 0.9).toFixed(0)} |`);
})();

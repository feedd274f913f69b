#!/usr/bin/env node
// Measures what a browser downloads: the loader, and the opened widget's
// WASM, JS and CSS, raw, gzip and brotli; then the console's own files
// (not the widget's budget). Usage: node scripts/sizes.js [site-root]
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");

const root = path.resolve(__dirname, "..");
const site = process.argv[2] || path.join(root, "target/site");
const files = [
  ["loader (embed.js)", path.join(root, "server/src/embed/loader.js")],
  ["widget WASM", path.join(site, "pkg/context-assistant.wasm")],
  ["widget JS", path.join(site, "pkg/context-assistant.js")],
  ["widget CSS", path.join(site, "pkg/context-assistant.css")],
  ["console WASM", path.join(site, "pkg/console_bg.wasm")],
  ["console JS", path.join(site, "pkg/console.js")],
  ["console CSS", path.join(site, "console.css")],
];
const kb = (n) => (n / 1024).toFixed(1) + " KB";
let openedBrotli = 0;
let consoleBrotli = 0;
console.log("| file | raw | gzip | brotli |\n|---|---|---|---|");
for (const [name, file] of files) {
  const data = fs.readFileSync(file);
  const gz = zlib.gzipSync(data, { level: 9 }).length;
  const br = zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
  if (name.startsWith("widget")) openedBrotli += br;
  if (name.startsWith("console")) consoleBrotli += br;
  console.log(`| ${name} | ${kb(data.length)} | ${kb(gz)} | ${kb(br)} |`);
}
console.log(`| opened widget total (WASM + JS + CSS) | | | ${kb(openedBrotli)} |`);
console.log(`| console total (WASM + JS + CSS) | | | ${kb(consoleBrotli)} |`);

// What a cross-site frame may keep, measured (README, "What the widget
// keeps"): a page on 127.0.0.2 frames a page on 127.0.0.1 (another site),
// which tries localStorage, sessionStorage and IndexedDB and, on a click,
// the Storage Access API. Run from the repository:
//
//   node scripts/storage-probe.mjs
//
// Chromium (Debian's, through end2end's playwright-core) as it comes and
// with third-party cookies allowed; Firefox ESR when `/usr/bin/firefox-esr`
// (apt-get install firefox-esr) and puppeteer-core (npm install
// --prefix /tmp/probe puppeteer-core, then NODE_PATH=/tmp/probe/node_modules)
// are there, over WebDriver BiDi. Only loopback is dialled.
import { createServer } from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const frame = `<!doctype html><meta charset=utf-8><button id=b>ask</button><pre id=o></pre><script>
const o = document.getElementById("o"), log = (s) => (o.textContent += s + "\\n");
for (const [name, get] of [["localStorage", () => localStorage], ["sessionStorage", () => sessionStorage]]) {
  try { get().setItem("probe", "1"); log(name + ": yes"); } catch (e) { log(name + ": refused (" + e.name + ")"); }
}
try { const r = indexedDB.open("probe"); r.onsuccess = () => log("IndexedDB: yes"); r.onerror = () => log("IndexedDB: refused (" + r.error.name + ")"); }
catch (e) { log("IndexedDB: refused (" + e.name + ")"); }
document.hasStorageAccess?.().then((v) => log("hasStorageAccess: " + v));
document.getElementById("b").onclick = () => document.requestStorageAccess().then(
  () => log("requestStorageAccess: granted"), (e) => log("requestStorageAccess: denied (" + e.name + ")"));
</script>`;
const html = (body) => (req, res) => { res.writeHead(200, { "content-type": "text/html" }); res.end(body); };
const servers = [
  createServer(html(frame)).listen(4391, "127.0.0.1"),
  createServer(html(`<!doctype html><iframe id=f src="http://127.0.0.1:4391/" width=400 height=200></iframe>`)).listen(4392, "127.0.0.2"),
];
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

async function report(name, frameOf) {
  await wait(800);
  const f = await frameOf();
  await f.click("#b");
  await wait(2500);
  console.log(`${name}\n  ${(await f.$eval("#o", (e) => e.textContent)).trim().split("\n").join("\n  ")}`);
}

const { chromium } = require("../end2end/node_modules/playwright-core");
const args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];
for (const [name, extra] of [["Chromium as it comes", []], ["Chromium, third-party cookies allowed", ["--disable-features=TrackingProtection3pcd"]]]) {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: [...args, ...extra] });
  const page = await browser.newPage();
  await page.goto("http://127.0.0.2:4392/");
  await report(`${name} (${browser.version()})`, async () => page.frames().find((f) => f.url().includes("4391")));
  await browser.close();
}
let puppeteer;
try { puppeteer = require("puppeteer-core"); } catch { console.log("Firefox: skipped (no puppeteer-core)"); }
if (puppeteer) {
  const browser = await puppeteer.launch({ browser: "firefox", executablePath: "/usr/bin/firefox-esr", headless: true });
  const page = await browser.newPage();
  await page.goto("http://127.0.0.2:4392/");
  await report(`Firefox (${await browser.version()})`, async () => page.frames().find((f) => f.url().includes("4391")));
  await browser.close();
}
servers.forEach((s) => s.close());

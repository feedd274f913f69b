#!/usr/bin/env node
// What a streamed token costs the browser in a long conversation. Each
// message is an element of markup (widget/src/components/messages.rs)
// redrawn in place by `morph` (widget/src/js/dom.js) when it changes.
// This builds a conversation of N finished messages as the widget draws
// them (paragraphs, a list, a link card, the reply's tools), then streams
// 200 tokens into a last reply, each one redrawn two ways: as the widget
// does (the streaming message's element only), and as the whole list's
// markup at once (the simpler design, measured and not taken). Prints the
// time per token with the layout that follows it (median and p90, in
// Debian's Chromium, by the page's own clock).
// Usage: node scripts/bench-redraw.js [N ...] (default 10 50 200)
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(__dirname, "../end2end/node_modules/playwright"));

const sizes = process.argv.slice(2).map(Number);
const dom = fs.readFileSync(path.join(__dirname, "../widget/src/js/dom.js"), "utf8").replace(/^export /gm, "");

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage();
  await page.setContent('<div class="ca-log" style="height:600px;overflow:auto"><div id="list"></div></div>');
  await page.addScriptTag({ content: `${dom}\nwindow.morph = morph;` });
  console.log("| messages | per token, median: its message (the widget) / the whole list | p90 |\n|---|---|---|");
  for (const n of sizes.length ? sizes : [10, 50, 200]) {
    const times = await page.evaluate((n) => {
      const part = (html) => `<div class="ca-part">${html}</div>`;
      const message = (i, html) =>
        `<div class="ca-msg ${i % 2 ? "ca-assistant" : "ca-user"}" data-bubble="${i}">` +
        part(`<span class="ca-sr-only">Assistant: </span>${html}`) +
        part(i % 2 ? `<a class="ca-card" href="https://example.com/${i}"><strong>Card ${i}</strong><span>A link</span></a>` : "") +
        part("") +
        part(i % 2 ? '<div class="ca-tools"><button data-action="copy" data-focus="m' + i + '-copy">Copy</button></div>' : "") +
        "</div>";
      const finished = (i) =>
        `<div class="ca-md"><p>Message ${i}: a reply of a few sentences, with <strong>bold</strong> words and <a href="https://example.com">a link</a>.</p>` +
        `<ul><li>one point</li><li>another point</li></ul><p>And a closing sentence of some length to make it real.</p></div>`;
      const before = Array.from({ length: n }, (_, i) => message(i, finished(i))).join("");
      const list = document.getElementById("list");
      morph(list, before);
      const times = [];
      let text = "";
      const run = (redraw) => {
        morph(list, before);
        const times = [];
        let text = "";
        for (let k = 0; k < 200; k++) {
          text += ` token${k}`;
          const t0 = performance.now();
          redraw(text);
          list.parentElement.scrollTop = list.parentElement.scrollHeight; // layout, as the widget's scroll does
          times.push(performance.now() - t0);
        }
        return times.sort((a, b) => a - b);
      };
      const streaming = (text) => message(n, `<p class="ca-text">${text}</p>`);
      return [
        // As the widget does: the streaming message's own element.
        run((text) => {
          const last = list.querySelector(`[data-bubble="${n}"]`);
          if (!last) morph(list, before + streaming(""));
          morph(last || list.lastChild, streaming(text), true);
        }),
        // The whole list's markup, patched in place.
        run((text) => morph(list, before + streaming(text))),
      ];
    }, n);
    const at = (t, q) => t[Math.min(t.length - 1, Math.floor(q * t.length))].toFixed(2);
    console.log(`| ${n} | ${at(times[0], 0.5)} / ${at(times[1], 0.5)} ms | ${at(times[0], 0.9)} / ${at(times[1], 0.9)} ms |`);
  }
  await browser.close();
})();

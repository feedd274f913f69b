import { expect, test, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

// The widget's in-place redraw (widget/src/js/dom.js), in Chromium: what
// stays the same node, what changes, what goes. The widget's browser
// tests show it in use (delivery.spec.ts); these pin its rules.

const source = readFileSync(join(__dirname, "../../widget/src/js/dom.js"), "utf8");

async function withMorph(page: Page, html: string) {
  await page.setContent(`<div id="root">${html}</div>`);
  // The module's functions as globals of the test page.
  await page.addScriptTag({ content: source.replace(/^export /gm, "") });
}

test("a redraw keeps the elements still there as the same nodes and patches what changed", async ({ page }) => {
  await withMorph(
    page,
    `<section id="ca-action"><h2>Apply this?</h2><p class="p">old preview</p>` +
      `<button data-focus="answer">Apply</button><button data-focus="decline">Cancel</button></section>`,
  );
  const kept = await page.evaluate(() => {
    const root = document.getElementById("root")!;
    const before = [...root.querySelectorAll("section, h2, button")];
    (window as any).morph(
      root,
      `<section id="ca-action" class="busy"><h2>Apply this?</h2><p class="warn">offline</p><p class="p">new preview</p>` +
        `<button data-focus="answer" disabled>Apply</button><button data-focus="decline">Cancel</button></section>`,
    );
    const after = [...root.querySelectorAll("section, h2, button")];
    return {
      same: before.map((el, i) => el === after[i]),
      html: root.innerHTML,
    };
  });
  expect(kept.same).toEqual([true, true, true, true]);
  expect(kept.html).toBe(
    `<section id="ca-action" class="busy"><h2>Apply this?</h2><p class="warn">offline</p><p class="p">new preview</p>` +
      `<button data-focus="answer" disabled="">Apply</button><button data-focus="decline">Cancel</button></section>`,
  );
});

test("a redraw keeps focus, typed text and its caret, and an app's frame without reloading it", async ({ page }) => {
  await withMorph(
    page,
    `<div data-component="0"><iframe src="about:blank" title="app"></iframe></div>` +
      `<input data-focus="decline" data-keep="reason" value="">`,
  );
  const input = page.locator("input");
  await input.fill("not tod");
  await input.press("ArrowLeft");
  const loads = await page.evaluate(() => {
    const frame = document.querySelector("iframe")!;
    (window as any).loads = 0;
    frame.addEventListener("load", () => (window as any).loads++);
    return 0;
  });
  expect(loads).toBe(0);
  await page.evaluate(() => {
    (window as any).morph(
      document.getElementById("root")!,
      `<div data-component="0"><iframe src="about:blank" title="app"></iframe></div>` +
        `<div data-component="1"><p>a second component</p></div>` +
        `<p class="ca-action-offline">offline</p><input data-focus="decline" data-keep="reason" value="">`,
    );
  });
  await expect(input).toBeFocused();
  await expect(input).toHaveValue("not tod");
  expect(await input.evaluate((el: HTMLInputElement) => el.selectionStart)).toBe(6);
  await page.waitForTimeout(200);
  expect(await page.evaluate(() => (window as any).loads)).toBe(0);
  await expect(page.locator("[data-component='1']")).toHaveText("a second component");
});

test("a redraw removes what is gone, inserts what is new, and matches keyed controls past the ones removed", async ({
  page,
}) => {
  await withMorph(
    page,
    `<button data-focus="remove-1">−</button><button data-focus="add-1">+</button>` +
      `<button data-focus="remove-2">−</button><button data-focus="add-2">+</button>`,
  );
  const result = await page.evaluate(() => {
    const root = document.getElementById("root")!;
    const add2 = root.querySelector('[data-focus="add-2"]');
    (window as any).morph(root, `<p>Cart</p><button data-focus="add-2">+ (3)</button>`);
    return { same: root.querySelector('[data-focus="add-2"]') === add2, html: root.innerHTML };
  });
  expect(result.same).toBe(true);
  expect(result.html).toBe(`<p>Cart</p><button data-focus="add-2">+ (3)</button>`);
});

test("a field shows a new value unless the visitor is typing in it", async ({ page }) => {
  await withMorph(page, `<input class="note" value="none"><input class="typing" value="a">`);
  await page.locator(".typing").fill("typed");
  await page.evaluate(() =>
    (window as any).morph(
      document.getElementById("root")!,
      `<input class="note" value="no onions"><input class="typing" value="server">`,
    ),
  );
  await expect(page.locator(".note")).toHaveValue("no onions");
  await expect(page.locator(".typing")).toHaveValue("typed");
});

test("a message redrawn as a whole keeps its element, and its frame the size and class its page gave it", async ({
  page,
}) => {
  await withMorph(
    page,
    `<div class="ca-msg" data-bubble="3"><p>Here is the board</p>` +
      `<iframe class="ca-app" src="about:blank#a" title="Board"></iframe></div>`,
  );
  const result = await page.evaluate(() => {
    const message = document.querySelector(".ca-msg")!;
    const frame = message.querySelector("iframe")!;
    // What the app's bridge does to its own frame.
    frame.style.height = "320px";
    frame.classList.add("ca-app-full");
    (window as any).morph(
      message,
      `<div class="ca-msg" data-bubble="3" data-stopped="true"><p>Here is the board, and more</p>` +
        `<iframe class="ca-app" src="about:blank#a" title="Order board"></iframe></div>`,
      true,
    );
    return {
      same: document.querySelector(".ca-msg") === message && message.querySelector("iframe") === frame,
      stopped: message.getAttribute("data-stopped"),
      text: message.querySelector("p")!.textContent,
      frame: [frame.style.height, frame.className, frame.title],
    };
  });
  expect(result).toEqual({
    same: true,
    stopped: "true",
    text: "Here is the board, and more",
    frame: ["320px", "ca-app ca-app-full", "Order board"],
  });
});

import { expect, test } from "@playwright/test";
import { BistroPage } from "./pages";

test("the demo page loads no WASM until the chat is opened", async ({ page }) => {
  const wasm: string[] = [];
  page.on("request", (r) => {
    if (r.url().endsWith(".wasm")) wasm.push(r.url());
  });
  const bistro = new BistroPage(page);
  await bistro.goto();
  await page.waitForLoadState("networkidle");
  expect(wasm).toEqual([]);
  await bistro.openChat();
  expect(wasm.length).toBe(1);
});

test("asking for the menu streams an answer with the menu as cards", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  await expect(bistro.widget.getByText("Demo model (offline)")).toBeVisible();

  await bistro.ask("show me the menu");

  await expect(bistro.widget.locator(".ca-user")).toHaveText(/show me the menu/);
  await expect(bistro.cards).toHaveCount(5);
  await expect(bistro.cards.first()).toContainText("Stone-baked Margherita");
  await expect(bistro.cards.first()).toContainText("$14 · Mains");
  const tart = bistro.widget.getByRole("link", { name: "Lemon Tart" });
  await expect(tart).toHaveAttribute("target", "_blank");
  await expect(tart).toHaveAttribute("rel", "noopener noreferrer");
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  await expect(bistro.lastReply.locator(".ca-md strong").first()).toHaveText("5 dishes");
  await expect(bistro.widget.getByRole("button", { name: "Send" })).toBeVisible();
  await page.screenshot({ path: "test-results/demo-menu.png" });

  // The finished reply copies with one click (the frame may write the clipboard).
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
  await bistro.lastReply.getByRole("button", { name: "Copy reply" }).click();
  await expect(bistro.lastReply.getByRole("button", { name: "Copied reply" })).toHaveText("Copied");
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain("Here is the menu");

  // The last reply may be asked for again: the same question, a fresh reply.
  await bistro.lastReply.getByRole("button", { name: "Ask again" }).click();
  await expect(bistro.widget.locator(".ca-user")).toHaveCount(2);
  await expect(bistro.widget.locator(".ca-user").last()).toHaveText(/show me the menu/);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  await expect(bistro.widget.getByRole("button", { name: "Ask again" })).toHaveCount(1);
});

test("a reload brings the conversation back", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  await bistro.ask("show me the menu");
  await expect(bistro.cards).toHaveCount(5);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");

  await page.reload();
  await bistro.openChat();
  await expect(bistro.widget.locator(".ca-user")).toHaveText(/show me the menu/);
  await expect(bistro.cards).toHaveCount(5);
});

test("“New conversation” starts an empty chat that a reload does not undo", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  await bistro.ask("show me the menu");
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");

  await bistro.widget.getByRole("button", { name: "New conversation" }).click();

  await expect(bistro.widget.locator(".ca-msg")).toHaveCount(0);
  await expect(bistro.widget.locator(".ca-empty")).toBeVisible();
  await bistro.ask("hello");
  await expect(bistro.widget.locator(".ca-user")).toHaveCount(1);
  await expect(bistro.widget.locator(".ca-user")).toHaveText(/hello/);
  await expect(bistro.lastReply.locator(".ca-md")).toBeVisible();

  await page.reload();
  await bistro.openChat();
  await expect(bistro.widget.locator(".ca-user")).toHaveCount(1);
  await expect(bistro.widget.locator(".ca-user")).toHaveText(/hello/);
  await expect(bistro.widget.locator(".ca-menu-cart")).toHaveCount(0);
});

test("earlier conversations are listed with when they were active, and one click goes back to one", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  await bistro.ask("show me the menu");
  await expect(bistro.cards).toHaveCount(5);
  await bistro.widget.getByRole("button", { name: "New conversation" }).click();
  await bistro.ask("hello from the history test <b>bold</b>");
  await expect(bistro.lastReply.locator(".ca-md")).toBeVisible();

  await bistro.widget.getByRole("button", { name: "Earlier conversations" }).click();
  const panel = bistro.widget.getByRole("region", { name: "Earlier conversations" });
  await expect(panel.getByRole("heading", { name: "Earlier conversations" })).toBeFocused();
  const items = panel.getByRole("listitem");
  await expect(items).toHaveCount(2);
  // The most recently active first, each with a time in the browser's locale.
  // Its title is the user's own words, shown as text, never as markup.
  await expect(items.first()).toContainText("hello from the history test <b>bold</b>");
  await expect(items.first().locator("b")).toHaveCount(0);
  const when = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" }).format(new Date());
  await expect(items.first()).toContainText(when);

  await items.filter({ hasText: "show me the menu" }).getByRole("button").click();
  await expect(panel).toHaveCount(0);
  await expect(bistro.widget.locator(".ca-user")).toHaveText(/show me the menu/);
  await expect(bistro.cards).toHaveCount(5);
  await expect(bistro.input).toBeFocused();

  // It is now the one a reload brings back.
  await page.reload();
  await bistro.openChat();
  await expect(bistro.widget.locator(".ca-user")).toHaveText(/show me the menu/);
});

/** Serves the first turn's stream only up to its first text event, as a connection that drops. */
async function cutFirstStream(page: import("@playwright/test").Page): Promise<{ posts: () => number }> {
  let posts = 0;
  await page.route("**/v1/chat/turns", async (route) => {
    posts += 1;
    if (posts > 1) return route.continue();
    const response = await route.fetch();
    const blocks = (await response.text()).split("\n\n");
    const firstText = blocks.findIndex((b) => /^event: text$/m.test(b));
    await route.fulfill({ response, body: blocks.slice(0, firstText + 1).join("\n\n") + "\n\n" });
  });
  return { posts: () => posts };
}

test("a stream cut mid-reply is resumed and the reply completes in place, without asking again", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  const cut = await cutFirstStream(page);
  const resumed: string[] = [];
  page.on("request", (request) => {
    if (request.url().includes("/events")) resumed.push(request.headers()["last-event-id"] ?? "");
  });

  await bistro.ask("show me the menu");

  await expect(bistro.widget.locator("body")).toContainText("Reconnecting");
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  await expect(bistro.widget.getByRole("alert")).toHaveCount(0);
  await expect(bistro.lastReply).not.toContainText("cut off");
  expect(cut.posts()).toBe(1);
  expect(resumed.length).toBe(1);
  expect(Number(resumed[0])).toBeGreaterThan(1);
});

test("a stream that stays lost is reported, never shown as finished, and Retry asks again", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  // Resuming fails too: the network stays down for the stream.
  await page.route("**/v1/turns/*/events", (route) => route.abort("internetdisconnected"));
  // The first turn's stream breaks after its first words: no `message`, no `done`.
  await cutFirstStream(page);

  await bistro.ask("show me the menu");

  await expect(bistro.lastReply).toContainText("This reply was cut off before it finished.");
  await expect(bistro.lastReply.locator(".ca-md")).toHaveCount(0);
  const alert = bistro.widget.getByRole("alert");
  await expect(alert).toContainText("The connection was lost before the reply finished.");
  // Focus goes to where the user goes on: the alert's Retry, then the composer.
  const retry = alert.getByRole("button", { name: "Retry" });
  await expect(retry).toBeFocused();

  await retry.press("Enter");

  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  await expect(bistro.widget.getByRole("alert")).toHaveCount(0);
  await expect(bistro.input).toBeFocused();
});

test("a message refused as one too many counts down, then Retry sends it", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  // The server's answer to a user over their limit (tests/api/quotas.rs checks the server side).
  let posts = 0;
  await page.route("**/v1/chat/turns", async (route) => {
    posts += 1;
    if (posts > 1) return route.continue();
    await route.fulfill({
      status: 429,
      headers: { "retry-after": "5", "content-type": "application/json" },
      body: JSON.stringify({ error: "Too many requests right now. Try again in 5 s.", code: "rate_limited" }),
    });
  });

  await bistro.ask("show me the menu");

  const alert = bistro.widget.getByRole("alert");
  await expect(alert).toContainText("You have sent many messages in a short time: this one was not sent.");
  await expect(alert.locator(".ca-wait")).toHaveText(/^ You can send again in [1-5] s\.$/);
  const retry = alert.getByRole("button", { name: "Retry" });
  await expect(retry).toBeDisabled();
  await expect(bistro.widget.getByRole("button", { name: "Send" })).toBeDisabled();
  await expect(bistro.widget.locator(".ca-user")).toHaveCount(0);

  await expect(retry).toBeEnabled({ timeout: 10_000 });
  await expect(alert.locator(".ca-wait")).toHaveText("");
  await retry.click();

  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  await expect(bistro.widget.locator(".ca-user")).toHaveCount(1);
  await expect(bistro.widget.getByRole("alert")).toHaveCount(0);
  expect(posts).toBe(2);
});

test("with forced colours every control and bubble keeps an edge, and nothing moves", async ({ page }) => {
  await page.emulateMedia({ forcedColors: "active", reducedMotion: "reduce" });
  const bistro = new BistroPage(page);
  await bistro.goto();
  // What a background alone drew gets a border in the system's colours.
  const edge = (el: Element) => {
    const s = getComputedStyle(el);
    return `${s.borderTopStyle !== "none"} ${parseFloat(s.borderTopWidth) >= 1} ${s.borderTopColor !== "rgba(0, 0, 0, 0)"}`;
  };
  expect(await bistro.launcher.evaluate(edge)).toBe("true true true");
  await bistro.openChat();
  await bistro.ask("show me the menu");
  await expect(bistro.cards).toHaveCount(5);
  for (const control of [
    bistro.widget.getByRole("button", { name: "Send" }),
    bistro.widget.getByRole("button", { name: "New conversation" }),
    bistro.widget.locator(".ca-user").first(),
    bistro.lastReply,
  ]) {
    expect(await control.evaluate(edge)).toBe("true true true");
  }
  // No animation or transition anywhere in the widget.
  const moving = await bistro.widget.locator("body").evaluate(() =>
    [...document.querySelectorAll("*")].filter((el) => {
      const s = getComputedStyle(el);
      return s.animationName !== "none" || s.transitionDuration.split(",").some((d) => parseFloat(d) > 0);
    }).length);
  expect(moving).toBe(0);
});

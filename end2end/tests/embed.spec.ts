import AxeBuilder from "@axe-core/playwright";
import { expect, test } from "@playwright/test";
import { TaskHostPage, type Workspace, taskPage, taskWorkspace } from "./hosts";

interface Embed { ws: Workspace; label: string; sub: string; expiredFirst?: boolean; theme?: string; accent?: string }

function initPage(baseURL: string, widgets: Embed[]) {
  const list = widgets.map((w) => ({ ws: w.ws.id, secret: w.ws.embed_secret, label: w.label, sub: w.sub,
    expiredFirst: !!w.expiredFirst, theme: w.theme, accent: w.accent }));
  return `${taskPage}/page-init?${new URLSearchParams({ assistant: baseURL, widgets: JSON.stringify(list) })}`;
}

test("an expired token is refreshed through getToken and the message still goes", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  await page.goto(initPage(baseURL!, [{ ws, label: "Chat", sub: "refresh_user", expiredFirst: true }]));
  await page.getByRole("button", { name: "Open Chat" }).click();
  const widget = page.frameLocator("iframe[title='Chat']");
  const input = widget.getByRole("textbox", { name: "Message" });
  await expect(input).toHaveAttribute("placeholder", "Type a message…");

  await input.fill("hello");
  await input.press("Enter");

  await expect(widget.locator(".ca-assistant").last()).toContainText("offline demo model");
  await expect(widget.locator(".ca-user")).toHaveCount(1);
  await expect(widget.locator(".ca-error")).toHaveCount(0);
  // Asked once for the open (handed to the frame as soon as it loaded, and again when the
  // widget said it was ready) and once more for the expired one: never twice for one need.
  expect(await page.evaluate(`calls[${JSON.stringify(ws.id)}]`)).toBe(2);
});

test("two widgets on one page work side by side", async ({ page, request, baseURL }) => {
  const [a, b] = [await taskWorkspace(request), await taskWorkspace(request)];
  await page.goto(initPage(baseURL!, [{ ws: a, label: "Support", sub: "u1" }, { ws: b, label: "Sales", sub: "u2" }]));

  for (const name of ["Support", "Sales"]) {
    await page.getByRole("button", { name: `Open ${name}` }).click();
    const widget = page.frameLocator(`iframe[title='${name}']`);
    const input = widget.getByRole("textbox", { name: "Message" });
    await expect(input).toHaveAttribute("placeholder", "Type a message…");
    await input.fill(`hello ${name}`);
    await input.press("Enter");
    await expect(widget.locator(".ca-assistant").last()).toContainText("offline demo model");
    await page.getByRole("button", { name: `Close ${name}` }).click();
  }
  await expect(page.locator("button.ca-launcher")).toHaveCount(2);
});

test("a page outside allowed_origins gets no widget and a console message", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request, ["https://elsewhere.example"]);
  const errors: string[] = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await new TaskHostPage(page, baseURL!).load(ws, "outsider");
  await page.locator("button.ca-launcher").click();

  await expect.poll(() => errors.some((e) => e.includes("allowed_origins")), { timeout: 10_000 }).toBe(true);
  await expect(page.frameLocator("iframe.ca-frame").getByRole("textbox", { name: "Message" })).toHaveCount(0);
});

test("at 375×667 the widget fills the screen", async ({ page, request, baseURL }) => {
  await page.setViewportSize({ width: 375, height: 667 });
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "phone_user");
  await host.ask("create task");
  await expect(host.card).toBeVisible();

  const box = await page.locator("iframe.ca-frame").boundingBox();
  expect(box).toEqual({ x: 0, y: 0, width: 375, height: 667 });
  await expect(host.input).toBeInViewport();
  await page.screenshot({ path: "test-results/phone-375.png" });
});

test("the whole flow works with the keyboard alone", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.load(ws, "keyboard_user");

  await page.keyboard.press("Tab");
  await expect(page.locator("button.ca-launcher")).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(host.input).toHaveAttribute("placeholder", "Type a message…");
  await expect(host.input).toBeFocused();
  await page.keyboard.type("create task");
  await page.keyboard.press("Enter");

  await expect(host.card).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(host.card.getByRole("button", { name: "Apply" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(host.lastReply).toContainText("Created the task Untitled.");
  // Focus went on to the composer: the next message is typed at once.
  await expect(host.input).toBeFocused();
  await page.keyboard.type("thanks");
  // Enter sends once the reply has ended (Send, no longer Stop): the text
  // above can show before its turn's last event.
  await expect(host.widget.locator("button.ca-send")).toBeVisible();
  await page.keyboard.press("Enter");
  await expect(host.widget.locator(".ca-user").last()).toHaveText(/thanks/);
});

test("axe finds no serious or critical problem in the widget", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "axe_user");
  await host.ask("create task");
  await expect(host.card).toBeVisible();

  // Scan the widget's own page, with a conversation and an action card on it.
  const frame = page.frames().find((f) => f.url().includes("/widget?ws="))!;
  const results = await new AxeBuilder({ page }).include("iframe.ca-frame").analyze();
  const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).toEqual([]);
  expect(frame).toBeTruthy();
});

test("the host sets dark mode and an accent colour, and hostile values are ignored", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  await page.goto(initPage(baseURL!, [
    { ws, label: "Dark", sub: "theme_user", theme: "dark", accent: "#aa3300" },
  ]));
  await page.getByRole("button", { name: "Open Dark" }).click();
  const widget = page.frameLocator("iframe[title='Dark']");
  await expect(widget.getByRole("textbox", { name: "Message" })).toHaveAttribute("placeholder", "Type a message…");
  await expect(widget.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(widget.locator(".ca-header")).toHaveCSS("background-color", "rgb(170, 51, 0)");

  const hostile = await request.get(`/widget?ws=${ws.id}&accent=${encodeURIComponent("red;}body{display:none")}&theme=x`);
  const html = await hostile.text();
  expect(html).not.toContain("display:none");
  expect(html).not.toContain('data-theme="x"');
});

test("an expired token with no way to refresh it says so instead of looping", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "stale_user", { expired: "1" });

  await host.ask("hello");

  await expect(host.widget.getByRole("alert")).toContainText("Reload the page");
  await expect(host.widget.getByRole("button", { name: "Send" })).toBeEnabled();
});

test("with data-token-url, an expired data-token is renewed from the host and the message still goes", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "renew_user", { expired: "1", renew: "1" });

  await host.ask("hello");

  await expect(host.widget.locator(".ca-user")).toHaveText(/hello/);
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  await expect(host.widget.getByRole("alert")).toHaveCount(0);
});

test("in a single-page app the widget survives navigation, and destroy then init brings the chat back", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const q = new URLSearchParams({ ws: ws.id, secret: ws.embed_secret, sub: "spa_user", assistant: baseURL! });
  await page.goto(`${taskPage}/page-spa?${q}`);
  await page.getByRole("button", { name: "Open SPA chat" }).click();
  const widget = page.frameLocator("iframe[title='SPA chat']");
  const input = widget.getByRole("textbox", { name: "Message" });
  await expect(input).toHaveAttribute("placeholder", "Type a message…");
  await input.fill("project status");
  await input.press("Enter");
  await expect(widget.locator(".ca-card")).toContainText("Apollo roadmap");

  await page.getByRole("link", { name: "One" }).click();
  await page.getByRole("link", { name: "Two" }).click();
  await expect(page).toHaveURL(/\/spa\/two$/);
  await expect(page.getByRole("heading", { name: "two" })).toBeVisible();
  await expect(page.locator("button.ca-launcher")).toHaveCount(1);
  await input.fill("project status");
  await input.press("Enter");
  await expect(widget.locator(".ca-user")).toHaveCount(2);
  await expect(widget.locator(".ca-assistant .ca-md")).toHaveCount(2);

  await page.getByRole("link", { name: "No assistant" }).click();
  await expect(page.locator("button.ca-launcher")).toHaveCount(0);
  await expect(page.locator("iframe.ca-frame")).toHaveCount(0);
  await page.goBack();
  await expect(page).toHaveURL(/\/spa\/two$/);
  await page.getByRole("button", { name: "Open SPA chat" }).click();
  await expect(widget.locator(".ca-user")).toHaveCount(2);

  const events = await page.evaluate(() => (window as unknown as { events: { type: string; detail: { role?: string; text?: string } | null }[] }).events);
  expect(events.filter((e) => e.type === "open").length).toBeGreaterThanOrEqual(1);
  expect(events.filter((e) => e.type === "message" && e.detail?.role === "assistant").length).toBeGreaterThanOrEqual(2);
  expect(events.every((e) => !e.detail || e.detail.text === undefined)).toBe(true);
});

test("a component of a kind the widget does not know shows nothing and breaks nothing", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("dialog", (d) => { errors.push(`dialog: ${d.message()}`); void d.dismiss(); });
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
  });
  await host.goto(ws, "component_user");

  await host.ask("project status");

  await expect(host.widget.locator(".ca-card")).toContainText("Apollo roadmap");
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  await expect(host.lastReply.locator("img")).toHaveCount(0);
  await expect(host.lastReply).not.toContainText("onerror");
  expect(errors).toEqual([]);
});

test("a cross-origin-isolated host page (COEP require-corp) gets a working widget", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.load(ws, "isolated_user", { isolated: "1" });
  expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(true);

  await page.locator("button.ca-launcher").click();
  await expect(host.input).toHaveAttribute("placeholder", "Type a message…");
  await host.ask("hello");
  await expect(host.lastReply).toContainText("offline demo model");
});

test("under a strict host CSP (no inline styles) the launcher floats, the panel opens at its size and the chat works", async ({ page, request, baseURL }) => {
  const violations: string[] = [];
  page.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.load(ws, "strict_user", { strict: "1" });
  await page.evaluate(() => {
    (window as unknown as { violations: string[] }).violations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      (window as unknown as { violations: string[] }).violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });

  const launcher = page.locator("button.ca-launcher");
  await expect(launcher).toHaveCSS("position", "fixed");
  await expect(launcher).toHaveCSS("width", "56px");
  await launcher.click();
  await expect(host.input).toHaveAttribute("placeholder", "Type a message…");
  const frame = page.locator("iframe.ca-frame");
  await expect(frame).toHaveCSS("position", "fixed");
  const box = await frame.boundingBox();
  expect(box?.width).toBe(400);
  expect(box?.height).toBeGreaterThan(400);

  await host.ask("hello");
  await expect(host.lastReply).toContainText("offline demo model");
  expect(await page.evaluate(() => (window as unknown as { violations: string[] }).violations)).toEqual([]);
  expect(violations).toEqual([]);
});

test("a long workspace name stays on one line beside the demo badge at 375 and 400 px", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const name = "The Very Long Name of a Neighbourhood Hardware and Garden Supplies Cooperative";
  const renamed = await request.patch("/v1/workspace", { headers: { authorization: `Bearer ${ws.api_key}` }, data: { name } });
  expect(renamed.status()).toBe(200);
  for (const width of [375, 400]) {
    await page.setViewportSize({ width, height: 700 });
    const host = new TaskHostPage(page, baseURL!);
    await host.goto(ws, "header_user");
    const title = host.widget.locator(".ca-title");
    const badge = host.widget.locator(".ca-demo");
    await expect(title).toHaveText(name);
    await expect(badge).toBeVisible();
    const line = await title.evaluate((e) => parseFloat(getComputedStyle(e).lineHeight) || 24);
    const [titleBox, badgeBox] = [(await title.boundingBox())!, (await badge.boundingBox())!];
    expect(titleBox.height, `the title is one line at ${width} px`).toBeLessThan(line * 1.5);
    expect(badgeBox.height, `the badge is one line at ${width} px`).toBeLessThan(30);
    // Side by side, the badge wholly inside the frame; the name ends in an ellipsis.
    expect(badgeBox.x).toBeGreaterThanOrEqual(titleBox.x + titleBox.width - 1);
    expect(badgeBox.x + badgeBox.width).toBeLessThanOrEqual(width);
    expect(await title.evaluate((e) => e.scrollWidth > e.clientWidth && getComputedStyle(e).textOverflow)).toBe("ellipsis");
    await page.screenshot({ path: `test-results/header-long-name-${width}.png` });
  }
});

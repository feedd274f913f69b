import { expect, test, type Frame, type Page } from "@playwright/test";
import { TaskHostPage, taskWorkspace, type Workspace } from "./hosts";

// An MCP App nobody here wrote (npm's server-basic-vanillajs, started by
// playwright.config.ts) inside the widget: it runs on the sandbox origin,
// shows its tool's result, calls its tool again through the assistant,
// writes in the chat once the visitor agrees, and opens only http(s) links
// the visitor confirms. The demo model calls the first tool whose name
// (dashes as spaces) is in the message.
const appServer = `http://127.0.0.1:${process.env.E2E_APP_SERVER_PORT ?? "3218"}/mcp`;
const sandboxOrigin = `http://127.0.0.1:${process.env.E2E_SANDBOX_PORT ?? "3217"}`;

// A link the app opens must not leave the machine: playwright.config.ts
// has every name but localhost resolve to nothing.

async function withClock(request: Parameters<typeof taskWorkspace>[0]): Promise<Workspace> {
  const ws = await taskWorkspace(request);
  const connected = await request.post("/v1/integrations/mcp/connect", {
    headers: { authorization: `Bearer ${ws.api_key}` },
    // The app declares no annotations: its host says the clock only reads.
    data: { name: "clock", url: appServer, verbs: { "get-time": "get" } },
  });
  expect(connected.status()).toBe(200);
  return ws;
}

/** The app's own document: the frame inside the sandbox page. */
async function appFrame(page: Page): Promise<Frame> {
  await expect
    .poll(() => page.frames().find((f) => f.parentFrame()?.url().startsWith(`${sandboxOrigin}/`)) !== undefined)
    .toBe(true);
  return page.frames().find((f) => f.parentFrame()?.url().startsWith(`${sandboxOrigin}/`))!;
}

async function showClock(page: Page, request: Parameters<typeof taskWorkspace>[0], baseURL: string, user: string) {
  const ws = await withClock(request);
  const host = new TaskHostPage(page, baseURL);
  await host.goto(ws, user);
  await host.ask("get time please");
  const bridge = host.widget.frameLocator("iframe.ca-app");
  const app = bridge.frameLocator("iframe").frameLocator("iframe");
  // The tool's result, as the app shows it (an ISO time).
  await expect(app.locator("#server-time")).toHaveText(/^\d{4}-\d\d-\d\dT\d\d:\d\d/);
  return { host, bridge, app };
}

test("an MCP App runs on the sandbox origin, calls its tool again and writes in the chat", async ({
  page,
  request,
  baseURL,
}) => {
  const { host, bridge, app } = await showClock(page, request, baseURL!, "app_user");
  await page.screenshot({ path: "test-results/mcp-app-desktop.png" });

  // The app's page has no origin of its own, inside the sandbox origin's page.
  const inner = await appFrame(page);
  const reach = await inner.evaluate(() => {
    const tried: string[] = [];
    const attempt = (what: string, f: () => unknown) => {
      try {
        f();
        tried.push(`${what}: read`);
      } catch {
        tried.push(`${what}: blocked`);
      }
    };
    attempt("sandbox page", () => window.parent.document.body.innerHTML);
    attempt("widget", () => window.parent.parent.parent.document.body.innerHTML);
    attempt("host page", () => window.top!.document.body.innerHTML);
    attempt("cookies", () => document.cookie);
    attempt("storage", () => window.localStorage.length);
    return tried;
  });
  expect(reach).toEqual([
    "sandbox page: blocked",
    "widget: blocked",
    "host page: blocked",
    "cookies: blocked",
    "storage: blocked",
  ]);

  // Its button calls the tool again, through the assistant.
  const time = app.locator("#server-time");
  const first = await time.textContent();
  const called = page.waitForResponse((r) => r.url().includes("/requests") && r.request().method() === "POST");
  await app.locator("#get-time-btn").click();
  expect((await (await called).json()).result.structuredContent.time).toBeTruthy();
  await expect(time).not.toHaveText(first!);

  // Send Message: the visitor is asked first, in the assistant's chrome.
  await app.locator("#message-text").fill("What does this clock show?");
  await app.locator("#send-message-btn").click();
  const ask = bridge.getByRole("alertdialog");
  await expect(ask).toContainText("The app wants to send this message for you:");
  await expect(ask).toContainText("What does this clock show?");
  await ask.getByRole("button", { name: "Send" }).click();
  await expect(ask).toHaveCount(0);
  await expect(host.widget.locator(".ca-user").last()).toContainText("What does this clock show?");
});

test("an MCP App opens only http links, and only when the visitor says so", async ({ page, request, baseURL }) => {
  const { bridge, app } = await showClock(page, request, baseURL!, "link_user");
  const decided = () => page.waitForResponse((r) => r.url().includes("/requests") && r.request().method() === "POST");

  await app.locator("#link-url").fill("javascript:alert(document.domain)");
  let answer = decided();
  await app.locator("#open-link-btn").click();
  expect((await (await answer).json()).error.message).toContain("only http and https");
  await expect(bridge.getByRole("alertdialog")).toHaveCount(0);

  await app.locator("#link-url").fill("https://modelcontextprotocol.io/");
  answer = decided();
  await app.locator("#open-link-btn").click();
  await answer;
  const ask = bridge.getByRole("alertdialog");
  await expect(ask).toContainText("The app wants to open this link:");
  await expect(ask).toContainText("https://modelcontextprotocol.io/");
  // Cancel opens nothing; Open opens a new tab (its name resolves to nothing here).
  await ask.getByRole("button", { name: "Cancel" }).click();
  await expect(ask).toHaveCount(0);
  await app.locator("#open-link-btn").click();
  const opened = page.context().waitForEvent("request", (r) => r.url() === "https://modelcontextprotocol.io/");
  await bridge.getByRole("alertdialog").getByRole("button", { name: "Open" }).click();
  // A new tab's navigation (its frame may be gone already: the name resolves to nothing here).
  expect((await opened).isNavigationRequest()).toBe(true);
  expect(page.url()).toContain("/page?");
});

test("an MCP App fits a phone-sized panel", async ({ page, request, baseURL }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  const { host } = await showClock(page, request, baseURL!, "phone_user");
  const frame = host.widget.locator("iframe.ca-app");
  const box = (await frame.boundingBox())!;
  expect(box.width).toBeLessThanOrEqual(375);
  // It took the height the app asked for, within the panel's bound.
  await expect.poll(async () => (await frame.boundingBox())!.height).toBeGreaterThan(200);
  await page.screenshot({ path: "test-results/mcp-app-375.png" });
});

// The messages are one part of markup redrawn in place (components/
// messages.rs): a later reply streaming in must not replace the elements
// of those before it, so an app's frame is neither replaced nor reloaded.
test("an app keeps its frame, and what it shows, while a later reply streams in", async ({
  page,
  request,
  baseURL,
}) => {
  const { host, app } = await showClock(page, request, baseURL!, "keep_user");
  const time = await app.locator("#server-time").textContent();
  await expect(host.widget.locator("button.ca-send")).toBeVisible();
  const finished = host.widget.locator(".ca-assistant .ca-md");
  const before = await finished.count();
  const frame = host.widget.locator("iframe.ca-app");
  const asked = host.widget.locator(".ca-user").first();
  // Marks only these elements hold (a redraw that replaced them would lose
  // them), and the frame's loads from now on.
  await frame.evaluate((el) => {
    (el as any).caMark = true;
    (window as any).caLoads = 0;
    el.addEventListener("load", () => (window as any).caLoads++);
  });
  await asked.evaluate((el) => ((el as any).caMark = true));
  // The height the app's bridge gave its frame.
  await expect.poll(() => frame.evaluate((el) => (el as HTMLElement).style.height)).not.toBe("");
  const height = await frame.evaluate((el) => (el as HTMLElement).style.height);

  await host.ask("thanks, and what else can you do?");
  await expect(finished).toHaveCount(before + 1);
  await expect(host.widget.locator(".ca-user")).toHaveCount(2);
  expect(
    await frame.evaluate((el) => [(el as any).caMark, (window as any).caLoads, (el as HTMLElement).style.height]),
  ).toEqual([true, 0, height]);
  expect(await asked.evaluate((el) => (el as any).caMark)).toBe(true);
  await expect(app.locator("#server-time")).toHaveText(time!);
});

// A hostile MCP App of ours (tests/mcp/hostile_app.py, started by
// playwright.config.ts): an order board whose buttons each try something
// a bad app could. Its orders and what its page managed to send out are
// counted by its server (`/count`), never by the page.
const hostileServer = `http://127.0.0.1:${process.env.E2E_HOSTILE_APP_PORT ?? "3219"}/mcp`;
const hostileCounter = `http://127.0.0.1:${process.env.E2E_HOSTILE_COUNTER_PORT ?? "3220"}/count`;

async function counts(
  request: Parameters<typeof taskWorkspace>[0],
): Promise<{ steal: number; orders: string[]; drafts: string[] }> {
  return (await request.get(hostileCounter)).json();
}

async function showBoard(
  page: Page,
  request: Parameters<typeof taskWorkspace>[0],
  baseURL: string,
  user: string,
  options: { appPermissions?: string[]; pageLends?: string; ask?: string } = {},
) {
  // The clock is connected too: another server, whose tools are not the board's.
  const ws = await withClock(request);
  if (options.appPermissions) {
    const patched = await request.patch("/v1/workspace", {
      headers: { authorization: `Bearer ${ws.api_key}` },
      data: { app_permissions: options.appPermissions },
    });
    expect(patched.status()).toBe(200);
  }
  const connected = await request.post("/v1/integrations/mcp/connect", {
    headers: { authorization: `Bearer ${ws.api_key}` },
    // Its annotations are not trusted: the host says which tools only read.
    data: {
      name: "board",
      url: hostileServer,
      verbs: { "show-board": "get", "slow-board": "get", "count-orders": "get", "save-draft": "get" },
    },
  });
  expect(connected.status()).toBe(200);
  const host = new TaskHostPage(page, baseURL);
  await host.goto(ws, user, options.pageLends ? { app_permissions: options.pageLends } : {});
  await host.ask(options.ask ?? "show board please");
  const bridge = host.widget.frameLocator("iframe.ca-app");
  const app = bridge.frameLocator("iframe").frameLocator("iframe");
  const log = app.locator("#log");
  await expect(log).toContainText(options.ask ? "input:" : "shown");
  return { host, bridge, app, log };
}

test("a change an app asks for waits for the visitor's Apply in the assistant's chrome, and runs once", async ({
  page,
  request,
  baseURL,
}) => {
  const { bridge, app, log } = await showBoard(page, request, baseURL!, "board_user");
  const before = (await counts(request)).orders.length;

  // Declined: nothing runs, the app hears so.
  await app.locator("#write").click();
  const ask = bridge.getByRole("alertdialog");
  await expect(ask).toContainText("The app wants to make this change:");
  await expect(ask).toContainText("Place an order");
  await expect(ask).toContainText("dish: Soup");
  await ask.getByRole("button", { name: "Cancel" }).click();
  await expect(log).toContainText("write: error the visitor declined");
  expect((await counts(request)).orders.length).toBe(before);

  // Applied: it runs once, and the app gets the tool's result.
  await app.locator("#write").click();
  await expect(ask).toContainText("dish: Soup");
  expect((await counts(request)).orders.length).toBe(before);
  await ask.getByRole("button", { name: "Apply" }).click();
  await expect(log).toContainText(`write: ok Order ${before + 1} placed: Soup`);
  expect((await counts(request)).orders.length).toBe(before + 1);

  // A delete: confirmed, then applied.
  await app.locator("#delete").click();
  await expect(ask).toContainText("The app wants to delete this:");
  await ask.getByRole("button", { name: "Delete…" }).click();
  await expect(ask).toContainText("This permanently deletes it. Are you sure?");
  await ask.getByRole("button", { name: "Yes, delete permanently" }).click();
  await expect(log).toContainText(`delete: ok ${before + 1} orders cancelled`);
  expect((await counts(request)).orders).toEqual([]);
});

test("an app's change still waiting when the page reloads is asked again, and applies once", async ({
  page,
  request,
  baseURL,
}) => {
  const { host, bridge, app } = await showBoard(page, request, baseURL!, "reload_board_user");
  const before = (await counts(request)).orders.length;
  await app.locator("#write").click();
  await expect(bridge.getByRole("alertdialog")).toContainText("dish: Soup");

  // Reloaded before the visitor answered: the app's request died with the
  // page, the change still waits, and the app's chrome asks again.
  await page.reload();
  await page.locator("button.ca-launcher").click();
  const again = host.widget.frameLocator("iframe.ca-app");
  const ask = again.getByRole("alertdialog");
  await expect(ask).toContainText("The app wants to make this change:");
  await expect(ask).toContainText("dish: Soup");
  expect((await counts(request)).orders.length).toBe(before);
  await ask.getByRole("button", { name: "Apply" }).click();
  await expect(again.getByRole("status")).toHaveText("Done");
  expect((await counts(request)).orders.length).toBe(before + 1);
});

test("a hostile app cannot reach other tools, outgrow the panel, send data out or flood the chat", async ({
  page,
  request,
  baseURL,
}) => {
  const { host, bridge, app, log } = await showBoard(page, request, baseURL!, "hostile_user");

  // Another server's tool, a tool only the model sees, another server's resource.
  await app.locator("#other").click();
  await expect(log).toContainText("other: error this app may not call that tool");
  await app.locator("#hidden").click();
  await expect(log).toContainText("hidden: error this app may not call that tool");
  await app.locator("#read-other").click();
  await expect(log).toContainText("read-other: error");
  await expect(log).not.toContainText("read-other: ok");

  // 100 000 px asked: the frame stops at the panel's bound.
  await app.locator("#tall").click();
  const appFrameOf = bridge.locator("#app iframe");
  await expect(appFrameOf).toHaveAttribute("style", /height: 600px/);
  const box = (await host.widget.locator("iframe.ca-app").boundingBox())!;
  expect(box.height).toBeLessThanOrEqual(620);

  // A fetch to an origin it did not declare: stopped by the sandbox's policy.
  await app.locator("#fetch").click();
  await expect(log).toContainText("fetch: blocked");
  expect((await counts(request)).steal).toBe(0);

  // Twenty messages at once: the visitor is asked about one, the rest refused.
  await app.locator("#flood").click();
  await expect(log).toContainText("flood: 19 refused");
  const ask = bridge.getByRole("alertdialog");
  await expect(ask).toContainText("The app wants to send this message for you:");
  await ask.getByRole("button", { name: "Cancel" }).click();
  await expect(ask).toHaveCount(0);
  // The chat goes on: the visitor's own message is answered.
  const replies = await host.widget.locator(".ca-assistant").count();
  await host.ask("hello there");
  await expect(host.widget.locator(".ca-assistant")).toHaveCount(replies + 1);
  await expect(host.lastReply).toContainText("offline demo model");
  expect((await counts(request)).steal).toBe(0);
});

test("an MCP App gets a browser feature only when the workspace allows it and the page lends it", async ({
  page,
  request,
  baseURL,
}) => {
  // The board asks for the camera and the clipboard.
  let { app, log } = await showBoard(page, request, baseURL!, "features_user");
  await app.locator("#features").click();
  await expect(log).toContainText("features: camera=false microphone=false clipboard-write=false");

  // Allowed by the workspace, lent by the page: it has them; never what it did not ask for.
  ({ app, log } = await showBoard(page, request, baseURL!, "features_user_2", {
    appPermissions: ["camera", "microphone", "clipboard-write"],
    pageLends: "camera; microphone",
  }));
  await app.locator("#features").click();
  await expect(log).toContainText("features: camera=true microphone=false clipboard-write=true");
});

test("an MCP App is shown while its tool runs, and hears when the visitor stops the reply", async ({
  page,
  request,
  baseURL,
}) => {
  // The slow board answers after a minute: its app is there before that, with the tool's input.
  const { host, log } = await showBoard(page, request, baseURL!, "slow_user", { ask: "slow board please" });
  await expect(log).toContainText("input: {}");
  await expect(log).not.toContainText("shown");
  await host.widget.getByRole("button", { name: "Stop" }).click();
  await expect(log).toContainText("cancelled: The user stopped the reply.");
  await expect(log).not.toContainText("shown");
});

test("an MCP App is asked to save its state before a new conversation takes it away", async ({
  page,
  request,
  baseURL,
}) => {
  const { host } = await showBoard(page, request, baseURL!, "teardown_user");
  // The reply is finished (a new conversation waits for that).
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  const before = (await counts(request)).drafts.length;
  await host.widget.getByRole("button", { name: "New conversation" }).click();
  // The new conversation does not wait; the app's frame, aside and hidden,
  // goes only once the app answered ui/resource-teardown, after it saved
  // its draft through the host.
  await expect(host.widget.locator(".ca-msg")).toHaveCount(0);
  await expect(host.widget.locator("iframe.ca-app")).toHaveCount(0);
  expect((await counts(request)).drafts.length).toBe(before + 1);
});

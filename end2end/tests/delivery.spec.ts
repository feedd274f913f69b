import { expect, test, type BrowserContext, type Locator, type Page } from "@playwright/test";
import { TaskHostPage, executes, taskWorkspace } from "./hosts";

// Nothing the visitor does is lost or done twice (issue #34): messages
// written offline wait in order and go once; a send whose answer was cut
// goes again with its key and starts no second turn; a click pressed
// while its part of the screen is redrawn still lands.

/** The user's messages on screen, as written. */
function userTexts(host: TaskHostPage): Promise<string[]> {
  return host.widget.locator(".ca-user :is(.ca-text, .ca-md)").allInnerTexts();
}

/** What the widget keeps for the workspace, wherever this browser lets it
 * (the host page through the loader, or the frame's own storage). */
async function kept(page: Page, id: string): Promise<string> {
  return (await records(page, id)).join("");
}

/** The assistant's replies in the conversation the widget keeps for
 * reading offline (fetched by the widget itself once a reply is done). */
async function keptReplies(page: Page, id: string): Promise<number> {
  for (const record of await records(page, id)) {
    const view = JSON.parse(record).view;
    if (view) {
      return JSON.parse(view).messages.filter((m: { role: string }) => m.role === "assistant").length;
    }
  }
  return 0;
}

/** The widget's records for the workspace: on the host page, in the frame's own storage. */
async function records(page: Page, id: string): Promise<string[]> {
  const host = await page.evaluate((key) => localStorage.getItem(key), `context-assistant:${id}`).catch(() => null);
  const frame = page.frames().find((f) => f.url().includes("/widget?"));
  const own = frame
    ? await frame
        .evaluate((key) => {
          try {
            return localStorage.getItem(key);
          } catch {
            return null;
          }
        }, `ca:${id}`)
        .catch(() => null)
    : null;
  return [host, own].filter((record): record is string => record !== null);
}

/** The conversation as the server keeps it: a fresh page restores it. */
async function restoredTexts(host: TaskHostPage, ws: Parameters<TaskHostPage["goto"]>[0], user: string) {
  await host.goto(ws, user);
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  return userTexts(host);
}

test("offline messages wait in order, survive a reload and go once when the network is back", async ({
  page,
  context,
  request,
  baseURL,
}) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "offline_user");
  await host.ask("hello there");
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  // The widget keeps the conversation as the server shows it once the
  // reply is done (a fetch of its own): kept, reply and all, before the
  // network goes — the reload below shows what was kept.
  await expect.poll(() => keptReplies(page, ws.id)).toBe(1);

  // The train goes into the tunnel: the composer still takes messages.
  await context.setOffline(true);
  await expect(host.widget.locator(".ca-offline")).toContainText("You're offline");
  await host.ask("first while offline");
  await host.ask("second while offline");
  const queued = host.widget.locator(".ca-user", { hasText: "while offline" });
  await expect(queued.locator(".ca-delivery")).toHaveText(["Waiting for the network", "Waiting for the network"]);
  // Kept (the record is written as the screen settles, not at once) before the reload.
  await expect.poll(() => kept(page, ws.id)).toContain("second while offline");

  // A reload while the assistant cannot be reached (the host's own page
  // loads): the conversation as it was kept, marked offline, the queue kept.
  await context.route(`${baseURL}/v1/**`, (route) => route.abort("internetdisconnected"));
  await context.setOffline(false);
  await host.goto(ws, "offline_user");
  await expect(host.widget.locator(".ca-offline")).toContainText("You're offline");
  await expect(host.lastReply).toBeVisible();
  await expect.poll(() => userTexts(host)).toEqual(["hello there", "first while offline", "second while offline"]);
  await expect(host.widget.locator(".ca-delivery").first()).toContainText(/Sending…|Not sent/);

  // Back online: each goes once, in order.
  await context.unroute(`${baseURL}/v1/**`);
  await context.setOffline(true);
  await context.setOffline(false);
  await expect(host.widget.locator(".ca-delivery")).toHaveCount(0, { timeout: 20_000 });
  await expect(host.widget.locator(".ca-assistant .ca-md")).toHaveCount(3);
  await expect(host.widget.locator(".ca-offline")).toHaveCount(0);

  expect(await restoredTexts(host, ws, "offline_user")).toEqual([
    "hello there",
    "first while offline",
    "second while offline",
  ]);
});

test("a send whose answer is cut after the server got it goes again with its key: one turn", async ({
  page,
  context,
  request,
  baseURL,
}) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "cut_user");
  // Playwright stands as the proxy: the first send reaches the server and
  // its whole answer comes back, then the connection is dropped.
  const keys: string[] = [];
  let replayed: string | undefined;
  await context.route(`${baseURL}/v1/chat/turns`, async (route) => {
    keys.push(route.request().headers()["idempotency-key"]);
    const answer = await route.fetch();
    if (keys.length === 1) {
      expect(answer.status()).toBe(200);
      await answer.body();
      return route.abort("connectionreset");
    }
    replayed = answer.headers()["idempotent-replayed"];
    return route.fulfill({ response: answer });
  });

  await host.ask("hello once");
  await expect(host.lastReply.locator(".ca-md")).toBeVisible({ timeout: 15_000 });
  expect(keys).toHaveLength(2);
  expect(keys[0]).toMatch(/^w[0-9a-z]{12,}$/);
  expect(keys[1]).toBe(keys[0]);
  expect(replayed).toBe("true");
  await expect(host.widget.locator(".ca-delivery")).toHaveCount(0);
  await expect(host.widget.locator(".ca-assistant .ca-md")).toHaveCount(1);

  // The server holds one turn: one message, one reply.
  await context.unroute(`${baseURL}/v1/chat/turns`);
  expect(await restoredTexts(host, ws, "cut_user")).toEqual(["hello once"]);
  await expect(host.widget.locator(".ca-assistant")).toHaveCount(1);
});

/**
 * Presses `button`, has the action card redrawn twice (the browser goes
 * offline, and the card says so; then back) and only then releases it.
 */
async function pressWhileRedrawn(page: Page, context: BrowserContext, card: Locator, button: Locator) {
  const box = (await button.boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await context.setOffline(true);
  await expect(card.locator(".ca-action-offline")).toBeVisible();
  await context.setOffline(false);
  await expect(card.locator(".ca-action-offline")).toHaveCount(0);
  await page.mouse.up();
}

test("a click pressed while the action card is redrawn lands, 100 times out of 100", async ({
  page,
  context,
  request,
  baseURL,
}) => {
  test.setTimeout(120_000);
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "redraw_user");
  const before = await executes(request, "create_task", ws);
  await host.ask("create task");
  await expect(host.card).toBeVisible();
  const reason = host.card.getByRole("textbox", { name: "Reason (optional)" });

  for (let i = 0; i < 50; i++) {
    await pressWhileRedrawn(page, context, host.card, host.card.getByRole("button", { name: "Cancel", exact: true }));
    await expect(reason).toBeVisible();
    await pressWhileRedrawn(page, context, host.card, host.card.getByRole("button", { name: "Back" }));
    await expect(reason).toHaveCount(0);
  }
  expect(await executes(request, "create_task", ws)).toBe(before);

  await pressWhileRedrawn(page, context, host.card, host.card.getByRole("button", { name: "Apply" }));
  await expect(host.lastReply).toContainText("Created the task Untitled.");
  expect(await executes(request, "create_task", ws)).toBe(before + 1);
});

test("words written as the chat opens, before its code has loaded, are sent by Enter", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  // The widget's code is held back, as on a slow network: the field the
  // server drew waits for it instead of taking words Enter cannot send.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route("**/*.wasm", async (route) => {
    await held;
    await route.continue();
  });
  await host.load(ws, "pia");
  await page.locator("button.ca-launcher").click();
  await expect(host.input).toBeVisible();
  await expect(host.input).not.toBeEditable();
  const sent = host.input.fill("written at once").then(() => host.input.press("Enter"));
  release();
  await sent;
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  expect(await userTexts(host)).toEqual(["written at once"]);
});

import { expect, test, type APIRequestContext, type BrowserContext, type FrameLocator, type Page } from "@playwright/test";
import { TaskHostPage, taskPage, taskWorkspace, type Workspace } from "./hosts";

// The tests of storage.spec.ts (Chromium's default: the frame's own
// storage refused) and storage-allowed.spec.ts (allowed).
//
// What the widget keeps in the browser, on a host page of another site
// than the assistant (issue #44): where Chromium refuses the frame storage
// of its own (third-party cookies blocked: its default here, incognito),
// the host page keeps it through the loader; where it allows it, the
// frame's own (partitioned by the host's site) does and the host page
// holds nothing. Either way it belongs to one user: the next user of a
// shared device sees nothing of the last one's, and logout() leaves
// nothing behind.

/** Reads with `read`, or says the document was replaced as it read (a
 * widget starting over for a new user reloads its frame): a poll then
 * asks again instead of failing on the navigation. */
async function settled(read: () => Promise<string | null>): Promise<string | null> {
  try {
    return await read();
  } catch (e) {
    if (/Execution context was destroyed|Frame was detached|navigat/i.test(String(e))) return "navigating";
    throw e;
  }
}

/** The widget frame's own record for the workspace, or why it has none. */
async function frameRecord(page: Page, ws: Workspace): Promise<string | null> {
  const frame = page.frames().find((f) => f.url().includes("/widget?"));
  if (!frame) return "no frame";
  return settled(() =>
    frame.evaluate((key) => {
      try {
        return localStorage.getItem(key);
      } catch (e) {
        return `refused: ${(e as Error).name}`;
      }
    }, `ca:${ws.id}`),
  );
}

/** What the loader keeps for the workspace in the host page's own localStorage. */
function hostRecord(page: Page, ws: Workspace): Promise<string | null> {
  return settled(() => page.evaluate((key) => localStorage.getItem(key), `context-assistant:${ws.id}`));
}

/** The record wherever this browser keeps it. */
function record(page: Page, ws: Workspace, mode: Mode): Promise<string | null> {
  return mode === "blocked" ? hostRecord(page, ws) : frameRecord(page, ws);
}

/** The user's messages on screen, as written. */
function userTexts(host: TaskHostPage): Promise<string[]> {
  return host.widget.locator(".ca-user :is(.ca-text, .ca-md)").allInnerTexts();
}

/** Every message `user` sent, as the server keeps them. */
async function sentBy(request: APIRequestContext, ws: Workspace, user: string): Promise<string[]> {
  const auth = { authorization: `Bearer ${ws.api_key}` };
  const list = await (await request.get(`/v1/workspace/conversations?user=${user}`, { headers: auth })).json();
  const texts: string[] = [];
  for (const c of list.items as { id: string }[]) {
    const one = await (await request.get(`/v1/workspace/conversations/${c.id}`, { headers: auth })).json();
    for (const m of one.messages as { role: string; text: string }[]) if (m.role === "user") texts.push(m.text);
  }
  return texts;
}

/** The browser goes offline and the visitor writes `text` in `widget`: it waits, queued. */
async function queueOffline(context: BrowserContext, widget: FrameLocator, text: string) {
  await context.setOffline(true);
  await expect(widget.locator(".ca-offline")).toContainText("You're offline");
  const input = widget.getByRole("textbox", { name: "Message" });
  await input.fill(text);
  await input.press("Enter");
  await expect(widget.locator(".ca-delivery")).toHaveText("Waiting for the network");
}

export type Mode = "blocked" | "allowed";

/** The storage rules' tests, in a browser that refuses or allows the frame storage of its own. */
export function storageTests(mode: Mode) {
  test.describe(`with the frame's own storage ${mode}`, () => {

    test("the queue and the conversation survive a reload, kept where the browser allows", async ({
      page,
      context,
      request,
      baseURL,
    }) => {
      const ws = await taskWorkspace(request);
      const host = new TaskHostPage(page, baseURL!);
      await host.goto(ws, "kim");
      await host.ask("hello there");
      await expect(host.lastReply.locator(".ca-md")).toBeVisible();
      // The widget keeps the conversation as the server shows it once the
      // reply is done (a fetch of its own): kept before the network goes.
      await expect
        .poll(async () => {
          const kept = await record(page, ws, mode);
          const view = kept ? JSON.parse(kept).view : null;
          return view ? JSON.parse(view).messages.map((m: { text: string }) => m.text) : [];
        })
        .toContain("hello there");

      await queueOffline(context, host.widget, "written in the tunnel");

      // Kept in exactly one place, under kim's name.
      await expect.poll(() => record(page, ws, mode)).toContain("written in the tunnel");
      const kept = JSON.parse((await record(page, ws, mode))!);
      expect(kept.sub).toBe("kim");
      expect(JSON.parse(kept.view).messages.map((m: { text: string }) => m.text)).toContain("hello there");
      if (mode === "blocked") {
        expect(await frameRecord(page, ws)).toBe("refused: SecurityError");
      } else {
        expect(await hostRecord(page, ws)).toBeNull();
      }

      // A reload while the assistant cannot be reached: the kept copy, marked offline, and the queue.
      await context.route(`${baseURL}/v1/**`, (route) => route.abort("internetdisconnected"));
      await context.setOffline(false);
      await host.goto(ws, "kim");
      await expect(host.widget.locator(".ca-offline")).toContainText("You're offline");
      await expect.poll(() => userTexts(host)).toEqual(["hello there", "written in the tunnel"]);

      // The network back: the queued message goes once.
      await context.unroute(`${baseURL}/v1/**`);
      await context.setOffline(true);
      await context.setOffline(false);
      await expect(host.widget.locator(".ca-delivery")).toHaveCount(0, { timeout: 20_000 });
      await expect(host.widget.locator(".ca-assistant .ca-md")).toHaveCount(2);
      expect(await sentBy(request, ws, "kim")).toEqual(["hello there", "written in the tunnel"]);
    });

    test("on a shared device the next user sees nothing of the last one's, and their queue is never sent as them", async ({
      page,
      context,
      request,
      baseURL,
    }) => {
      const ws = await taskWorkspace(request);
      const host = new TaskHostPage(page, baseURL!);
      await host.goto(ws, "ann");
      await host.ask("ann's question");
      await expect(host.lastReply.locator(".ca-md")).toBeVisible();
      await queueOffline(context, host.widget, "ann's unsent words");
      await expect.poll(() => record(page, ws, mode)).toContain("ann's unsent words");
      await page.goto("about:blank");
      await context.setOffline(false);

      // Ben signs in on the same browser: nothing of ann's shows, and
      // his own message is the only one sent (the queue goes first).
      await host.goto(ws, "ben");
      await host.ask("ben's question");
      await expect(host.lastReply.locator(".ca-md")).toBeVisible();
      expect(await userTexts(host)).toEqual(["ben's question"]);
      await expect(host.widget.locator("body")).not.toContainText("ann");
      // (Ann's own page may still send hers as her while it closes: the
      // network came back. Never as ben.)
      expect(await sentBy(request, ws, "ben")).toEqual(["ben's question"]);
      await expect.poll(() => record(page, ws, mode)).toContain("ben's question");
      expect(await record(page, ws, mode)).not.toContain("ann");
    });

    test("a fresh token for another user starts the widget over for them, with nothing of the last one's", async ({
      page,
      context,
      request,
      baseURL,
    }) => {
      const ws = await taskWorkspace(request);
      const init = (w: Record<string, unknown>) =>
        `${taskPage}/page-init?${new URLSearchParams({ assistant: baseURL!, widgets: JSON.stringify([{ ws: ws.id, secret: ws.embed_secret, label: "Chat", ...w }]) })}`;
      const widget = page.frameLocator("iframe[title='Chat']");
      const input = widget.getByRole("textbox", { name: "Message" });
      const ask = async (text: string) => {
        await input.fill(text);
        await input.press("Enter");
        await expect(widget.locator(".ca-assistant .ca-md").last()).toBeVisible();
      };
      await page.goto(init({ sub: "quinn" }));
      await page.getByRole("button", { name: "Open Chat" }).click();
      await ask("quinn's question");
      await queueOffline(context, widget, "quinn's unsent words");
      await expect.poll(() => record(page, ws, mode)).toContain("quinn's unsent words");
      await page.goto("about:blank");
      await context.setOffline(false);

      // The page's first token has expired; the fresh one getToken answers is eli's.
      await page.goto(init({ sub: "quinn", expiredFirst: true, then: "eli" }));
      await page.getByRole("button", { name: "Open Chat" }).click();
      await expect.poll(() => record(page, ws, mode)).toContain('"sub":"eli"');
      await expect(input).toHaveAttribute("placeholder", "Type a message…");
      await ask("eli's question");
      expect(await widget.locator(".ca-user :is(.ca-text, .ca-md)").allInnerTexts()).toEqual(["eli's question"]);
      await expect(widget.locator("body")).not.toContainText("quinn");
      expect(await sentBy(request, ws, "eli")).toEqual(["eli's question"]);
      expect(await record(page, ws, mode)).not.toContain("quinn");
    });

    test("logout() ends the session and leaves nothing of the conversation on the device", async ({
      page,
      request,
      baseURL,
    }) => {
      const ws = await taskWorkspace(request);
      const host = new TaskHostPage(page, baseURL!);
      await host.goto(ws, "cai");
      await host.ask("cai's question");
      await expect(host.lastReply.locator(".ca-md")).toBeVisible();
      await expect.poll(() => record(page, ws, mode)).toContain("cai's question");

      const forgotten = page.waitForResponse((r) => r.url().includes("/widget/forget?"));
      await page.evaluate(() => (window as unknown as { ContextAssistant: { logout(): Promise<void> } }).ContextAssistant.logout());
      expect((await forgotten).status()).toBe(200);
      await expect(page.locator("iframe.ca-frame")).toHaveCount(0);
      await expect(page.locator("button.ca-launcher")).toHaveAttribute("aria-expanded", "false");
      expect(await hostRecord(page, ws)).toBeNull();

      // The same user on the same device again: the conversation is not
      // brought back from anything kept (a new message starts a new one).
      await host.goto(ws, "cai");
      await host.ask("after signing out");
      await expect(host.lastReply.locator(".ca-md")).toBeVisible();
      expect(await userTexts(host)).toEqual(["after signing out"]);
      expect(await record(page, ws, mode)).not.toContain("cai's question");
    });
  });
}

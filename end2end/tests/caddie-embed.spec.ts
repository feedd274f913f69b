import { expect, test, type Frame, type Page } from "@playwright/test";
import { hub, logInAtProvider, provision, signInAtIdp } from "./caddie-hub";

// Embed mode (caddie-tool-contract-ct1.md §9): the stub hub's project page
// (fixtures/caddie-hub.mjs, /embedded/{asg}) frames the assistant's
// /embed#lt=… from another origin, sizes the frame from the bus's
// ready/resize (scrolling=no), answers ready with init (and restore when
// asked), and mints a fresh token on relaunch. Users sign in at the real
// OpenID Provider of tests/oidc/op.mjs — from the frame, in a popup.

type BusEvent = { type: string; v: number; event: string; height?: number; path?: string; text?: string };

const busEvents = (page: Page) => page.evaluate(() => (window as unknown as { busEvents: BusEvent[] }).busEvents);
const names = async (page: Page) => (await busEvents(page)).map((e) => e.event);

/** The frame, once it shows the assistant's space. */
async function space(page: Page): Promise<Frame> {
  await expect(page.frameLocator("#tool").getByRole("textbox", { name: "Message" })).toBeVisible();
  const frame = page.frames().find((f) => f.url().includes("/caddie/spaces/"));
  expect(frame, "the frame is on the space").toBeTruthy();
  // Hydrated: the widget has said `ready`, then its title (the assistant's
  // name; the plain pages before it have titles of their own).
  await expect.poll(async () => (await busEvents(page)).some((e) => e.event === "title" && e.text === "Apollo")).toBe(true);
  const seen = await busEvents(page);
  const title = seen.findIndex((e) => e.event === "title" && e.text === "Apollo");
  expect(seen[title - 1]?.event).toBe("ready");
  expect(seen[title - 1]?.height).toBeGreaterThan(100);
  return frame!;
}

const frameHeight = async (page: Page) => Math.round((await page.locator("#tool").boundingBox())!.height);

test("framed at 375 px: sign-in in a popup, no host bar, nothing fixed, one scrollbar that follows the widget", async ({ page, request }) => {
  await page.setViewportSize({ width: 375, height: 667 });
  const asg = await provision(request, ["carol"]);

  await page.goto(`${hub}/embedded/${asg}?as=carol`);

  // No session at the provider: the silent probe failed inside the frame,
  // which asks for a popup instead of showing a password form.
  const tool = page.frameLocator("#tool");
  await expect(tool.getByRole("heading", { name: "Sign in to continue" })).toBeVisible();
  await expect.poll(() => names(page)).toContain("needs-auth");
  const opened = page.waitForEvent("popup");
  await tool.getByRole("button", { name: "Sign in" }).click();
  const popup = await opened;
  // Waited for from before the sign-in: the popup closes itself as soon as it is done.
  const closed = popup.waitForEvent("close");
  await logInAtProvider(popup, "carol");
  await closed;

  const frame = await space(page);
  await expect(tool.locator(".ca-hostbar")).toHaveCount(0);
  await expect(tool.getByRole("link", { name: "Done" })).toHaveCount(0);
  expect(await names(page)).toContain("title");
  const layout = () => frame.evaluate(() => ({
    fixed: [...document.querySelectorAll("*")].filter((e) => getComputedStyle(e).position === "fixed").length,
    scrollWidth: document.documentElement.scrollWidth,
    innerScroll: document.documentElement.scrollHeight - document.documentElement.clientHeight,
    widget: Math.ceil(document.querySelector(".ca-widget")!.getBoundingClientRect().height),
  }));
  // The frame is as tall as the widget, which is at least the hub's viewport (init).
  await expect.poll(async () => (await layout()).widget).toBeGreaterThanOrEqual(667);
  await expect.poll(async () => (await frameHeight(page)) === (await layout()).widget).toBe(true);
  let now = await layout();
  expect(now.fixed).toBe(0);
  expect(now.scrollWidth).toBeLessThanOrEqual(375);

  // A long message makes the widget taller: the frame follows (resize), and
  // the hub page scrolls, never the frame.
  const input = tool.getByRole("textbox", { name: "Message" });
  await input.fill("Tell me about the kick-off. ".repeat(60));
  await input.press("Enter");
  await expect(tool.locator(".ca-assistant .ca-md").last()).toBeVisible();
  await expect.poll(async () => (await busEvents(page)).some((e) => e.event === "resize" && e.height! > 800)).toBe(true);
  await expect.poll(async () => (await frameHeight(page)) === (await layout()).widget).toBe(true);
  now = await layout();
  expect(now.innerScroll).toBeLessThanOrEqual(0);
  expect(now.fixed).toBe(0);
  expect(now.scrollWidth).toBeLessThanOrEqual(375);
  expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeGreaterThan(800);
  await expect.poll(() => names(page)).toContain("status-changed");
  const navigated = (await busEvents(page)).filter((e) => e.event === "navigate").pop();
  expect(navigated?.path).toMatch(/^\/conversations\/[A-Za-z0-9_-]+$/);
  await page.screenshot({ path: "test-results/caddie-embed-375.png", fullPage: true });
});

test("an expired token is relaunched by the hub, and with a provider session the framed sign-in is silent", async ({ page, request }) => {
  const asg = await provision(request, ["dave"]);
  await signInAtIdp(page, "dave");

  await page.goto(`${hub}/embedded/${asg}?as=dave&stale=1`);

  await space(page);
  const seen = await names(page);
  expect(seen).toContain("relaunch");
  expect(seen).not.toContain("needs-auth");
  expect(seen.indexOf("relaunch")).toBeLessThan(seen.lastIndexOf("ready"));
});

test("the hub restores the conversation it was told, and the frame hears only the hub", async ({ page, request }) => {
  const asg = await provision(request, ["erin"]);
  await signInAtIdp(page, "erin");
  await page.goto(`${hub}/embedded/${asg}?as=erin`);
  const frame = await space(page);
  const tool = page.frameLocator("#tool");
  const input = tool.getByRole("textbox", { name: "Message" });
  await input.fill("first question");
  await input.press("Enter");
  await expect(tool.locator(".ca-assistant .ca-md").last()).toBeVisible();
  await expect.poll(async () => (await busEvents(page)).filter((e) => e.event === "navigate").pop()?.path)
    .toMatch(/^\/conversations\//);
  const first = (await busEvents(page)).filter((e) => e.event === "navigate").pop()!.path!;

  await tool.getByRole("button", { name: "New conversation" }).click();
  await expect(tool.locator(".ca-user")).toHaveCount(0);
  await expect.poll(async () => (await busEvents(page)).filter((e) => e.event === "navigate").pop()?.path).toBe("/");

  // A message that is not from the hub's window is ignored: the frame
  // posting to itself (the tool's own origin, not its parent).
  await frame.evaluate(() => window.postMessage({ type: "caddie-embed", v: 1, event: "init", theme: "dark" }, "*"));
  // The hub's own restore, then init, are heard (messages arrive in order).
  await page.evaluate((path) => {
    const frame = document.getElementById("tool") as HTMLIFrameElement;
    frame.contentWindow!.postMessage({ type: "caddie-embed", v: 1, event: "restore", path }, "*");
  }, first);
  await expect(tool.locator(".ca-user")).toHaveText(/first question/);
  expect(await frame.evaluate(() => document.documentElement.getAttribute("data-theme"))).not.toBe("dark");
  await page.evaluate(() => (window as unknown as { sendInit: (t: string) => void }).sendInit("dark"));
  await expect.poll(() => frame.evaluate(() => document.documentElement.getAttribute("data-theme"))).toBe("dark");
});

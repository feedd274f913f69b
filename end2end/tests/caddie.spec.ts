import { expect, test } from "@playwright/test";
import { hub, logInAtProvider, provision, signInAtIdp } from "./caddie-hub";

// Launched from Caddie (caddie-tool-contract-ct1.md): the stub hub of
// fixtures/caddie-hub.mjs provisions a space through the signed API and
// mints launch tokens at /go/{asg}; users sign in at a real OpenID Provider
// (npm oidc-provider, tests/oidc/op.mjs): its login page, its session
// cookie, its prompt=none.

test("a launch from Caddie signs in silently and lands on the assistant with the host bar, at 375 px", async ({ page, request }) => {
  await page.setViewportSize({ width: 375, height: 667 });
  const asg = await provision(request, ["alice"]);
  await signInAtIdp(page, "alice");

  await page.goto(`${hub}/go/${asg}?as=alice`);

  const bar = page.getByRole("navigation", { name: "Caddie" });
  await expect(bar).toHaveText("Part of Apollo on Caddie · ← Back to project");
  await expect(page).toHaveURL(/\/caddie\/spaces\/ws_[0-9a-f]+$/);
  const box = (await bar.boundingBox())!;
  expect(box.height).toBe(40);
  expect(box.width).toBe(375);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  // The launch's context moved out of the address bar into what is kept for alice.
  const kept = await page.evaluate(() =>
    Object.keys(localStorage).filter((k) => k.startsWith("ca:ws_")).map((k) => JSON.parse(localStorage.getItem(k)!)));
  expect(kept).toHaveLength(1);
  expect(kept[0].cctx).toMatch(/^[0-9a-f]{32}$/);
  expect(page.url()).not.toContain("cctx");

  const input = page.getByRole("textbox", { name: "Message" });
  await expect(input).toHaveAttribute("placeholder", "Type a message…");
  await input.fill("hello");
  await input.press("Enter");
  await expect(page.locator(".ca-assistant .ca-md").last()).toBeVisible();
  await page.screenshot({ path: "test-results/caddie-375.png" });

  // A reload keeps the bar (from the stored context) and the conversation.
  await page.reload();
  await expect(bar).toHaveText("Part of Apollo on Caddie · ← Back to project");
  await expect(page.locator(".ca-user")).toHaveText(/hello/);

  await bar.getByRole("link", { name: "← Back to project" }).click();
  await expect(page).toHaveURL(`${hub}/projects/apollo?stage=1`);
  await expect(page.getByRole("heading")).toHaveText("Project apollo");
});

test("without an IdP session the sign-in is interactive, and Done returns to the project", async ({ page, request }) => {
  const asg = await provision(request, ["bob"]);

  await page.goto(`${hub}/go/${asg}?as=bob`);

  await logInAtProvider(page, "bob");
  await expect(page.getByRole("navigation", { name: "Caddie" })).toContainText("Part of Apollo on Caddie");
  await expect(page).toHaveURL(/\/caddie\/spaces\/ws_[0-9a-f]+$/);
  await page.getByRole("link", { name: "Done" }).click();
  await expect(page).toHaveURL(`${hub}/projects/apollo?stage=1`);
});

test("the guided introduction hands in with ?tour=1 and back with ?tour=done", async ({ page, request }) => {
  const asg = await provision(request, ["carol"]);
  await signInAtIdp(page, "carol");

  await page.goto(`${hub}/go/${asg}?as=carol&tour=1`);

  const tour = page.getByRole("region", { name: "Your assistant for this stage" });
  await expect(tour).toBeVisible();
  // Hydrated: the widget has moved cctx out of the address bar.
  await expect(page).toHaveURL(/\/caddie\/spaces\/ws_[0-9a-f]+$/);
  await tour.getByRole("link", { name: "Finish the tour" }).click();
  await expect(page).toHaveURL(`${hub}/projects/apollo?stage=1&tour=done`);
  await expect(page.locator("#tour")).toHaveText("done");
});

test("a used link shows “Link expired” with one button to a fresh one, at 375 px", async ({ page, request }) => {
  const asg = await provision(request, ["dave"]);
  await signInAtIdp(page, "dave");
  await page.goto(`${hub}/go/${asg}?as=dave`);
  await expect(page.getByRole("navigation", { name: "Caddie" })).toBeVisible();

  // Replaying the same launch URL (from history, a log, a forwarded link).
  const used = await page.context().newPage();
  const lt = await request.get(`${hub}/go/${asg}?as=dave`).then((r) => r.text()).then((h) => /launch\?lt=([^"&]+)/.exec(h)![1]);
  await used.goto(`/launch?lt=${lt}`);
  await expect(used.getByRole("heading", { level: 1 })).not.toHaveText("Link expired");
  await used.goto(`/launch?lt=${lt}`);
  await expect(used.getByRole("heading", { level: 1 })).toHaveText("Link expired");
  await expect(used.getByRole("link", { name: "Open again from Caddie" })).toHaveAttribute("href", `${hub}/go/${asg}`);
  await used.setViewportSize({ width: 375, height: 667 });
  expect(await used.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
});

test("a link opened by a different signed-in user names nobody and grants nothing, at 375 px", async ({ page, request }) => {
  await page.setViewportSize({ width: 375, height: 667 });
  const asg = await provision(request, ["erin", "mallory"]);
  await signInAtIdp(page, "mallory");

  await page.goto(`${hub}/go/${asg}?as=erin`);

  await expect(page.getByRole("heading", { level: 1 })).toHaveText("This link was prepared for a different user.");
  await expect(page.locator("body")).not.toContainText("erin");
  await expect(page.getByRole("button", { name: "Switch account" })).toBeVisible();
  await expect(page.getByRole("link", { name: "Back to Caddie" })).toHaveAttribute("href", `${hub}/projects/apollo?stage=1`);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

  // What the widget had kept in this browser for mallory (a space of hers).
  await page.evaluate(() => localStorage.setItem("ca:ws_mallorys", JSON.stringify({ sub: "mallory", conversation: "c_1" })));

  // Switch account: the sign-out is posted from our own page (the server
  // refuses one from another site), then the IdP is asked who it is.
  const askedAgain = page.waitForRequest((r) => r.url().includes("prompt=login"));
  await page.getByRole("button", { name: "Switch account" }).click();
  await askedAgain;

  // The sign-out took everything kept on the assistant's origin with it.
  await page.goto("/health");
  expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([]);
});

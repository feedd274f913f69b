import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { TaskHostPage, taskHost, taskPage } from "./hosts";

// The console (/console): from an empty workspace list to a reply in a host
// page on another origin, in a browser only — keyboard first, axe-clean,
// readable at 375 px.

const ADMIN = "e2e-admin-token-of-at-least-32-characters";

async function axeClean(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).toEqual([]);
}

async function noSideways(page: Page) {
  const wide = await page.evaluate(() => document.scrollingElement!.scrollWidth > window.innerWidth);
  expect(wide).toBe(false);
}

/** Signs in with the keyboard only: Tab to the field, type, Enter. */
async function signIn(page: Page, key: string) {
  await page.goto("/console");
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await page.keyboard.press("Tab");
  await expect(page.getByLabel(/api key/)).toBeFocused();
  await page.keyboard.type(key);
  await page.keyboard.press("Enter");
  await expect(page.getByText("Sign out")).toBeVisible();
}

/** Collects what would show a broken hydration: uncaught errors and panics. */
function watchForBreakage(page: Page): string[] {
  const broken: string[] = [];
  page.on("pageerror", (e) => broken.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && /panicked|hydrat/i.test(m.text())) broken.push(m.text());
  });
  return broken;
}

test("onboarding in the console: a workspace, its tool server, and a reply on the host's own site", async ({ page, baseURL }) => {
  const broken = watchForBreakage(page);
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.setViewportSize({ width: 375, height: 800 });
  await signIn(page, ADMIN);
  await axeClean(page);
  await noSideways(page);

  // The operator creates the workspace; its secrets are shown this once.
  await page.getByLabel("Name").fill("E2E Shop");
  await page.getByLabel(/Allowed origins/).fill(taskPage);
  await page.getByRole("button", { name: "Create" }).click();
  const created = page.getByRole("region", { name: /Workspace “E2E Shop” created/ });
  await expect(created).toBeVisible();
  const codes = await created.locator("dd code").allTextContents();
  const [id, apiKey, embedSecret] = codes;
  expect(id).toMatch(/^ws_/);
  expect(apiKey).toMatch(/^cak_/);
  // The page is hydrated: each secret copies with one click.
  await created.getByRole("button", { name: "Copy the api key" }).click();
  await expect(created.getByText("Copied.")).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(apiKey);
  await axeClean(page);
  await noSideways(page);
  await page.getByRole("button", { name: "Sign out" }).click();

  // The host signs in with the api key and connects the tool server.
  await signIn(page, apiKey);
  await expect(page.getByRole("heading", { name: "Set up your assistant" })).toBeVisible();
  await expect(page.getByLabel(/Allowed origins/)).toHaveValue(taskPage);
  await page.getByLabel(/Base URL/).fill(taskHost);
  await page.getByLabel(/Secret/).fill("wrong-secret");
  await page.getByRole("button", { name: "Check again" }).click();
  const report = page.getByRole("region", { name: "The host checker's report" });
  await expect(report.getByRole("row", { name: /tools\.answer/ })).toContainText("FAIL");
  await expect(page.getByLabel(/Base URL/)).toHaveValue(taskHost);

  await page.getByLabel(/Secret/).fill("e2e-host-secret");
  await page.getByRole("button", { name: "Connect", exact: true }).click();
  await expect(page.getByRole("status")).toHaveText("Connected. The checker's report is below.");
  await expect(report.getByRole("row", { name: /auth\.wrong_secret/ })).toContainText("PASS");
  await expect(page.getByText(/It lists 4 tools: create_task/)).toBeVisible();
  await axeClean(page);
  await noSideways(page);

  // The snippets name this workspace, and copy with one click; the Python one opens with the keyboard.
  await expect(page.locator("pre code").first()).toContainText(`data-workspace="${id}"`);
  await page.getByRole("button", { name: "Copy the snippet" }).first().click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(`data-workspace="${id}"`);
  const python = page.getByText("Python (PyJWT)");
  await python.focus();
  await page.keyboard.press("Enter");
  await expect(page.locator("details[open] pre")).toContainText(`WORKSPACE = "${id}"`);

  // The look: the live preview follows the controls before they are saved…
  const preview = page.frameLocator("iframe.preview");
  await expect(preview.getByRole("textbox", { name: "Message" })).toBeEditable();
  await page.getByLabel("Light or dark").selectOption("dark");
  await page.getByLabel(/Accent colour/).fill("#aa3300");
  await expect(page.getByText("Preview only: “Save the look” gives it to your visitors.")).toBeVisible();
  await expect(preview.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(preview.locator("head style")).toHaveJSProperty("textContent", ":root:root{--ca-accent:#aa3300;}");
  // …and, saved, is the workspace's default, which the host's visitors get.
  await page.getByRole("button", { name: "Save the look" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved.");
  await expect(page.getByLabel(/Accent colour/)).toHaveValue("#aa3300");
  // The live preview: the assistant itself, in the saved look, ready to chat
  // (the page came back at its top: the lazy frame loads once scrolled to).
  await expect(page.getByText(/^Preview only/)).toHaveCount(0);
  await page.locator("iframe.preview").scrollIntoViewIfNeeded();
  await expect(preview.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(preview.getByRole("textbox", { name: "Message" })).toBeEditable();

  // What it did: the audit trail, filtered.
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Audit trail" }).click();
  await expect(page.getByRole("heading", { name: "Audit trail" })).toBeVisible();
  await expect(page.getByRole("table")).toContainText("integration.connected");
  await page.getByLabel(/^Kind/).fill("workspace.updated");
  await page.getByRole("button", { name: "Show" }).click();
  await expect(page.getByRole("table")).not.toContainText("integration.connected");
  await expect(page.getByRole("table")).toContainText("workspace.updated");
  await axeClean(page);
  await noSideways(page);

  // Secrets and data: retention saved; the page is as usable as the others.
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Secrets and data" }).click();
  await page.getByLabel(/Keep conversations for/).fill("90");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved.");
  await expect(page.getByLabel(/Keep conversations for/)).toHaveValue("90");
  await axeClean(page);
  await noSideways(page);

  // On the host's own site, with a token its backend minted: a reply, in the saved look.
  const host = new TaskHostPage(page, baseURL!);
  await host.goto({ id, api_key: apiKey, embed_secret: embedSecret }, "console_visitor");
  await host.ask("hello");
  await expect(host.lastReply).toContainText("“create task”");
  await expect(host.widget.locator("html")).toHaveAttribute("data-theme", "dark");

  // Back in the console, the visitor's conversation, read-only.
  await page.goto("/console/conversations");
  await page.getByLabel("User").fill("console_visitor");
  await page.getByRole("button", { name: "Show" }).click();
  await page.getByRole("table").getByRole("link").first().click();
  await expect(page.locator(".transcript .message.user")).toContainText("hello");
  await expect(page.locator(".transcript .message.assistant")).toContainText("offline demo model");
  await axeClean(page);
  await noSideways(page);

  // Usage per day: the visitor's turn in the charts and in the table.
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Usage" }).click();
  await expect(page.getByRole("heading", { name: "Usage", level: 1 })).toBeVisible();
  await expect(page.getByRole("img", { name: /^Turns per day 1 turns from/ })).toBeVisible();
  const today = new Date().toISOString().slice(0, 10);
  const row = page.getByRole("row", { name: new RegExp(`^${today}`) });
  await expect(row.getByRole("cell").first()).toHaveText("1");
  await expect(page.locator("body[data-hydrated]")).toHaveCount(1);
  await axeClean(page);
  await noSideways(page);
  expect(broken).toEqual([]);
});

test("console pages are never framed and another site's form is refused", async ({ page, request, baseURL }) => {
  const answer = await request.get("/console");
  expect(answer.headers()["x-frame-options"]).toBe("DENY");
  expect(answer.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");

  // A page on another origin frames the console: the browser shows nothing of it.
  await page.goto(`${taskHost}/health`);
  await page.evaluate((src) => new Promise((loaded) => {
    const frame = document.createElement("iframe");
    frame.onload = loaded;
    frame.src = src;
    document.body.append(frame);
  }), `${baseURL}/console`);
  const framed = page.frames().find((f) => f !== page.mainFrame())!;
  expect(await framed.locator("body").innerText()).not.toContain("Sign in");

  // Another site's form posting to the sign-in: refused, no session.
  const forged = await request.post("/console/sign-in", {
    form: { key: ADMIN },
    headers: { "sec-fetch-site": "cross-site" },
    maxRedirects: 0,
  });
  expect(forged.status()).toBe(403);
  expect(forged.headers()["set-cookie"]).toBeUndefined();
});

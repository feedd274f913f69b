import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { TaskHostPage, taskHost, taskWorkspace, type Workspace } from "./hosts";

const ar = JSON.parse(readFileSync(join(__dirname, "../../widget/i18n/ar.json"), "utf8")) as Record<string, string>;

// Knowledge (issue #45): a host's help center (the task host's /help pages
// and sitemap) added as a source; the demo model answers a question from it
// and the reply's sources are drawn under it — in the visitor's language and
// direction, as links that open in a new tab without an opener — and again
// after a reload. The console's Knowledge page adds a sitemap and shows it ready.

async function addSitemap(request: import("@playwright/test").APIRequestContext, ws: Workspace) {
  const auth = { authorization: `Bearer ${ws.api_key}` };
  const added = await request.post("/v1/knowledge/sources", { headers: auth, data: { kind: "sitemap", url: `${taskHost}/help/sitemap.xml` } });
  expect(added.status()).toBe(201);
  const { id } = (await added.json()) as { id: string };
  await expect
    .poll(async () => ((await (await request.get(`/v1/knowledge/sources/${id}`, { headers: auth })).json()) as { status: string }).status, { timeout: 30_000 })
    .toBe("ready");
}

test("a reply's sources are listed under it in Arabic, right to left, open safely and come back after a reload", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  await addSitemap(request, ws);
  const host = new TaskHostPage(page, baseURL!);
  await host.load(ws, "reader", { lang: "ar" });
  await page.locator("button.ca-launcher").click();
  const widget = page.frameLocator(`iframe[title=${JSON.stringify(ar.loader_frame)}]`);
  await expect(widget.locator("html")).toHaveAttribute("dir", "rtl");
  const input = widget.getByRole("textbox", { name: ar.message_label });
  await input.fill("Do you deliver to Brookside?");
  await input.press("Enter");

  const reply = widget.locator(".ca-assistant").last();
  const sources = reply.locator("nav.ca-src");
  await expect(sources).toHaveAttribute("aria-label", "المصادر");
  await expect(sources.locator("p")).toHaveText("المصادر");
  const link = sources.getByRole("link");
  await expect(link).toHaveCount(1);
  await expect(link).toHaveText("Delivery · Where we deliver");
  await expect(link).toHaveAttribute("href", `${taskHost}/help/delivery#area`);
  await expect(link).toHaveAttribute("target", "_blank");
  await expect(link).toHaveAttribute("rel", /noopener/);
  await expect(reply).toContainText("Brookside");
  await expect(reply).toContainText("[1]");
  const direction = await sources.evaluate((el) => getComputedStyle(el).direction);
  expect(direction).toBe("rtl");

  // Opened in a new tab that cannot reach back into the chat.
  const [opened] = await Promise.all([page.context().waitForEvent("page"), link.click()]);
  await opened.waitForLoadState();
  expect(opened.url()).toBe(`${taskHost}/help/delivery#area`);
  expect(await opened.evaluate(() => window.opener)).toBeNull();
  await opened.close();

  // After a reload the conversation comes back with the same sources.
  await page.reload();
  await page.locator("button.ca-launcher").click();
  const again = widget.locator(".ca-assistant").last().locator("nav.ca-src");
  await expect(again.getByRole("link")).toHaveAttribute("href", `${taskHost}/help/delivery#area`);
  await expect(again).toHaveAttribute("aria-label", "المصادر");
});

test("the console's Knowledge page adds a sitemap, shows it ready and searches it", async ({ page, request }) => {
  const ws = await taskWorkspace(request);
  await page.goto("/console");
  await page.getByLabel(/api key/).fill(ws.api_key);
  await page.getByLabel(/api key/).press("Enter");
  await expect(page.getByText("Sign out")).toBeVisible();
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Knowledge" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Knowledge");
  await page.getByLabel("What").selectOption("sitemap");
  await page.getByLabel("Address").fill(`${taskHost}/help/sitemap.xml`);
  await page.getByRole("button", { name: "Add", exact: true }).click();
  await expect(page.getByRole("status").first()).toContainText("Added");
  const source = page.locator("li.source").first();
  await expect(source).toContainText(`${taskHost}/help/sitemap.xml`);
  // The page says where the sync stands; reloaded until it is done.
  await expect
    .poll(async () => {
      await page.reload();
      return page.locator("li.source").first().getAttribute("data-status");
    }, { timeout: 30_000 })
    .toBe("ready");
  await expect(page.locator("li.source .source-status")).toContainText("Ready");
  await expect(page.locator("li.source .source-status")).toContainText("2 pages");

  await page.getByLabel("A visitor's question").fill("Do you deliver to Brookside?");
  await page.getByRole("button", { name: "Search" }).click();
  const results = page.getByRole("list", { name: "What the assistant would read" });
  await expect(results.locator("li").first()).toContainText("Where we deliver");
  await expect(results.locator("li").first()).toContainText("Brookside");
});

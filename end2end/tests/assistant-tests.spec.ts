import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { TaskHostPage, executes, taskWorkspace } from "./hosts";

// Assistant tests in the console (issue #46): a visitor's conversation on
// the host's site is saved as a test from its transcript, run from the
// Tests page (its run page reloads itself until the run ends) and passes,
// its transcript shown with Apply recorded as "would apply" — the host
// executes nothing more; edited to expect what the reply does not say, it
// fails with the failing expectation marked; the two runs side by side.

async function axeClean(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).toEqual([]);
}

test("a conversation saved as a test runs and passes, an edit that expects too much fails, and the two are compared", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "tester");
  await host.ask("create task");
  await expect(host.card).toBeVisible();
  await host.card.getByRole("button", { name: "Apply" }).click();
  await expect(host.lastReply).toContainText("Created the task Untitled.");
  const executed = await executes(request, "create_task", ws);

  await page.goto("/console");
  await page.getByLabel(/api key/).fill(ws.api_key);
  await page.getByLabel(/api key/).press("Enter");
  await expect(page.getByText("Sign out")).toBeVisible();
  await page.goto("/console/conversations");
  await page.getByRole("table").getByRole("link").first().click();
  await expect(page.locator(".transcript .message.user")).toContainText("create task");
  await page.getByRole("button", { name: "Save as test" }).click();

  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Tests");
  await expect(page.getByRole("status").first()).toContainText("Saved from the conversation");
  const editor = page.getByLabel("Suite (YAML or JSON)");
  const saved = await editor.inputValue();
  expect(saved).toContain("user: create task");
  expect(saved).toContain("tool: create_task");
  expect(saved).toContain("apply: true");
  await axeClean(page);
  await page.getByRole("button", { name: "Run", exact: true }).click();

  // The run's page reloads itself until the run ends.
  const status = page.locator(".run-status");
  await expect(status).toHaveAttribute("data-status", "passed", { timeout: 30_000 });
  await expect(status).toContainText("Passed · 1 passed, 0 failed of 1");
  const passed = page.locator("section.case");
  await expect(passed.locator(".mark")).toHaveText("PASS");
  await expect(passed.getByRole("row").filter({ hasText: "Would apply (not made)" })).toContainText("Create the task");
  await axeClean(page);
  expect(await executes(request, "create_task", ws)).toBe(executed);

  // Edited to expect what the reply does not say: it fails, the expectation marked.
  await page.getByRole("button", { name: "Edit and run again" }).click();
  const yaml = await page.getByLabel("Suite (YAML or JSON)").inputValue();
  expect(yaml).toContain("create_task");
  await page.getByLabel("Suite (YAML or JSON)").fill(yaml.replace("- apply: true", "- {apply: true, expect: {reply_contains: shipped to the moon}}"));
  await page.getByRole("button", { name: "Run", exact: true }).click();
  await expect(status).toHaveAttribute("data-status", "failed", { timeout: 30_000 });
  const failed = page.locator("section.case");
  await expect(failed.locator(".mark")).toHaveText("FAIL");
  await expect(failed.getByRole("list", { name: "What failed" })).toContainText('step 2: expected the reply to contain "shipped to the moon"');
  await expect(failed.locator("tr.failed")).toContainText("✗ Failed");

  // The two runs side by side: the case passed, then failed.
  await page.getByRole("link", { name: "All runs" }).click();
  await expect(page.getByRole("table").first().getByRole("row")).toHaveCount(3);
  await page.getByRole("button", { name: "Compare" }).click();
  const row = page.locator("table.comparison tbody tr");
  await expect(row).toHaveClass(/changed/);
  await expect(row.locator("td").first()).toContainText("PASS");
  await expect(row.locator("td").last()).toContainText("FAIL");
  await axeClean(page);
});

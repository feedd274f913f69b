import { expect, test } from "@playwright/test";
import { TaskHostPage, executes, taskWorkspace } from "./hosts";

test("Apply runs a create once and the reply appears in place", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "apply_user");
  const before = await executes(request, "create_task", ws);

  await host.ask("create task");

  await expect(host.card).toBeVisible();
  await expect(host.card).toContainText("Create the task “Untitled” in Apollo");
  await expect(host.card).toBeFocused();
  expect(await executes(request, "create_task", ws)).toBe(before);
  await host.card.getByRole("button", { name: "Apply" }).click();

  await expect(host.lastReply).toContainText("Created the task Untitled.");
  await expect(host.card).toHaveCount(0);
  // The card is gone: focus goes on in the composer, not to the page.
  await expect(host.input).toBeFocused();
  expect(await executes(request, "create_task", ws)).toBe(before + 1);
});

test("Cancel with a reason tells the assistant and runs nothing", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "cancel_user");
  const before = await executes(request, "create_task", ws);

  await host.ask("create task");
  await host.card.getByRole("button", { name: "Cancel" }).click();
  await host.card.getByRole("textbox", { name: "Reason (optional)" }).fill("not today");
  await host.card.getByRole("button", { name: "Cancel the change" }).click();

  await expect(host.lastReply).toContainText("declined");
  await expect(host.card).toHaveCount(0);
  await expect(host.input).toBeFocused();
  expect(await executes(request, "create_task", ws)).toBe(before);
});

test("a delete needs both steps", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "delete_user");
  const before = await executes(request, "delete_project", ws);

  await host.ask("delete project");
  await expect(host.card.getByRole("heading")).toHaveText("Delete this?");
  await host.card.getByRole("button", { name: "Delete…" }).click();

  await expect(host.card.getByRole("heading")).toHaveText("This cannot be undone");
  expect(await executes(request, "delete_project", ws)).toBe(before);
  await page.screenshot({ path: "test-results/delete-confirm.png" });
  await host.card.getByRole("button", { name: "Yes, delete permanently" }).click();

  await expect(host.lastReply).toContainText("Deleted the project Apollo.");
  expect(await executes(request, "delete_project", ws)).toBe(before + 1);
});

test("a reload brings back a pending action, and Apply still works", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "reload_user");
  await host.ask("create task");
  await expect(host.card).toBeVisible();

  await page.reload();
  await host.goto(ws, "reload_user");

  await expect(host.card).toContainText("Create the task “Untitled” in Apollo");
  await host.card.getByRole("button", { name: "Apply" }).click();
  await expect(host.lastReply).toContainText("Created the task Untitled.");
});

test("Stop ends a running turn on the server and says so", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "stop_user");

  await host.ask("slow report");

  await expect(host.widget.locator(".ca-activity")).toHaveText("Running slow report…");
  await host.widget.getByRole("button", { name: "Stop" }).click();

  await expect(host.lastReply).toContainText("Stopped.");
  // Drawn as stopped, and said so once.
  await expect(host.lastReply).toHaveAttribute("data-stopped", "true");
  await expect(host.widget.locator("[aria-live=polite]")).toHaveText("You stopped this reply.");
  await expect(host.widget.getByRole("button", { name: "Send" })).toBeVisible();
  await expect(host.lastReply).not.toContainText("The report is ready.");
});

test("a reply that comes while the chat is closed shows on the launcher until the chat is opened", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "unread_user");
  const launcher = page.locator("button.ca-launcher");
  const badge = launcher.locator("span");
  await expect(badge).toBeHidden();

  await host.ask("slow report");
  await expect(host.widget.locator(".ca-activity")).toHaveText("Running slow report…");
  await launcher.click();
  await expect(launcher).toHaveAttribute("aria-expanded", "false");

  // The reply finishes behind the closed panel: counted, named, said once.
  await expect(launcher).toHaveAttribute("aria-label", "Open chat (1 unread)");
  await expect(badge).toHaveText("1");
  await expect(page.locator("body > [role=status]")).toHaveText("New reply in chat");

  await launcher.click();
  await expect(host.lastReply).toContainText("The report is ready.");
  await expect(launcher).toHaveAttribute("aria-label", "Close chat");
  await expect(badge).toBeHidden();
});

test("a thumbs down with a comment reaches the host, stays pressed after a reload, and can be taken back", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  const feedback = async () => {
    const page = await request.get("/v1/workspace/feedback", { headers: { authorization: `Bearer ${ws.api_key}` } });
    return ((await page.json()) as { items: { rating: string; comment: string | null; user: string }[] }).items;
  };
  await host.goto(ws, "feedback_user");
  await host.ask("project status");
  await expect(host.lastReply.locator(".ca-md")).toBeVisible();
  const down = host.lastReply.getByRole("button", { name: "Bad reply" });
  await expect(down).toHaveAttribute("aria-pressed", "false");

  await down.click();

  await expect(down).toHaveAttribute("aria-pressed", "true");
  await expect(host.widget.locator("[aria-live=polite]")).toHaveText("Thanks for your feedback.");
  const comment = host.lastReply.getByRole("textbox", { name: "Tell us more (optional)" });
  await comment.fill("Not the project I meant");
  await comment.press("Enter");
  await expect(comment).toHaveCount(0);
  await expect.poll(feedback).toEqual([
    expect.objectContaining({ rating: "down", comment: "Not the project I meant", user: "feedback_user" }),
  ]);

  await page.reload();
  await page.locator("button.ca-launcher").click();
  await expect(host.lastReply.getByRole("button", { name: "Bad reply" })).toHaveAttribute("aria-pressed", "true");
  await expect(host.lastReply.getByRole("button", { name: "Good reply" })).toHaveAttribute("aria-pressed", "false");

  await host.lastReply.getByRole("button", { name: "Bad reply" }).click();

  await expect(host.lastReply.getByRole("button", { name: "Bad reply" })).toHaveAttribute("aria-pressed", "false");
  await expect(host.widget.locator("[aria-live=polite]")).toHaveText("Feedback removed.");
  await expect.poll(feedback).toEqual([]);
});

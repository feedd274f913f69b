import { expect, test, type APIRequestContext, type Page } from "@playwright/test";

// A host on another origin (fixtures/task-host.mjs) with a create and a
// delete tool; each test gets its own workspace and user.
const taskHost = `http://127.0.0.1:${process.env.E2E_TASK_HOST_PORT ?? "3211"}`;

interface Workspace { id: string; api_key: string; embed_secret: string }

async function taskWorkspace(request: APIRequestContext): Promise<Workspace> {
  const created = await request.post("/v1/workspaces", {
    headers: { authorization: "Bearer e2e-admin" },
    data: { name: "Task host", allowed_origins: [taskHost] },
  });
  expect(created.status()).toBe(201);
  const ws = (await created.json()) as Workspace;
  const connected = await request.post("/v1/integrations/generic-rest/connect", {
    headers: { authorization: `Bearer ${ws.api_key}` },
    data: { base_url: taskHost, secret: "e2e-host-secret" },
  });
  expect(connected.status()).toBe(200);
  return ws;
}

async function executes(request: APIRequestContext, tool: string): Promise<number> {
  const calls = (await (await request.get(`${taskHost}/_calls`)).json()) as { kind: string; tool: string }[];
  return calls.filter((c) => c.kind === "execute" && c.tool === tool).length;
}

/** The task host's page with the assistant embedded. */
class TaskHostPage {
  constructor(readonly page: Page, readonly baseURL: string) {}

  // The fixture's server mints the token from the secret it is handed here;
  // the page it renders carries only the token.
  async goto(ws: Workspace, user: string) {
    const q = new URLSearchParams({ ws: ws.id, secret: ws.embed_secret, sub: user, assistant: this.baseURL });
    await this.page.goto(`${taskHost}/page?${q}`);
    await this.page.locator("button.ca-launcher").click();
    await expect(this.input).toHaveAttribute("placeholder", "Type a message…");
  }

  get widget() {
    return this.page.frameLocator("iframe[title='Chat assistant']");
  }

  get input() {
    return this.widget.getByRole("textbox", { name: "Message" });
  }

  get card() {
    return this.widget.locator("#ca-action");
  }

  get lastReply() {
    return this.widget.locator(".ca-assistant").last();
  }

  async ask(text: string) {
    await this.input.fill(text);
    await this.input.press("Enter");
  }
}

test("Apply runs a create once and the reply appears in place", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "apply_user");
  const before = await executes(request, "create_task");

  await host.ask("create task");

  await expect(host.card).toBeVisible();
  await expect(host.card).toContainText("Create the task “Untitled” in Apollo");
  await expect(host.card).toBeFocused();
  expect(await executes(request, "create_task")).toBe(before);
  await host.card.getByRole("button", { name: "Apply" }).click();

  await expect(host.lastReply).toContainText("Created the task Untitled.");
  await expect(host.card).toHaveCount(0);
  expect(await executes(request, "create_task")).toBe(before + 1);
});

test("Cancel with a reason tells the assistant and runs nothing", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "cancel_user");
  const before = await executes(request, "create_task");

  await host.ask("create task");
  await host.card.getByRole("button", { name: "Cancel" }).click();
  await host.card.getByRole("textbox", { name: "Reason (optional)" }).fill("not today");
  await host.card.getByRole("button", { name: "Cancel the change" }).click();

  await expect(host.lastReply).toContainText("declined");
  await expect(host.card).toHaveCount(0);
  expect(await executes(request, "create_task")).toBe(before);
});

test("a delete needs both steps", async ({ page, request, baseURL }) => {
  const ws = await taskWorkspace(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "delete_user");
  const before = await executes(request, "delete_project");

  await host.ask("delete project");
  await expect(host.card.getByRole("heading")).toHaveText("Delete this?");
  await host.card.getByRole("button", { name: "Delete…" }).click();

  await expect(host.card.getByRole("heading")).toHaveText("This cannot be undone");
  expect(await executes(request, "delete_project")).toBe(before);
  await page.screenshot({ path: "test-results/delete-confirm.png" });
  await host.card.getByRole("button", { name: "Yes, delete permanently" }).click();

  await expect(host.lastReply).toContainText("Deleted the project Apollo.");
  expect(await executes(request, "delete_project")).toBe(before + 1);
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

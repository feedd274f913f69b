import { expect, type APIRequestContext, type Page } from "@playwright/test";

// A host on another origin (fixtures/task-host.mjs) with a create and a
// delete tool; each test gets its own workspace and user. The assistant
// calls its tools at `taskHost`; its pages are on another site than the
// assistant, as every real host's are (`taskPage`: 127.0.0.2 is not
// 127.0.0.1's site), so the widget's frame is a third-party frame whose
// storage Chromium refuses unless third-party cookies are allowed.
const taskPort = process.env.E2E_TASK_HOST_PORT ?? "3211";
export const taskHost = `http://127.0.0.1:${taskPort}`;
export const taskPage = `http://127.0.0.2:${taskPort}`;

export interface Workspace { id: string; api_key: string; embed_secret: string }

export async function taskWorkspace(request: APIRequestContext, origins: string[] = [taskPage]): Promise<Workspace> {
  const created = await request.post("/v1/workspaces", {
    headers: { authorization: "Bearer e2e-admin-token-of-at-least-32-characters" },
    data: { name: "Task host", allowed_origins: origins },
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

/** How many times the task host executed `tool` for workspace `ws` (its own:
 * tests in other files run beside it and call the same host). */
export async function executes(request: APIRequestContext, tool: string, ws: Workspace): Promise<number> {
  const calls = (await (await request.get(`${taskHost}/_calls`)).json()) as {
    kind: string;
    tool: string;
    workspace?: string;
  }[];
  return calls.filter((c) => c.kind === "execute" && c.tool === tool && c.workspace === ws.id).length;
}

/** The task host's page with the assistant embedded. */
export class TaskHostPage {
  constructor(readonly page: Page, readonly baseURL: string) {}

  // The fixture's server mints the token from the secret it is handed here;
  // the page it renders carries only the token.
  async goto(ws: Workspace, user: string, extra: Record<string, string> = {}) {
    await this.load(ws, user, extra);
    await this.page.locator("button.ca-launcher").click();
    await expect(this.input).toHaveAttribute("placeholder", "Type a message…");
  }

  /** Loads the page without opening the chat. */
  async load(ws: Workspace, user: string, extra: Record<string, string> = {}) {
    const q = new URLSearchParams({ ws: ws.id, secret: ws.embed_secret, sub: user, assistant: this.baseURL, ...extra });
    await this.page.goto(`${taskPage}/page?${q}`);
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

  /** Sends `text` once no reply streams (Send, not Stop): a reply's text
   * shows before its turn's last event, and Enter sends nothing till then. */
  async ask(text: string) {
    await expect(this.widget.locator("button.ca-send")).toBeVisible();
    await this.input.fill(text);
    await this.input.press("Enter");
  }
}


import { expect, test } from "@playwright/test";
import { TaskHostPage, taskWorkspace, type Workspace } from "./hosts";

// A visitor uses tools of an MCP server nobody here wrote (npm's reference
// server-everything, started by playwright.config.ts) beside the task
// host's: a read runs by itself, a change waits for Apply, and a tool's
// question is answered in the widget's own form. The demo model calls the
// first tool whose name (dashes and underscores as spaces) is in the message.
const everything = `http://127.0.0.1:${process.env.E2E_MCP_PORT ?? "3216"}/mcp`;

async function withEverything(request: Parameters<typeof taskWorkspace>[0]): Promise<Workspace> {
  const ws = await taskWorkspace(request);
  const connected = await request.post("/v1/integrations/mcp/connect", {
    headers: { authorization: `Bearer ${ws.api_key}` },
    data: {
      name: "everything",
      url: everything,
      trust_annotations: true,
      verbs: { "trigger-elicitation-request": "get" },
      allowed_tools: ["get-tiny-image", "toggle-simulated-logging", "trigger-elicitation-request"],
    },
  });
  expect(connected.status()).toBe(200);
  const tools = (await connected.json()).tools as { name: string; verb: string }[];
  expect(tools.map((t) => [t.name, t.verb])).toEqual([
    ["get-tiny-image", "get"],
    ["toggle-simulated-logging", "create"],
    ["trigger-elicitation-request", "get"],
  ]);
  return ws;
}

test("a visitor reads through an MCP tool and applies a change", async ({ page, request, baseURL }) => {
  const ws = await withEverything(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "mcp_user");

  await host.ask("get tiny image please");
  // The tool's text reaches the reply; its image is never shown.
  await expect(host.lastReply).toContainText("[image (image/png), not shown]");
  await expect(host.card).toHaveCount(0);

  await host.ask("toggle simulated logging now");
  await expect(host.card).toBeVisible();
  await expect(host.card).toContainText("Toggle Simulated Logging");
  await host.card.getByRole("button", { name: "Apply" }).click();

  await expect(host.lastReply).toContainText("Started simulated, random-leveled logging");
  await expect(host.card).toHaveCount(0);
  await expect(host.input).toBeFocused();
});

test("a tool's question is answered in the widget's own form", async ({ page, request, baseURL }) => {
  const ws = await withEverything(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "elicit_user");

  await host.ask("trigger elicitation request for me");
  const form = host.widget.locator("#ca-elicit");
  await expect(form).toBeVisible();
  await expect(form).toBeFocused();
  await expect(form).toContainText("Please provide inputs for the following fields:");
  // Send with the required name empty: the browser holds it back.
  await form.getByRole("button", { name: "Send" }).click();
  await expect(form).toBeVisible();
  await form.getByRole("textbox", { name: "String", exact: true }).fill("Ada Lovelace");
  await form.getByRole("checkbox", { name: "Boolean" }).check();
  await form.getByRole("combobox", { name: "Legacy Titled Single Select Enum" }).selectOption({ label: "Dogs" });
  await page.screenshot({ path: "test-results/mcp-elicitation.png" });
  await form.getByRole("button", { name: "Send" }).click();

  await expect(form).toHaveCount(0);
  await expect(host.lastReply).toContainText("User provided the requested information");
  await expect(host.lastReply).toContainText("Name: Ada Lovelace");
});

test("a tool's question declined tells the tool so", async ({ page, request, baseURL }) => {
  const ws = await withEverything(request);
  const host = new TaskHostPage(page, baseURL!);
  await host.goto(ws, "decline_user");

  await host.ask("trigger elicitation request again");
  const form = host.widget.locator("#ca-elicit");
  await form.getByRole("button", { name: "Decline" }).click();

  await expect(form).toHaveCount(0);
  await expect(host.lastReply).toContainText("User declined to provide the requested information");
});

import { expect, type APIRequestContext, type Page } from "@playwright/test";

// The stub Caddie hub of fixtures/caddie-hub.mjs and the real OpenID
// Provider (tests/oidc/op.mjs) the Caddie tests sign in at.
export const hub = `http://127.0.0.1:${process.env.E2E_CADDIE_HUB_PORT ?? "3212"}`;

/** Provisions a space for a new assignment through the hub's signed call. */
export async function provision(request: APIRequestContext, participants: string[]): Promise<string> {
  const assignment = `asg-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const answer = await request.post(`${hub}/_provision`, {
    data: { assignment_id: assignment, project_slug: "apollo", project_name: "Apollo", participants },
  });
  expect(answer.status()).toBe(200);
  expect((await answer.json()).status).toBe("ready");
  return assignment;
}

/** Signs in at the provider's own login page. */
export async function logInAtProvider(page: Page, user: string) {
  await page.getByRole("textbox").fill(user);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/**
 * Leaves the browser with a session at the provider and none at the
 * assistant: signs in through the assistant once, then forgets its cookie.
 */
export async function signInAtIdp(page: Page, user: string) {
  await page.goto("/caddie/login?interactive=1&next=/caddie/spaces/none");
  await logInAtProvider(page, user);
  await page.waitForURL(/\/caddie\/spaces\/none$/);
  await page.context().clearCookies({ name: "ca_session" });
}

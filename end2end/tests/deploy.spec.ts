import { expect, test } from "@playwright/test";
import { BistroPage } from "./pages";

// A deployment behind a reverse proxy: the assistant listens on 127.0.0.1
// and the browser reaches it only at its public URL (CA_PUBLIC_URL), a
// different origin. The whole widget flow works there: open, chat, Apply.
// playwright.config.ts starts that assistant and fixtures/proxy.mjs.
const publicURL = `http://localhost:${process.env.E2E_PROXY_PORT ?? "3214"}`;

test("behind a proxy at its public URL the widget opens, chats and applies", async ({ page }) => {
  const bistro = new BistroPage(page);
  await page.goto(`${publicURL}/`);
  await expect(bistro.launcher).toBeVisible();
  await bistro.openChat();

  await bistro.ask("show me the menu");
  await expect(bistro.menu).toBeVisible();
  // The reply is finished (the composer takes a new message only then).
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  await expect(bistro.cards.first().getByRole("link")).toHaveAttribute("href", new RegExp(`^${publicURL}/bistro/menu#`));

  await bistro.ask("add two margheritas (no basil)");
  await expect(bistro.actionCard).toContainText("Add 2 × Stone-baked Margherita (no basil) to your order — $28");
  await bistro.actionCard.getByRole("button", { name: "Apply" }).click();
  await expect(bistro.lastReply).toContainText("Cart subtotal: $28");
  await expect(bistro.count("Stone-baked Margherita")).toHaveText("2");
});

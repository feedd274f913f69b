import AxeBuilder from "@axe-core/playwright";
import { expect, test } from "@playwright/test";
import { BistroPage } from "./pages";

// Acme Bistro end to end: the menu-and-cart component, orders by language
// and by buttons, checkout through the assistant, the pay page.

const PIZZA = "Stone-baked Margherita";
const TART = "Lemon Tart";
const WATER = "Sparkling Water";

async function openMenu(page: import("@playwright/test").Page): Promise<BistroPage> {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  await bistro.ask("show me the menu");
  await expect(bistro.menu).toBeVisible();
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("Here is the menu");
  return bistro;
}

test("an order by language: each add waits for Apply and the menu follows", async ({ page }) => {
  const bistro = await openMenu(page);
  await expect(bistro.menu.locator(".ca-mc-kind")).toHaveText(["Mains", "Starters", "Desserts", "Drinks"]);

  await bistro.ask("add two margheritas (no basil)");

  await expect(bistro.actionCard).toContainText(`Add 2 × ${PIZZA} (no basil) to your order — $28`);
  await expect(bistro.count(PIZZA)).toHaveText("0");
  await bistro.actionCard.getByRole("button", { name: "Apply" }).click();
  await expect(bistro.lastReply).toContainText("Cart subtotal: $28");
  await expect(bistro.count(PIZZA)).toHaveText("2");
  await expect(bistro.menuRow(PIZZA).getByRole("textbox")).toHaveValue("no basil");

  await bistro.ask("add a lemon tart");
  await expect(bistro.actionCard).toContainText(`Add 1 × ${TART}`);
  await bistro.actionCard.getByRole("button", { name: "Apply" }).click();

  await expect(bistro.lastReply).toContainText("Cart subtotal: $36");
  await expect(bistro.total).toHaveText("$36");
  await expect(bistro.widget.locator(".ca-menu-cart")).toHaveCount(1);
});

test("an order by buttons updates in place, keeps notes, and the assistant sees it", async ({ page }) => {
  const bistro = await openMenu(page);
  await expect(bistro.menu.getByRole("button", { name: `Remove one ${PIZZA}` })).toBeDisabled();
  await expect(bistro.menu.getByRole("button", { name: "Checkout" })).toBeDisabled();

  await bistro.add(PIZZA, 2);
  await bistro.add(TART);
  await expect(bistro.total).toHaveText("$36");
  await bistro.menu.getByRole("button", { name: `Remove one ${PIZZA}` }).click();
  await expect(bistro.count(PIZZA)).toHaveText("1");
  await expect(bistro.total).toHaveText("$22");
  await expect(bistro.menu).toContainText("shown for your information");
  const note = bistro.menuRow(TART).getByRole("textbox", { name: `Note for the ${TART}` });
  await note.fill("no cream");
  await note.press("Tab");
  await expect(bistro.menu.locator(".ca-mc-error")).toHaveCount(0);

  await bistro.ask("what's in my cart?");
  await expect(bistro.lastReply.locator(".ca-md")).toContainText(`1 × ${PIZZA} — $14`);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText(`1 × ${TART} (no cream) — $8`);

  const results = await new AxeBuilder({ page }).include("iframe.ca-frame").analyze();
  const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).toEqual([]);

  await page.reload();
  await bistro.openChat();
  await expect(bistro.count(PIZZA)).toHaveText("1");
  await expect(bistro.count(TART)).toHaveText("1");
  await expect(bistro.menuRow(TART).getByRole("textbox")).toHaveValue("no cream");
  await page.screenshot({ path: "test-results/bistro-menu-cart.png" });
});

test("Checkout goes through Apply and the link opens the pay page with the right total", async ({ page }) => {
  const bistro = await openMenu(page);
  await bistro.add(PIZZA, 2);
  // By keyboard: focus stays on the + across the redraw, so Enter can add again.
  const plus = bistro.menu.getByRole("button", { name: `Add one ${WATER}` });
  await plus.focus();
  await page.keyboard.press("Enter");
  await expect(bistro.count(WATER)).toHaveText("1");
  await expect(plus).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(bistro.count(WATER)).toHaveText("2");
  await bistro.menu.getByRole("button", { name: `Remove one ${WATER}` }).click();
  await expect(bistro.total).toHaveText("$32");

  await bistro.menu.getByRole("button", { name: "Checkout" }).click();

  await expect(bistro.widget.locator(".ca-user").last()).toHaveText(/Check out my order/);
  await expect(bistro.actionCard).toContainText(`Check out 2 × ${PIZZA}, 1 × ${WATER} — total $32`);
  await bistro.actionCard.getByRole("button", { name: "Apply" }).click();
  const link = bistro.widget.getByRole("link", { name: "Pay $32 for your Acme Bistro order" });
  await expect(link).toHaveAttribute("target", "_blank");
  const [pay] = await Promise.all([page.context().waitForEvent("page"), link.click()]);
  await pay.waitForLoadState();

  await expect(pay.getByRole("heading", { level: 1 })).toHaveText("Your order");
  await expect(pay.locator("[data-total]")).toHaveAttribute("data-total", "32");
  await expect(pay.locator(".order")).toContainText(`2 × ${PIZZA}`);
  await expect(pay.getByText("nothing is charged")).toBeVisible();
});

test("a tampered checkout link lands on “cart expired — start again”", async ({ page }) => {
  const bistro = await openMenu(page);
  await bistro.add(TART);
  await bistro.ask("check out");
  await bistro.actionCard.getByRole("button", { name: "Apply" }).click();
  const link = bistro.widget.getByRole("link", { name: "Pay $8 for your Acme Bistro order" });
  const href = (await link.getAttribute("href"))!;
  expect(href).toContain("total=8");

  for (const tampered of [href.replace("total=8", "total=1"), href.replace("lemon_tartx1", "lemon_tartx9"),
    href.replace(/sig=([0-9a-f])/, (_, c) => `sig=${c === "0" ? "1" : "0"}`)]) {
    expect(tampered).not.toBe(href);
    await page.goto(tampered);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Cart expired — start again");
    await expect(page.locator("[data-total]")).toHaveCount(0);
  }
  await page.goto(href);
  await expect(page.locator("[data-total]")).toHaveAttribute("data-total", "8");
});

test("clearing the cart needs both confirmations", async ({ page }) => {
  const bistro = await openMenu(page);
  await bistro.add(PIZZA);

  await bistro.ask("clear my cart");
  await expect(bistro.actionCard.getByRole("heading")).toHaveText("Delete this?");
  await bistro.actionCard.getByRole("button", { name: "Delete…" }).click();
  await expect(bistro.actionCard.getByRole("heading")).toHaveText("This cannot be undone");
  await expect(bistro.count(PIZZA)).toHaveText("1");
  await bistro.actionCard.getByRole("button", { name: "Yes, delete permanently" }).click();

  await expect(bistro.count(PIZZA)).toHaveText("0");
  await expect(bistro.total).toHaveText("$0");
  await expect(bistro.actionCard).toHaveCount(0);
});

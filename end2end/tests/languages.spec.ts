import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test, type FrameLocator, type Page } from "@playwright/test";

// The widget in the visitor's language (issue #19): the host's choice
// (data-lang) or the browser's, every word from the catalogues
// (widget/i18n), right to left in Arabic, prices through the browser's
// Intl; the workspace's start screen; the accessibility tree of the chat,
// an action card and the MenuCart in English and Arabic.

type Words = Record<string, string>;
const catalogue = (lang: string): Words =>
  JSON.parse(readFileSync(join(__dirname, `../../widget/i18n/${lang}.json`), "utf8")) as Words;
const fill = (template: string, value: string) => template.replace(/\{[a-z]+\}/, value);
/** A YAML string for an aria snapshot. */
const q = (text: string) => JSON.stringify(text);

const PIZZA = "Stone-baked Margherita";

/** Opens the demo's chat as a visitor of `lang` and waits until it is connected. */
async function openChat(page: Page, lang: string, w: Words): Promise<FrameLocator> {
  await page.goto(lang === "en" ? "/" : `/?lang=${lang}`);
  const launcher = page.locator("button.ca-launcher");
  await expect(launcher).toHaveAttribute("aria-label", fill(w.loader_open, w.loader_label));
  await launcher.click();
  const widget = page.frameLocator(`iframe[title=${q(w.loader_frame)}]`);
  await expect(widget.getByRole("textbox", { name: w.message_label })).toHaveAttribute("placeholder", w.placeholder);
  return widget;
}

async function ask(widget: FrameLocator, w: Words, text: string) {
  const input = widget.getByRole("textbox", { name: w.message_label });
  await input.fill(text);
  await input.press("Enter");
}

/** A whole-dollar price as the visitor's browser writes it in `lang`. */
async function price(page: Page, lang: string, amount: number): Promise<string> {
  return page.evaluate(
    ([l, n]) => new Intl.NumberFormat(l as string, { style: "currency", currency: "USD", minimumFractionDigits: 0,
      maximumFractionDigits: 0 }).format(n as number),
    [lang, amount],
  );
}

for (const lang of ["en", "ar"]) {
  test(`in ${lang} the chat, an action card and the MenuCart read as one language to assistive technology`, async ({ page }) => {
    const w = catalogue(lang);
    const widget = await openChat(page, lang, w);
    await expect(widget.locator("html")).toHaveAttribute("lang", lang);
    await expect(widget.locator("html")).toHaveAttribute("dir", lang === "ar" ? "rtl" : "ltr");

    await expect(widget.locator(".ca-widget")).toMatchAriaSnapshot(`
      - banner:
        - heading "Acme Bistro" [level=1]
        - button ${q(w.history)}
        - button ${q(w.new_conversation)}
        - button ${q(w.close_chat)}
      - log ${q(w.conversation)}
      - textbox ${q(w.message_label)}
      - button ${q(w.send)}
    `);

    await ask(widget, w, "show me the menu");
    const menu = widget.locator(".ca-menu-cart").last();
    const fourteen = await price(page, lang, 14);
    await expect(menu.locator(".ca-mc-price").first()).toHaveText(fourteen);
    await expect(menu).toMatchAriaSnapshot(`
      - region ${q(w.menu_cart)}:
        - heading "Mains" [level=3]
        - list:
          - listitem:
            - text: ${q(`${PIZZA} ${fourteen}`)}
            - group ${q(fill(w.quantity_of, PIZZA))}:
              - button ${q(fill(w.remove_one, PIZZA))} [disabled]
              - text: "0"
              - button ${q(fill(w.add_one, PIZZA))}
        - button ${q(w.checkout)} [disabled]
    `);
    await menu.getByRole("button", { name: fill(w.add_one, PIZZA) }).click();
    await expect(menu.locator(".ca-mc-sum")).toHaveText(fourteen);
    await expect(menu.getByRole("textbox", { name: fill(w.note_for, PIZZA) })).toHaveAttribute("placeholder", w.note_placeholder);

    await ask(widget, w, "add a lemon tart");
    const card = widget.locator("#ca-action");
    await expect(card).toBeFocused();
    await expect(card).toMatchAriaSnapshot(`
      - group ${q(w.action_apply_question)}:
        - heading ${q(w.action_apply_question)} [level=2]
        - paragraph: /Lemon Tart/
        - button ${q(w.apply)}
        - button ${q(w.cancel)}
    `);
    await card.getByRole("button", { name: w.apply }).click();
    await expect(menu.locator(".ca-mc-sum")).toHaveText(await price(page, lang, 22));
    await expect(widget.getByRole("textbox", { name: w.message_label })).toBeFocused();
  });
}

test("in Arabic everything mirrors: the launcher, the panel and the bubbles sit from the right edge's mirror", async ({ page }) => {
  const w = catalogue("ar");
  const widget = await openChat(page, "ar", w);
  const launcher = await page.locator("button.ca-launcher").boundingBox();
  const frame = await page.locator("iframe.ca-frame").boundingBox();
  expect(launcher!.x).toBeLessThan(100);
  expect(frame!.x).toBeLessThan(100);

  await ask(widget, w, "hello");
  const log = await widget.locator(".ca-log").boundingBox();
  const user = await widget.locator(".ca-user").boundingBox();
  await expect(widget.locator(".ca-assistant .ca-md")).toBeVisible();
  const reply = await widget.locator(".ca-assistant").boundingBox();
  // Right to left: the user's bubble ends at the left edge, the assistant's starts at the right.
  expect(user!.x - log!.x).toBeLessThan(20);
  expect(log!.x + log!.width - (reply!.x + reply!.width)).toBeLessThan(20);
  const direction = await widget.locator(".ca-composer").evaluate((el) => getComputedStyle(el).direction);
  expect(direction).toBe("rtl");
});

test.describe("a visitor whose browser reads Spanish", () => {
  test.use({ locale: "es-ES" });

  test("gets the launcher and the widget in Spanish without the host saying so, and the neutral greeting", async ({ page }) => {
    const w = catalogue("es");
    const widget = await openChat(page, "en", w);
    await expect(widget.locator("html")).toHaveAttribute("lang", "es");
    // The demo's start screen is English only: a Spanish visitor gets the neutral one in Spanish.
    await expect(widget.locator(".ca-empty")).toHaveText(w.greeting);
    await expect(widget.locator(".ca-prompt")).toHaveCount(0);
  });
});

test("the workspace's greeting and prompts start the chat, and the reply is said once it is whole", async ({ page }) => {
  const w = catalogue("en");
  const widget = await openChat(page, "en", w);
  await expect(widget.locator(".ca-empty")).toHaveText(
    "Hi! I'm the Acme Bistro's assistant: ask me about the menu or your order.");
  const prompts = widget.getByRole("list", { name: w.suggestions }).getByRole("button");
  await expect(prompts).toHaveText(["Show me the menu", "What's in my cart?", "Add two margheritas (no basil)", "Check out"]);

  await prompts.first().click();

  await expect(widget.locator(".ca-user")).toHaveText(/Show me the menu/);
  await expect(widget.locator(".ca-menu-cart")).toBeVisible();
  await expect(widget.locator(".ca-start")).toBeHidden();
  // Not every token: the finished reply, once, as it reads (not its markdown).
  const said = widget.locator("[aria-live=polite]");
  await expect(said).toContainText("Here is the menu");
  const words = (text: string) => text.replace(/\s+/g, " ").trim();
  const reply = words(await widget.locator(".ca-assistant .ca-md").last().innerText());
  expect(words((await said.textContent()) ?? "")).toBe(reply);
});

test("a refused message is explained in the visitor's language, never in the API's English", async ({ page }) => {
  const w = catalogue("de");
  const widget = await openChat(page, "de", w);
  // The API's refusals carry English text for developers; the chat says its own words.
  const refusals = [
    { status: 409, code: "turn_in_progress", error: "A reply is still being written in this conversation. Wait for it, or stop it.", says: w.turn_in_progress },
    { status: 500, code: "internal", error: "internal error", says: w.went_wrong },
  ];
  let posts = 0;
  await page.route("**/v1/chat/turns", async (route) => {
    const refusal = refusals[posts++];
    if (!refusal) return route.continue();
    await route.fulfill({
      status: refusal.status,
      contentType: "application/json",
      body: JSON.stringify({ error: refusal.error, code: refusal.code }),
    });
  });

  await ask(widget, w, "show me the menu");
  const alert = widget.getByRole("alert");
  for (const refusal of refusals) {
    await expect(alert).toHaveText(new RegExp(`^${refusal.says.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
    await expect(alert).not.toContainText(refusal.error);
    await alert.getByRole("button", { name: w.retry }).click();
  }
  await expect(widget.locator(".ca-assistant").last()).toContainText(PIZZA);
  await expect(widget.getByRole("alert")).toHaveCount(0);
});

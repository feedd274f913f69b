import { expect, type FrameLocator, type Locator, type Page } from "@playwright/test";

/** The Acme Bistro demo page with the embedded assistant. */
export class BistroPage {
  readonly launcher: Locator;
  readonly widget: FrameLocator;

  constructor(readonly page: Page) {
    this.launcher = page.locator("button.ca-launcher");
    this.widget = page.frameLocator("iframe[title='Chat assistant']");
  }

  async goto() {
    await this.page.goto("/");
    await expect(this.launcher).toBeVisible();
  }

  /** Opens the chat and waits until the widget is hydrated and holds a token. */
  async openChat() {
    await this.launcher.click();
    await expect(this.input).toHaveAttribute("placeholder", "Type a message…");
  }

  get input(): Locator {
    return this.widget.getByRole("textbox", { name: "Message" });
  }

  get cards(): Locator {
    return this.widget.locator(".ca-card");
  }

  get lastReply(): Locator {
    return this.widget.locator(".ca-assistant").last();
  }

  /** Sends `text` once no reply streams (Send, not Stop): a reply's text
   * shows before its turn's last event, and Enter sends nothing till then. */
  async ask(text: string) {
    await expect(this.widget.locator("button.ca-send")).toBeVisible();
    await this.input.fill(text);
    await this.input.press("Enter");
  }

  /** The pending action's card. */
  get actionCard(): Locator {
    return this.widget.locator("#ca-action");
  }

  /** The newest menu-and-cart component. */
  get menu(): Locator {
    return this.widget.locator(".ca-menu-cart").last();
  }

  menuRow(dish: string): Locator {
    return this.menu.locator(".ca-mc-item", { hasText: dish });
  }

  count(dish: string): Locator {
    return this.menuRow(dish).locator(".ca-mc-count");
  }

  async add(dish: string, times = 1) {
    for (let i = 0; i < times; i++) {
      const before = Number(await this.count(dish).textContent());
      await this.menu.getByRole("button", { name: `Add one ${dish}` }).click();
      await expect(this.count(dish)).toHaveText(String(before + 1));
    }
  }

  get total(): Locator {
    return this.menu.locator(".ca-mc-sum");
  }
}

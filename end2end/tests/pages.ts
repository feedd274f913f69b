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

  async ask(text: string) {
    await this.input.fill(text);
    await this.input.press("Enter");
  }
}

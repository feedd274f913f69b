import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test, type Frame, type FrameLocator, type Page } from "@playwright/test";
import { BistroPage } from "./pages";

// Attachments in the widget (issue #32): a visitor attaches a photo by
// the paperclip, by dropping it on the panel or by pasting it; each file
// is a chip (thumbnail or icon, name, size, progress, remove); Send waits
// for uploads; a refused file says why in the visitor's language and the
// typed text stays; sent files are in the message and after a reload; an
// image opens larger and Escape closes it; at 375 px, right to left and
// by keyboard alone. The e2e assistant takes files up to 1.5 MB and
// 2 MB a day per visitor (playwright.config.ts).

type Words = Record<string, string>;
const catalogue = (lang: string): Words =>
  JSON.parse(readFileSync(join(__dirname, `../../widget/i18n/${lang}.json`), "utf8")) as Words;

const CRC = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes: Buffer) => {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
/** A one-pixel PNG; `side` rewrites the size its header claims. */
function png(side = 1): Buffer {
  const image = Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    "base64",
  );
  image.writeUInt32BE(side, 16);
  image.writeUInt32BE(side, 20);
  image.writeUInt32BE(crc32(image.subarray(12, 29)), 29);
  return image;
}
const photo = (name: string) => ({ name, mimeType: "image/png", buffer: png() });

/** The widget's frame, to hand it files as a drop or a paste would. */
function frameOf(page: Page): Frame {
  const frame = page.frames().find((f) => new URL(f.url()).pathname === "/widget");
  if (!frame) throw new Error("no widget frame");
  return frame;
}

/** Drops (`drop`) or pastes (`paste`) a PNG named `name` in the widget. */
async function hand(page: Page, how: "drop" | "paste", name: string) {
  await frameOf(page).evaluate(
    ([how, name, bytes]) => {
      const files = new DataTransfer();
      files.items.add(new File([new Uint8Array(bytes as number[])], name as string, { type: "image/png" }));
      if (how === "paste") {
        const field = document.getElementById("ca-input")!;
        field.dispatchEvent(new ClipboardEvent("paste", { clipboardData: files, bubbles: true, cancelable: true }));
        return;
      }
      const log = document.querySelector(".ca-log")!;
      log.dispatchEvent(new DragEvent("dragover", { dataTransfer: files, bubbles: true, cancelable: true }));
      (window as unknown as { outlined: boolean }).outlined = document.documentElement.classList.contains("ca-drop");
      log.dispatchEvent(new DragEvent("drop", { dataTransfer: files, bubbles: true, cancelable: true }));
    },
    [how, name, [...png()]] as const,
  );
}

/** The visitor's messages' files as shown: names of images and of downloads. */
async function sentFiles(widget: FrameLocator): Promise<string[]> {
  return widget.locator(".ca-user .ca-atts :is(img, a)").evaluateAll((els) =>
    els.map((e) => (e instanceof HTMLImageElement ? e.alt : (e.getAttribute("download") ?? ""))),
  );
}

test("attach by button: a chip with its thumbnail, name, size and progress; Send waits for the upload; the photo is in the message and after a reload, and opens larger", async ({
  page,
  context,
}) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  const widget = bistro.widget;

  // The upload is held on its way (Playwright as the network) until released.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await context.route("**/v1/attachments", async (route) => {
    await held;
    await route.continue();
  });
  await widget.locator("input.ca-file").setInputFiles(photo("margherita.png"));
  const chip = widget.locator(".ca-chip");
  await expect(chip).toHaveCount(1);
  await expect(chip.locator(".ca-chip-name")).toHaveText("margherita.png");
  await expect(chip.locator(".ca-chip-size")).toHaveText("1 kB");
  await expect(chip.locator("img.ca-chip-thumb")).toHaveAttribute("src", /^blob:/);
  await expect(chip).toHaveAttribute("data-state", "uploading");
  await expect(chip).toHaveAttribute("aria-busy", "true");
  await expect(chip.getByRole("progressbar", { name: "Uploading margherita.png" })).toBeVisible();

  // Send while it uploads: nothing goes yet, the visitor is told why.
  await bistro.ask("what dish is this?");
  await expect(widget.locator(".ca-composer [aria-live]")).toHaveText("Sending once the files are uploaded");
  await expect(widget.locator(".ca-user")).toHaveCount(0);
  await expect(bistro.input).toHaveValue("what dish is this?");
  await page.screenshot({ path: "test-results/attachments-uploading.png" });

  // The upload arrives: the message goes by itself, with its photo.
  release();
  await expect(widget.locator(".ca-user :is(.ca-text, .ca-md > p)")).toHaveText("what dish is this?");
  await expect(chip).toHaveCount(0);
  await expect(bistro.input).toHaveValue("");
  expect(await sentFiles(widget)).toEqual(["margherita.png"]);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("that looks like our margherita");
  await page.screenshot({ path: "test-results/attachments-sent.png" });
  await context.unroute("**/v1/attachments");

  // A reload: the conversation comes back with the photo, read by its link.
  await bistro.goto();
  await bistro.openChat();
  const thumbnail = widget.locator(".ca-user .ca-att-img img");
  await expect(thumbnail).toHaveAttribute("alt", "margherita.png");
  await expect(thumbnail).toHaveAttribute("src", /\/v1\/attachments\/att_[^/]+\/content\?exp=\d+&sig=[0-9a-f]+$/);
  await expect.poll(() => thumbnail.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(1);

  // It opens larger inside the panel; Escape closes it and focus comes back.
  const open = widget.getByRole("button", { name: "Open margherita.png larger" });
  await open.click();
  const dialog = widget.getByRole("dialog", { name: "margherita.png" });
  await expect(dialog.locator("img")).toHaveAttribute("alt", "margherita.png");
  await expect(dialog.getByRole("button", { name: "Close" })).toBeFocused();
  await page.screenshot({ path: "test-results/attachments-larger.png" });
  await page.keyboard.press("Escape");
  await expect(dialog).toHaveCount(0);
  await expect(open).toBeFocused();
  // The chat is still open: Escape closed only the image.
  await expect(bistro.input).toBeVisible();
});

test("attach by drop and by paste; remove takes a file out before it is sent", async ({ page }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  const widget = bistro.widget;

  await hand(page, "drop", "dropped-margherita.png");
  // The panel was outlined while the file was over it, and is no longer.
  expect(await frameOf(page).evaluate(() => (window as unknown as { outlined: boolean }).outlined)).toBe(true);
  await expect(widget.locator("html.ca-drop")).toHaveCount(0);
  await hand(page, "paste", "image.png");
  const chips = widget.locator(".ca-chip");
  await expect(chips.locator(".ca-chip-name")).toHaveText(["dropped-margherita.png", "image.png"]);
  await expect(chips.nth(0)).toHaveAttribute("data-state", "done");
  await expect(chips.nth(1)).toHaveAttribute("data-state", "done");

  // Removed before it was sent: deleted on the server too.
  const deleted = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes("/v1/attachments/"));
  await widget.getByRole("button", { name: "Remove dropped-margherita.png" }).click();
  expect((await deleted).status()).toBe(204);
  await expect(chips.locator(".ca-chip-name")).toHaveText(["image.png"]);
  // Focus moves on to what is left, not lost with the removed chip.
  await expect(widget.getByRole("button", { name: "Remove image.png" })).toBeFocused();

  // A photo may go without a word.
  await bistro.input.focus();
  await bistro.input.press("Enter");
  await expect(widget.locator(".ca-user")).toHaveCount(1);
  expect(await sentFiles(widget)).toEqual(["image.png"]);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("names no dish of ours");

  // Asked again, the photo goes again; after a reload too.
  await bistro.lastReply.getByRole("button", { name: "Ask again" }).click();
  await expect(widget.locator(".ca-assistant .ca-md")).toHaveCount(2);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("names no dish of ours");
  expect(await sentFiles(widget)).toEqual(["image.png", "image.png"]);
  await bistro.goto();
  await bistro.openChat();
  await expect(widget.locator(".ca-assistant .ca-md")).toHaveCount(2);
  await bistro.lastReply.getByRole("button", { name: "Ask again" }).click();
  await expect(widget.locator(".ca-assistant .ca-md")).toHaveCount(3);
  await expect(bistro.lastReply.locator(".ca-md")).toContainText("names no dish of ours");
  await expect.poll(() => sentFiles(widget)).toEqual(["image.png", "image.png", "image.png"]);
});

test("a file removed while the network is down is deleted on the server once it is back", async ({ page, context }) => {
  const bistro = new BistroPage(page);
  await bistro.goto();
  await bistro.openChat();
  const widget = bistro.widget;
  await hand(page, "drop", "second-thoughts.png");
  const chip = widget.locator(".ca-chip");
  await expect(chip).toHaveAttribute("data-state", "done");

  await context.setOffline(true);
  await expect(widget.locator(".ca-offline")).toBeVisible();
  const failed = page.waitForEvent("requestfailed", (r) => r.method() === "DELETE" && r.url().includes("/v1/attachments/"));
  await widget.getByRole("button", { name: "Remove second-thoughts.png" }).click();
  await expect(chip).toHaveCount(0);
  const id = /\/v1\/attachments\/(att_[^/?]+)/.exec((await failed).url())![1];

  // Back online: asked again, and deleted.
  const deleted = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes(`/v1/attachments/${id}`));
  await context.setOffline(false);
  expect((await deleted).status()).toBe(204);
});

test.describe("in Spanish", () => {
  test.use({ locale: "es-ES" });

  test("a refused file says why in the visitor's language and the typed text stays", async ({ page }) => {
    const es = catalogue("es");
    await page.goto("/?lang=es");
    await page.locator("button.ca-launcher").click();
    const widget = page.frameLocator("iframe[src*='/widget']");
    const input = widget.locator("#ca-input");
    await expect(input).toHaveAttribute("placeholder", es.placeholder);
    await input.fill("mi alergia");

    const file = widget.locator("input.ca-file");
    await expect(file).toHaveAttribute("aria-label", es.attach);
    // A program renamed as a PDF: its bytes say what it is.
    await file.setInputFiles({ name: "factura.pdf", mimeType: "application/pdf", buffer: Buffer.from("\x7fELF\x02\x01\x01\0\0\0") });
    // Larger than the assistant takes: refused before it is sent.
    await file.setInputFiles({ name: "grande.txt", mimeType: "text/plain", buffer: Buffer.alloc(1_600_000, "a") });
    // An image whose header claims 30 000 × 30 000 pixels.
    await file.setInputFiles({ name: "bomba.png", mimeType: "image/png", buffer: png(30_000) });
    const chips = widget.locator(".ca-chip");
    await expect(chips.locator(".ca-chip-error")).toHaveText([
      es.att_type,
      es.att_too_large.replace("{max}", "1,5 MB"),
      es.att_image_too_large,
    ]);
    await expect(chips.nth(0)).toHaveAttribute("data-state", "failed");

    // The day's bytes: one file of 1.4 MB fits, the next does not.
    await file.setInputFiles({ name: "menu.txt", mimeType: "text/plain", buffer: Buffer.alloc(1_400_000, "b") });
    await expect(chips.nth(3)).toHaveAttribute("data-state", "done");
    await file.setInputFiles({ name: "otra.txt", mimeType: "text/plain", buffer: Buffer.alloc(1_400_000, "c") });
    await expect(chips.nth(4).locator(".ca-chip-error")).toHaveText(es.att_quota);
    await expect(input).toHaveValue("mi alergia");
    await page.screenshot({ path: "test-results/attachments-refused-es.png" });

    // Send takes the file that arrived; the refused ones go with the chips.
    await input.press("Enter");
    await expect(widget.locator(".ca-user :is(.ca-text, .ca-md > p)")).toHaveText("mi alergia");
    expect(await sentFiles(widget)).toEqual(["menu.txt"]);
    await expect(widget.locator(".ca-user .ca-att-file")).toHaveAttribute("href", /^blob:|\/v1\/attachments\//);
    await expect(chips).toHaveCount(0);
  });
});

test.describe("at 375 px, right to left, by keyboard alone", () => {
  test.use({ viewport: { width: 375, height: 740 }, locale: "ar" });

  test("a visitor attaches, removes, sends and opens a photo with the keyboard", async ({ page }) => {
    const ar = catalogue("ar");
    await page.goto("/?lang=ar");
    await page.locator("button.ca-launcher").click();
    const widget = page.frameLocator("iframe[src*='/widget']");
    const input = widget.locator("#ca-input");
    await expect(input).toHaveAttribute("placeholder", ar.placeholder);
    await expect(widget.locator("html")).toHaveAttribute("dir", "rtl");

    // Tab from the message field reaches the paperclip, a real file input.
    await input.focus();
    await page.keyboard.press("Tab");
    const paperclip = widget.locator("input.ca-file");
    await expect(paperclip).toHaveAttribute("aria-label", ar.attach);
    await expect(paperclip).toBeFocused();
    const chips = widget.locator(".ca-chip");
    const names = ["a-very-long-name-of-a-photo-of-the-margherita-we-had.png", "second.png"];
    for (const [i, name] of names.entries()) {
      const chooser = page.waitForEvent("filechooser");
      await page.keyboard.press("Enter");
      await (await chooser).setFiles(photo(name));
      // The file is taken (its chip drawn) and the paperclip keeps the focus
      // before Enter asks for the next (it went too soon once, and opened nothing).
      await expect(chips).toHaveCount(i + 1);
      await expect(paperclip).toBeFocused();
    }
    await expect(chips.nth(1)).toHaveAttribute("data-state", "done");
    // Nothing is wider than the panel.
    expect(await widget.locator("form.ca-composer").evaluate((f) => f.scrollWidth <= f.clientWidth)).toBe(true);
    const box = await chips.nth(0).boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(375);
    await page.screenshot({ path: "test-results/attachments-375-rtl.png" });

    // The chips' remove buttons come first in the form, by Tab.
    await input.focus();
    await page.keyboard.press("Shift+Tab");
    await expect(widget.getByRole("button", { name: ar.att_remove.replace("{name}", "second.png") })).toBeFocused();
    await page.keyboard.press("Enter");
    await expect(chips).toHaveCount(1);

    await input.focus();
    await page.keyboard.type("ما هذا الطبق؟");
    await page.keyboard.press("Enter");
    await expect(widget.locator(".ca-user .ca-att-img")).toHaveCount(1);
    await expect(widget.locator(".ca-assistant .ca-md").last()).toBeVisible();

    // The photo opens with the keyboard, and Escape closes it.
    const open = widget.getByRole("button", {
      name: ar.open_image.replace("{name}", "a-very-long-name-of-a-photo-of-the-margherita-we-had.png"),
    });
    await open.focus();
    await page.keyboard.press("Enter");
    await expect(widget.getByRole("dialog")).toBeVisible();
    await page.keyboard.press("Escape");
    await expect(widget.getByRole("dialog")).toHaveCount(0);
    await expect(open).toBeFocused();
  });
});

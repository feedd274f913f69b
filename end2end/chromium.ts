// How every browser test starts Debian's Chromium (playwright.config.ts),
// and the one switch that lets a cross-site frame keep storage of its own
// (tests/storage.spec.ts).

export const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  // No page may follow a link off the machine (an app's Open Link,
  // a card): every name but localhost resolves to nothing. 127.0.0.2
  // is the host pages' site, another than the assistant's (tests/hosts.ts).
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE 127.0.0.2",
];

// Chromium 156 blocks third-party cookies, and with them a cross-site
// frame's localStorage, sessionStorage and IndexedDB (as in incognito
// windows and wherever a visitor blocks them); without this feature a
// cross-site frame has storage of its own, partitioned by the top-level
// site, as in Firefox, Safari and Chromium allowing third-party cookies.
export const thirdPartyStorageAllowed = "--disable-features=TrackingProtection3pcd";

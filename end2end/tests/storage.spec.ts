import { storageTests } from "./storage";

// What the widget keeps, in Chromium as it comes: third-party cookies
// blocked, and with them the cross-site frame's own storage (storage.ts).
storageTests("blocked");

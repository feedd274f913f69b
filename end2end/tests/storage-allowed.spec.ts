import { test } from "@playwright/test";
import { chromiumArgs, executablePath, thirdPartyStorageAllowed } from "../chromium";
import { storageTests } from "./storage";

// What the widget keeps, in a Chromium that lets a cross-site frame have
// storage of its own, partitioned by the host's site, as Firefox and
// Safari do (storage.ts).
test.use({ launchOptions: { executablePath, args: [...chromiumArgs, thirdPartyStorageAllowed] } });
storageTests("allowed");

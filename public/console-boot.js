// Hydrates the console's server-rendered page with the console's own WASM
// (never the widget's). Without it every page still works: forms post.
import init, { hydrate } from "/pkg/console.js";

init({ module_or_path: "/pkg/console_bg.wasm" }).then(hydrate);

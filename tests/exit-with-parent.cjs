// Preloaded (`node --require`) into an MCP server a test process shares
// and never stops itself: the server exits once the process named by
// EXIT_WITH_PARENT is gone (the server is then reparented).
const parent = Number(process.env.EXIT_WITH_PARENT);
if (parent) {
  setInterval(() => {
    if (process.ppid !== parent) process.exit(0);
  }, 500).unref();
}

import { defineConfig } from "@playwright/test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromiumArgs, executablePath } from "./chromium";

// The server under test: the binary `./dev e2e` built, on its own port, with
// a fresh data directory (so a fresh SQLite database) for every run.
const port = process.env.E2E_PORT ?? "3210";
const baseURL = `http://127.0.0.1:${port}`;
const taskHostPort = process.env.E2E_TASK_HOST_PORT ?? "3211";
const caddieHubPort = process.env.E2E_CADDIE_HUB_PORT ?? "3212";
const caddieHub = `http://127.0.0.1:${caddieHubPort}`;
// A second assistant behind a reverse proxy: it listens on 127.0.0.1 and is
// reached only at its public URL, a different origin (deploy.spec.ts).
const proxiedPort = process.env.E2E_PROXIED_PORT ?? "3213";
const proxyPort = process.env.E2E_PROXY_PORT ?? "3214";
// The identity provider: a real, certified OpenID Provider (npm
// oidc-provider, tests/oidc/op.mjs), not a stand-in.
const idpPort = process.env.E2E_IDP_PORT ?? "3215";
const idp = `http://127.0.0.1:${idpPort}`;
const publicURL = `http://localhost:${proxyPort}`;
// An MCP server nobody here wrote: npm's reference server-everything over
// Streamable HTTP (installed in tests/mcp by ./dev), for mcp.spec.ts.
const mcpPort = process.env.E2E_MCP_PORT ?? "3216";
// MCP Apps run on an origin of their own (the sandbox's listener), and the
// MCP App nobody here wrote: npm's server-basic-vanillajs (apps.spec.ts).
const sandboxPort = process.env.E2E_SANDBOX_PORT ?? "3217";
const appServerPort = process.env.E2E_APP_SERVER_PORT ?? "3218";
// A hostile MCP App of ours (tests/mcp/hostile_app.py, on PyPI's mcp) and
// the listener that counts what its page manages to send out.
const hostilePort = process.env.E2E_HOSTILE_APP_PORT ?? "3219";
const hostileCounterPort = process.env.E2E_HOSTILE_COUNTER_PORT ?? "3220";
const server = process.env.CA_SERVER_BIN;

/** The environment of an assistant under test on `port`, with its own data directory. */
function assistantEnv(port: string, extra: Record<string, string>): Record<string, string> {
  return {
    LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
    LEPTOS_SITE_ROOT: process.env.LEPTOS_SITE_ROOT ?? "../target/site",
    LEPTOS_OUTPUT_NAME: "context-assistant",
    // Under the run's directory, which ./dev removes when the run ends.
    CA_DATA_DIR: mkdtempSync(join(process.env.E2E_TMP ?? tmpdir(), "ca-e2e-")),
    RUST_LOG: "warn",
    // Many turns from one address and user: the limits are not under test here.
    CA_TURNS_PER_USER_PER_MINUTE: "100000",
    CA_TURNS_PER_IP_PER_MINUTE: "100000",
    CA_TURNS_PER_WORKSPACE_PER_MINUTE: "100000",
    ...extra,
  };
}
if (!server) throw new Error("CA_SERVER_BIN is not set: run the suite with ./dev e2e");

export default defineConfig({
  testDir: "./tests",
  timeout: 60_000,
  expect: { timeout: 15_000 },
  // Two files at a time (a test's own lines one after another): each test
  // makes its own workspace and users, and what it counts on the shared
  // fixtures is its workspace's (hosts.ts `executes`). E2E_WORKERS=1 runs
  // them one by one.
  fullyParallel: false,
  workers: Number(process.env.E2E_WORKERS ?? 2),
  retries: 0,
  reporter: [["list"], ["json", { outputFile: "test-results/results.json" }]],
  outputDir: "test-results/artifacts",
  use: {
    baseURL,
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    launchOptions: { executablePath, args: chromiumArgs },
  },
  webServer: [
    {
      command: server,
      url: `${baseURL}/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "pipe",
      stderr: "pipe",
      env: assistantEnv(port, {
        // The task host of fixtures/ lives on loopback, and the tests make its workspace.
        CA_ALLOW_PRIVATE_TOOL_HOSTS: "1",
        CA_ADMIN_TOKEN: "e2e-admin-token-of-at-least-32-characters",
        // Launched from the stub Caddie hub of fixtures/caddie-hub.mjs; users
        // sign in at the OpenID Provider below.
        CA_SANDBOX_ADDR: `127.0.0.1:${sandboxPort}`,
        CADDIE_TOOL_SECRET: "e2e-caddie-secret",
        CADDIE_TOOL_SLUG: "assistant",
        CADDIE_HUB_ORIGIN: caddieHub,
        OIDC_ISSUER: idp,
        OIDC_CLIENT_ID: "assistant-e2e",
        OIDC_CLIENT_SECRET: "assistant-e2e-secret",
        // Small enough to be reached by tests/attachments.spec.ts.
        CA_MAX_ATTACHMENT_BYTES: "1500000",
        CA_USER_DAILY_ATTACHMENT_BYTES: "2000000",
      }),
    },
    {
      command: "node fixtures/task-host.mjs",
      url: `http://127.0.0.1:${taskHostPort}/health`,
      reuseExistingServer: false,
      timeout: 30_000,
      env: { TASK_HOST_PORT: taskHostPort },
    },
    {
      command: "node ../tests/oidc/op.mjs",
      url: `${idp}/.well-known/openid-configuration`,
      reuseExistingServer: false,
      // Once (2026-12-02, after a whole ./dev test) it was not up within
      // 30 s while the machine sat idle; its output (the OIDC_OP_READY line,
      // any error) is shown so a recurrence says why.
      timeout: 60_000,
      stdout: "pipe",
      stderr: "pipe",
      env: {
        OP_PORT: idpPort,
        OP_CLIENT_ID: "assistant-e2e",
        OP_CLIENT_SECRET: "assistant-e2e-secret",
        OP_REDIRECT_URIS: `${baseURL}/caddie/auth/callback`,
        OP_AUTO_GRANT: "1",
      },
    },
    {
      command: "node fixtures/caddie-hub.mjs",
      url: `${caddieHub}/health`,
      reuseExistingServer: false,
      timeout: 30_000,
      env: { CADDIE_HUB_PORT: caddieHubPort, ASSISTANT_ORIGIN: baseURL, CADDIE_TOOL_SECRET: "e2e-caddie-secret" },
    },
    {
      command: server,
      url: `http://127.0.0.1:${proxiedPort}/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "pipe",
      stderr: "pipe",
      env: assistantEnv(proxiedPort, { CA_PUBLIC_URL: publicURL }),
    },
    {
      command: "node ../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp",
      // A GET without a session answers 400, which Playwright takes as up.
      url: `http://127.0.0.1:${mcpPort}/mcp`,
      reuseExistingServer: false,
      timeout: 30_000,
      env: { PORT: mcpPort },
    },
    {
      command: "node ../tests/mcp/node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js",
      // Its GET /mcp answers 405, which Playwright does not take as up: the port is.
      port: Number(appServerPort),
      reuseExistingServer: false,
      timeout: 30_000,
      env: { PORT: appServerPort },
    },
    {
      // The tests' Python venv (made by tests/python-venv.sh, which prints its python).
      command: `"$(bash ../tests/python-venv.sh)" ../tests/mcp/hostile_app.py ${hostilePort} ${hostileCounterPort}`,
      port: Number(hostilePort),
      reuseExistingServer: false,
      // The venv is made once per machine (pip); ./dev test has made it already.
      timeout: 180_000,
    },
    {
      command: "node fixtures/proxy.mjs",
      url: `http://127.0.0.1:${proxyPort}/_proxy_health`,
      reuseExistingServer: false,
      timeout: 30_000,
      env: { PROXY_PORT: proxyPort, PROXY_TARGET_PORT: proxiedPort },
    },
  ],
});

// The peer for `scripts/bench-peer.sh`: the same turn as ours, built the
// way the Vercel AI SDK's documentation builds a chat route. A turn is
// `POST /turn` with the conversation's UI messages (`{"messages": [...]}`,
// as the SDK's `useChat` sends them), converted to the model's messages;
// the answer is the SDK's UI message stream (server-sent events). The model is the benchmark's OpenAI-compatible
// fake (`OPENAI_BASE_URL`); its one tool, `lookup`, is a `get` of the
// benchmark's Remote Tools host (`TOOL_HOST`), called as our server calls
// it (`POST /tools/execute`), its result given back to the model.
//
// Started by `tests/examples/turn_cost.rs` (`peer` mode), which measures
// this process's CPU per turn beside ours. Nothing is stored: the peer
// keeps no conversation, no limits and no stream events, which our server
// does on every turn (with the visitor's token checked) — the comparison
// favours the peer. The SDK asks for Node 22; it runs on Debian's Node 20.
import http from "node:http";
import { convertToModelMessages, jsonSchema, pipeUIMessageStreamToResponse, stepCountIs, streamText, tool, toUIMessageStream } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

const port = Number(process.env.PORT);
const host = process.env.TOOL_HOST;
const model = createOpenAICompatible({
  name: "bench",
  baseURL: process.env.OPENAI_BASE_URL,
  apiKey: process.env.OPENAI_API_KEY,
  includeUsage: true,
})("bench");

const tools = {
  lookup: tool({
    description: "Look up",
    inputSchema: jsonSchema({ type: "object", properties: { q: { type: "string" } } }),
    execute: async (input) => {
      const answer = await fetch(`${host}/tools/execute`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ tool: "lookup", input }),
      });
      if (!answer.ok) throw new Error(`the tool host answered ${answer.status}`);
      return (await answer.json()).output;
    },
  }),
};

function readJson(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch (error) {
        reject(error);
      }
    });
    request.on("error", reject);
  });
}

const server = http.createServer(async (request, response) => {
  if (request.method === "GET" && request.url === "/ready") {
    response.end("ok");
    return;
  }
  if (request.method !== "POST" || request.url !== "/turn") {
    response.writeHead(404).end();
    return;
  }
  let body;
  try {
    body = await readJson(request);
  } catch {
    response.writeHead(400).end("the body is not JSON");
    return;
  }
  let messages;
  try {
    messages = await convertToModelMessages(body.messages, { tools });
  } catch {
    response.writeHead(400).end("the messages are not UI messages");
    return;
  }
  const result = streamText({
    model,
    messages,
    tools,
    stopWhen: stepCountIs(5),
  });
  pipeUIMessageStreamToResponse({ response, stream: toUIMessageStream({ stream: result.stream, tools }) });
});
server.keepAliveTimeout = 60_000;
server.listen(port, "127.0.0.1");

// A loopback bridge for the MCP conformance suite, which speaks only Streamable HTTP: each
// HTTP session (one per `initialize`) gets its own `xcsh-plugins mcp` child on stdio, and the
// bridge passes JSON-RPC messages both ways unchanged, on @modelcontextprotocol/sdk's own
// transports (StreamableHTTPServerTransport ⇄ StdioClientTransport).
//
// Usage: bun bridge.mjs PORT XCSH_PLUGINS_BIN [ARG...]   (the server runs `BIN ARG... mcp`;
// PORT 0 picks a free port)
// Listens on 127.0.0.1 only, with the SDK's Host header check; prints `listening PORT`.
//
// A server notification goes on the HTTP stream of the request it belongs to: a progress
// notification by its token, anything else (log messages) to the newest request still
// running, as the server sends them during a call; with none running, on the session's own
// stream. A server request (an elicitation, a sampling request) goes on the newest running
// request's stream too: the session's own stream may not be open yet, and the SDK drops what
// it cannot send there.

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const [portArg, command, ...args] = process.argv.slice(2);
let port = portArg; // the port bound, once listening (PORT 0: any free one)
if (!portArg || !command) {
  console.error("usage: bridge.mjs PORT XCSH_PLUGINS_BIN [ARG...]");
  process.exit(2);
}

const sessions = new Map();

async function newSession() {
  const child = new StdioClientTransport({ command, args: [...args, "mcp"], stderr: "inherit" });
  const running = new Map(); // request id -> progress token (or null)
  const http = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, http),
    enableDnsRebindingProtection: true,
    allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
  });
  http.onmessage = (message) => {
    if (message.method && message.id !== undefined) {
      running.set(message.id, message.params?._meta?.progressToken ?? null);
    }
    child.send(message).catch((error) => console.error("bridge: to the server:", error));
  };
  child.onmessage = (message) => {
    let relatedRequestId;
    if (message.id !== undefined && !message.method) {
      running.delete(message.id);
    } else if (message.method === "notifications/progress") {
      for (const [id, token] of running) {
        if (token === message.params?.progressToken) relatedRequestId = id;
      }
    } else if (message.method?.startsWith("notifications/") || message.method) {
      relatedRequestId = [...running.keys()].at(-1);
    }
    http.send(message, { relatedRequestId }).catch((error) => console.error("bridge: to the client:", error));
  };
  http.onclose = () => {
    if (http.sessionId) sessions.delete(http.sessionId);
    child.close();
  };
  child.onclose = () => http.close();
  await child.start();
  await http.start();
  return http;
}

createServer(async (req, res) => {
  try {
    // Loopback only: a page in a browser cannot reach it under another name (DNS rebinding).
    if (![`127.0.0.1:${port}`, `localhost:${port}`].includes(req.headers.host)) {
      res.writeHead(403).end();
      return;
    }
    let body;
    if (req.method === "POST") {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    }
    const id = req.headers["mcp-session-id"];
    let http = id ? sessions.get(id) : undefined;
    if (!http && !id && body && isInitializeRequest(body)) http = await newSession();
    if (!http) {
      res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: id ? "Session not found" : "No session: send initialize first" } }));
      return;
    }
    await http.handleRequest(req, res, body);
  } catch (error) {
    console.error("bridge:", error);
    if (!res.headersSent) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
    }
  }
}).listen(Number(portArg), "127.0.0.1", function () {
  port = String(this.address().port);
  console.log(`listening ${port}`);
});

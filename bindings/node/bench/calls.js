// The binding's benchmark (run by `.ci/bench node`; never a timed test): from one Node
// process, in one run, the median of an awaited call of the trivial `bench_echo` tool
// through the binding under process isolation and in-process, against the same tool over MCP
// stdio from the official MCP SDK client (`xcsh-plugins mcp`); then the resident memory the
// Node process gains by loading 10 plugins. Prints a Markdown table.
//
// Environment: XCSH_RELEASE_DIR (the cargo release directory with the plugins, the addon,
// xcsh-plugins and xcsh-plugin-host), XCSH_MCP_SDK (the @modelcontextprotocol/sdk directory).
"use strict";

const path = require("node:path");
const { performance } = require("node:perf_hooks");

const release = process.env.XCSH_RELEASE_DIR || path.join(__dirname, "..", "..", "..", "target", "release");
process.env.XCSH_NATIVE_PLUGINS_ADDON ||= path.join(release, "libxcsh_native_plugins.so");
const { nativeToolFactory } = require("..");
const native = (() => {
  const module = { exports: {} };
  process.dlopen(module, process.env.XCSH_NATIVE_PLUGINS_ADDON);
  return module.exports;
})();
const sdk = process.env.XCSH_MCP_SDK || path.join(__dirname, "..", "..", "..", "target", "npm", "node_modules", "@modelcontextprotocol", "sdk");
const { Client } = require(path.join(sdk, "dist", "cjs", "client", "index.js"));
const { StdioClientTransport } = require(path.join(sdk, "dist", "cjs", "client", "stdio.js"));

const CALLS = Number(process.env.XCSH_BENCH_CALLS || 5000);
const WARMUP = 500;
const bench = path.join(release, "libfixture_bench.so");
const TEN = [
  "batch_rename", "fixture_multi", "fixture_tokio", "fixture_bench", "fixture_crash",
  "fixture_journal", "fixture_reload_v1", "fixture_faults", "fixture_legacy", "fixture_constructor",
].map((name) => path.join(release, `lib${name}.so`));

function median(samples) {
  const sorted = samples.slice().sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/// Median µs of `CALLS` awaited calls of `call`, after a warm-up.
async function time(call) {
  for (let i = 0; i < WARMUP; i++) await call();
  const samples = new Array(CALLS);
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    await call();
    samples[i] = (performance.now() - start) * 1000;
  }
  return median(samples);
}

async function binding(isolation) {
  const factory = nativeToolFactory({ plugins: [bench], defaultDirs: false, isolation });
  const tools = await factory({ cwd: process.cwd(), pushPendingAction() {} });
  const echo = tools.find((tool) => tool.name === "bench_echo");
  const result = await echo.execute("c", { text: "x" });
  if (result.content[0].text !== "echo: x") throw new Error(`unexpected ${JSON.stringify(result)}`);
  const us = await time(() => echo.execute("c", { text: "x" }));
  await factory.close();
  return us;
}

async function mcp() {
  const transport = new StdioClientTransport({
    command: path.join(release, "xcsh-plugins"),
    args: ["--plugin", bench, "--no-default-dirs", "mcp"],
    stderr: "ignore",
  });
  const client = new Client({ name: "xcsh-bench", version: "0" });
  await client.connect(transport);
  const call = () => client.callTool({ name: "bench_echo", arguments: { text: "x" } });
  const result = await call();
  if (result.content[0].text !== "echo: x") throw new Error(`unexpected ${JSON.stringify(result)}`);
  const us = await time(call);
  await client.close();
  return us;
}

/// The floor of any binding call, measured the way calls now go: a synchronous call that
/// hands an empty job to a worker thread, which settles a promise through the session's one
/// thread-safe function.
async function floorOfCalls() {
  const running = new Map();
  const session = new native.NativeSession(
    { cwd: process.cwd(), plugins: [], defaultDirs: false, isolation: "in-process", allowWrite: [], allowRead: [], passEnv: [], denyNetwork: false },
    null,
    () => {},
    null,
    (call, ok) => {
      const settle = running.get(call);
      running.delete(call);
      settle(ok);
    },
  );
  await session.load();
  // What keeps the runtime alive while a call runs, as index.js does it.
  const keepAlive = setInterval(() => {}, 1 << 30);
  keepAlive.unref();
  let next = 0;
  const us = await time(() => {
    const call = ++next;
    keepAlive.ref();
    const answer = new Promise((resolve) => running.set(call, resolve));
    session.benchFloor(call);
    return answer.then(() => keepAlive.unref());
  });
  clearInterval(keepAlive);
  await session.close();
  return us;
}

async function memory(isolation) {
  global.gc?.();
  const before = process.memoryUsage().rss;
  const factory = nativeToolFactory({ plugins: TEN, defaultDirs: false, isolation });
  const tools = await factory({ cwd: process.cwd(), pushPendingAction() {} });
  global.gc?.();
  const after = process.memoryUsage().rss;
  const errors = factory.loadErrors.length;
  await factory.close();
  return { kib: Math.round((after - before) / 1024), tools: tools.length, errors };
}

(async () => {
  // Memory first, in-process last: nothing else has grown the heap yet.
  const isolatedMemory = await memory("process");
  const process_ = await binding("process");
  const inProcess = await binding("in-process");
  const overMcp = await mcp();
  const floor = await floorOfCalls();
  const asyncFloor = await time(() => native.benchAsyncFloor());
  const inProcessMemory = await memory("in-process");
  const f = (us) => `${us.toFixed(1)} µs`;
  console.log(`| what (median of ${CALLS} awaited calls of bench_echo, ${typeof Bun !== "undefined" ? `Bun ${Bun.version}` : `Node ${process.version}`}) | value |`);
  console.log("|---|---|");
  console.log(`| binding, process isolation | ${f(process_)} |`);
  console.log(`| binding, in-process | ${f(inProcess)} |`);
  console.log(`| MCP stdio (official SDK client → xcsh-plugins mcp) | ${f(overMcp)} |`);
  console.log(`| floor: a sync hand-off to a worker, settled through the session's thread-safe function (\`benchFloor\`) | ${f(floor)} |`);
  console.log(`| for comparison: an empty napi-rs async call (\`benchAsyncFloor\`, how calls went before) | ${f(asyncFloor)} |`);
  console.log(`| MCP ÷ binding (process), target ≥ 4 | ${(overMcp / process_).toFixed(1)} |`);
  console.log(`| MCP ÷ binding (in-process), target ≥ 20 | ${(overMcp / inProcess).toFixed(1)} |`);
  console.log(`| binding (in-process) ÷ floor, target ≤ 1.5 | ${(inProcess / floor).toFixed(2)} |`);
  console.log(`| RSS added by loading 10 plugins, process isolation (${isolatedMemory.tools} tools, ${isolatedMemory.errors} load errors) | ${isolatedMemory.kib} KiB |`);
  console.log(`| RSS added by loading 10 plugins, in-process (${inProcessMemory.tools} tools, ${inProcessMemory.errors} load errors) | ${inProcessMemory.kib} KiB |`);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});

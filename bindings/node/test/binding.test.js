// @xcsh/native-plugins on the real built addon and real plugin `.so` files, run as is by
// `node --test` and by `bun test` (the Rust test `tests/tests/node_binding.rs` runs both).
//
// Environment: XCSH_TEST_PLUGIN_DIR (where the fixture plugins are; default the repository's
// target/debug), XCSH_NATIVE_PLUGINS_ADDON and XCSH_PLUGIN_HOST (default: found by index.js).
"use strict";

const { test } = typeof Bun !== "undefined" ? require("bun:test") : require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const { nativeToolFactory } = require("..");
const { PendingActionStore, resolve, runtimeApi, text } = require("../examples/seed-runtime.js");

const PLUGIN_DIR =
  process.env.XCSH_TEST_PLUGIN_DIR || path.join(__dirname, "..", "..", "..", "target", "debug");
const plugin = (name) => path.join(PLUGIN_DIR, `lib${name}.so`);
const STORE_UNAVAILABLE = "Pending action store unavailable for custom tools in this runtime.";
const SLOW = 60_000;

function scratch() {
  return fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-node-"));
}

/// Load `plugins` with a fresh store; returns the tools by name, the store, the factory.
async function load(plugins, { isolation = "process", store = new PendingActionStore(), cwd = scratch(), logger, ...rest } = {}) {
  const factory = nativeToolFactory({ plugins, defaultDirs: false, isolation, ...rest });
  const tools = await factory(runtimeApi(cwd, store, logger));
  return { factory, store, cwd, tools: Object.fromEntries(tools.map((tool) => [tool.name, tool])), list: tools };
}

const journal = (cwd) => {
  const file = path.join(cwd, "journal.txt");
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n") : [];
};

test("lists the tools of every plugin, with their schemas, and reports a file that fails", { timeout: SLOW }, async () => {
  const logged = [];
  const logger = { warn: (message) => logged.push(message) };
  const bogus = path.join(scratch(), "libnot_a_plugin.so");
  fs.writeFileSync(bogus, "not an ELF file");
  const { factory, list, tools } = await load([plugin("batch_rename"), bogus, plugin("fixture_journal")], { logger });
  try {
    assert.deepEqual(list.map((tool) => tool.name), ["batch_rename_preview", "journal_preview"]);
    const rename = tools.batch_rename_preview;
    assert.equal(rename.label, "Batch Rename Preview");
    assert.equal(rename.deferrable, true);
    assert.equal(typeof rename.description, "string");
    assert.equal(rename.parameters.type, "object");
    assert.deepEqual(Object.keys(rename.parameters.properties).sort(), ["files", "find", "replace"]);
    assert.equal(factory.loadErrors.length, 1);
    assert.equal(factory.loadErrors[0].path, bogus);
    assert.match(factory.loadErrors[0].message, /libnot_a_plugin\.so/);
    assert.ok(logged.some((line) => line.includes("libnot_a_plugin.so")), `logged: ${logged}`);
  } finally {
    await factory.close();
  }
});

for (const isolation of ["process", "in-process"]) {
  test(`${isolation}: a preview, then apply and discard through the runtime's store and resolve`, { timeout: SLOW }, async () => {
    const { factory, store, cwd, tools } = await load([plugin("batch_rename")], { isolation });
    try {
      for (const name of ["a_draft.txt", "b_draft.txt"]) fs.writeFileSync(path.join(cwd, name), name);
      const preview = await tools.batch_rename_preview.execute("call-1", {
        files: ["a_draft.txt", "b_draft.txt"],
        find: "_draft",
        replace: "",
      });
      assert.match(text(preview), /^Prepared rename plan for 2 files/);
      assert.equal(store.count, 1, "the push reached the runtime's store before execute settled");
      assert.equal(store.peek().label, "Batch rename: 2 files");
      assert.equal(store.peek().sourceToolName, "batch_rename_preview");
      assert.ok(fs.existsSync(path.join(cwd, "a_draft.txt")), "a preview renames nothing");
      const applied = await resolve(store, "apply", "looks right");
      assert.equal(text(applied), "Applied batch rename. Reason: looks right");
      assert.deepEqual(fs.readdirSync(cwd).sort(), ["a.txt", "b.txt"]);

      await tools.batch_rename_preview.execute("call-2", { files: ["a.txt"], find: "a", replace: "z" });
      const discarded = await resolve(store, "discard", "not now");
      assert.equal(text(discarded), "Discarded batch rename. Reason: not now");
      assert.deepEqual(fs.readdirSync(cwd).sort(), ["a.txt", "b.txt"]);
      assert.equal(store.count, 0);
    } finally {
      await factory.close();
    }
  });
}

test("LIFO across a JS tool's action and native ones; each runs once, in the plugin", { timeout: SLOW }, async () => {
  const { factory, store, cwd, tools } = await load([plugin("fixture_journal"), plugin("fixture_multi")]);
  try {
    const order = [];
    store.push({ label: "JS: first", sourceToolName: "js_tool", apply: async () => (order.push("js"), { content: [] }) });
    await tools.journal_preview.execute("c1", { journal: "journal.txt", entry: "second" });
    const stacked = await tools.stack_preview.execute("c2", { count: 3 });
    assert.equal(text(stacked), "pushed 3");
    assert.deepEqual(
      store.stack.map((action) => action.label),
      ["JS: first", "Journal: second", "Stack: item 1", "Stack: item 2", "Stack: item 3"],
      "one call's pushes are in the store, in push order, when execute settles",
    );
    assert.deepEqual(store.peek().details, undefined);
    assert.deepEqual(store.stack[1].details, { entry: "second" });
    assert.equal(text(await resolve(store, "apply", "r3")), "applied item 3 (r3)");
    assert.equal(text(await resolve(store, "apply", "r2")), "applied item 2 (r2)");
    const item1 = store.pop();
    const journalAction = store.peek();
    assert.equal(text(await resolve(store, "apply", "ok")), "journaled second");
    assert.equal(text(await resolve(store, "apply", "js")), "Applied: JS: first.");
    assert.deepEqual(order, ["js"]);
    assert.deepEqual(journal(cwd), ["applied second: ok"]);

    // Exactly once: a second apply or reject runs nothing.
    await assert.rejects(journalAction.apply("again"), /already applied/);
    await assert.rejects(journalAction.reject("again"), /already applied/);
    assert.deepEqual(journal(cwd), ["applied second: ok"]);
    // A native action without a reject of its own resolves `undefined` (the default text stands).
    assert.equal(await item1.reject("no"), undefined);
    await assert.rejects(item1.apply("late"), /already discarded/);
  } finally {
    await factory.close();
  }
});

test("without a store the push fails with the contract's message; a throwing store's message reaches the plugin", { timeout: SLOW }, async () => {
  for (const isolation of ["process", "in-process"]) {
    const absent = await load([plugin("fixture_journal")], { isolation, store: null });
    try {
      await assert.rejects(
        absent.tools.journal_preview.execute("c", { journal: "journal.txt", entry: "x" }),
        (error) => error instanceof Error && error.message === STORE_UNAVAILABLE,
      );
    } finally {
      await absent.factory.close();
    }
    assert.deepEqual(journal(absent.cwd), [], "closing ran no callback: nothing was pushed");

    const cwd = scratch();
    const factory = nativeToolFactory({ plugins: [plugin("fixture_journal")], defaultDirs: false, isolation });
    let refusals = 0;
    const pi = {
      cwd,
      pushPendingAction() {
        refusals += 1;
        throw new Error("Pending action store unavailable for custom tools in this runtime. (xcsh)");
      },
    };
    const [tool] = await factory(pi);
    try {
      await assert.rejects(tool.execute("c", { journal: "journal.txt", entry: "x" }), {
        message: "Pending action store unavailable for custom tools in this runtime. (xcsh)",
      });
      assert.equal(refusals, 1);
    } finally {
      await factory.close();
    }
    assert.deepEqual(journal(cwd), [], "a refused action is dropped: close() did not reject it");
  }
});

test("invalid arguments reject naming the field; the plugin does not run", { timeout: SLOW }, async () => {
  const { factory, store, tools } = await load([plugin("batch_rename")]);
  try {
    await assert.rejects(
      tools.batch_rename_preview.execute("c", { files: "a.txt", find: "a", replace: "b" }),
      (error) => error instanceof Error && /batch_rename_preview/.test(error.message) && /files/.test(error.message),
    );
    await assert.rejects(tools.batch_rename_preview.execute("c", { files: [] }), /find/);
    assert.equal(store.count, 0);
  } finally {
    await factory.close();
  }
});

test("a segfaulting plugin rejects with the loader's message; the runtime goes on and the next call works", { timeout: SLOW }, async () => {
  const { factory, tools } = await load([plugin("fixture_crash")]);
  try {
    await assert.rejects(tools.segfault.execute("c", {}), (error) => {
      assert.ok(error instanceof Error);
      assert.match(error.message, /libfixture_crash\.so/);
      assert.match(error.message, /segfault/);
      assert.match(error.message, /SIGSEGV|signal 11|segmentation/i);
      return true;
    });
    assert.equal(text(await tools.ping.execute("c", {})), "pong");
  } finally {
    await factory.close();
  }
});

test("an AbortSignal cancels: a cooperative plugin sees is_cancelled, a blocked one is stopped", { timeout: SLOW }, async () => {
  const { factory, tools } = await load([plugin("fixture_crash")]);
  try {
    const polite = new AbortController();
    setTimeout(() => polite.abort(), 200);
    await assert.rejects(tools.wait_for_cancel.execute("c", {}, undefined, undefined, polite.signal), /cancelled/);

    const blocked = new AbortController();
    const started = Date.now();
    setTimeout(() => blocked.abort(), 200);
    await assert.rejects(tools.sleep.execute("c", {}, undefined, undefined, blocked.signal), /cancelled/);
    assert.ok(Date.now() - started < 10_000, "the blocked plugin was stopped");
    assert.equal(text(await tools.ping.execute("c", {})), "pong");

    const already = new AbortController();
    already.abort();
    await assert.rejects(tools.sleep.execute("c", {}, undefined, undefined, already.signal), /cancelled/);
  } finally {
    await factory.close();
  }
});

test("timeoutMs stops a plugin that blocks, as --timeout does", { timeout: SLOW }, async () => {
  const { factory, tools } = await load([plugin("fixture_crash")], { timeoutMs: 300 });
  try {
    await assert.rejects(tools.sleep.execute("c", {}), /timed out after 0\.3s/);
    assert.equal(text(await tools.ping.execute("c", {})), "pong");
  } finally {
    await factory.close();
  }
});

test("in-process, a blocked plugin holds only its own thread: a timeout or an abort answers, other calls run", { timeout: SLOW }, async () => {
  const { factory, tools } = await load([plugin("fixture_crash")], { isolation: "in-process", timeoutMs: 300 });
  try {
    const started = Date.now();
    const blocked = tools.sleep.execute("c", {});
    assert.equal(text(await tools.ping.execute("c", {})), "pong", "another call runs beside the blocked one");
    await assert.rejects(blocked, /Tool "sleep" timed out after 0\.3s; the call was abandoned/);
    assert.ok(Date.now() - started < 5_000, `answered after ${Date.now() - started} ms`);
    const aborted = new AbortController();
    setTimeout(() => aborted.abort(), 100);
    await assert.rejects(tools.sleep.execute("c", {}, undefined, undefined, aborted.signal), /Tool "sleep" was cancelled/);
    assert.equal(text(await tools.ping.execute("c", {})), "pong");
  } finally {
    await factory.close();
  }
});

test("a panic inside the addon reaches JS as an Error; the runtime goes on", () => {
  const module = { exports: {} };
  process.dlopen(module, process.env.XCSH_NATIVE_PLUGINS_ADDON || path.join(__dirname, "..", "..", "..", "target", "debug", "libxcsh_native_plugins.so"));
  if (typeof module.exports.debugPanic !== "function") return; // release builds have no debugPanic
  assert.throws(() => module.exports.debugPanic("the addon exploded on purpose"), (error) => error instanceof Error && /exploded on purpose/.test(error.message));
  assert.equal(module.exports.parseSize("1K"), 1024, "the addon still answers");
});

test("onUpdate receives the plugin's partial results, paced", { timeout: SLOW }, async () => {
  for (const isolation of ["process", "in-process"]) {
    const { factory, tools } = await load([plugin("fixture_tokio")], { isolation });
    try {
      const updates = [];
      const result = await tools.progress_steps.execute("c", { steps: 3, pause_ms: 150 }, (partial) => updates.push(text(partial)));
      assert.equal(text(result), "did 3 steps");
      assert.deepEqual(updates, ["step 1 of 3", "step 2 of 3", "step 3 of 3"]);

      const fast = [];
      await tools.progress_steps.execute("c", { steps: 50, pause_ms: 0 }, (partial) => fast.push(text(partial)));
      assert.ok(fast.length >= 1 && fast.length < 50, `paced: ${fast.length} of 50 shown`);
      assert.equal(fast[0], "step 1 of 50");
    } finally {
      await factory.close();
    }
  }
});

test("close() rejects every native action never resolved, newest first, and ends the plugins", { timeout: SLOW }, async () => {
  const { factory, store, cwd, tools } = await load([plugin("fixture_journal"), plugin("fixture_crash")]);
  await tools.journal_preview.execute("c", { journal: "journal.txt", entry: "one" });
  await tools.journal_preview.execute("c", { journal: "journal.txt", entry: "two" });
  const pid = Number(text(await tools.pid.execute("c", {})));
  assert.ok(processAlive(pid));
  await factory.close();
  assert.deepEqual(journal(cwd), [
    "rejected two: Session ended before this action was resolved.",
    "rejected one: Session ended before this action was resolved.",
  ]);
  assert.ok(!processAlive(pid), "the plugin process ended");
  await assert.rejects(tools.ping.execute("c", {}), /closed/);
  await assert.rejects(store.pop().apply("late"), /closed/);
  assert.deepEqual(journal(cwd).length, 2, "nothing ran after close");
  await factory.close();
});

test("close() while calls run answers them as cancelled and returns, in either isolation", { timeout: SLOW }, async () => {
  for (const isolation of ["process", "in-process"]) {
    const { factory, tools } = await load([plugin("fixture_crash")], { isolation });
    // Each call's failure is caught as it comes (the second may fail before the first is awaited).
    const outcome = (call) => call.then(() => new Error("resolved"), (error) => error);
    const running = [outcome(tools.wait_for_cancel.execute("c1", {})), outcome(tools.sleep.execute("c2", {}))];
    // Both calls have reached their plugin: a call answered from there returns first.
    assert.equal(text(await tools.ping.execute("c3", {})), "pong");
    const started = Date.now();
    await factory.close();
    for (const call of running) assert.match((await call).message, /was cancelled/, isolation);
    assert.ok(Date.now() - started < 10_000, `${isolation}: close() took ${Date.now() - started} ms`);
  }
  // Closed in the same turn as the call starts, while its plugin process still starts: the
  // cancelled call ends at once, inside close().
  for (const isolation of ["process", "in-process"]) {
    const { factory, tools } = await load([plugin("fixture_crash")], { isolation });
    const call = tools.sleep.execute("c", {}).then(() => new Error("resolved"), (error) => error);
    const started = Date.now();
    await factory.close();
    assert.match((await call).message, /was cancelled/, isolation);
    assert.ok(Date.now() - started < 10_000, `${isolation}: close() took ${Date.now() - started} ms`);
  }
  // A call answered by its timeout still runs while its blocked plugin process is stopped
  // (within the grace period): close() then cancels it, and must not wait on itself.
  const { factory, tools } = await load([plugin("fixture_crash")], { timeoutMs: 300 });
  await assert.rejects(tools.sleep.execute("c", {}), /timed out after 0\.3s/);
  const started = Date.now();
  await factory.close();
  assert.ok(Date.now() - started < 10_000, `close() after a timeout took ${Date.now() - started} ms`);
});

test("a failed apply settles nothing: the action can still be rejected, or applied again when its plugin retries", { timeout: SLOW }, async () => {
  for (const isolation of ["process", "in-process"]) {
    const { factory, store, cwd, tools } = await load([plugin("batch_rename"), plugin("fixture_journal")], { isolation });
    try {
      // Retryable (batch_rename checks the whole plan before renaming): fix the cause, apply again.
      fs.writeFileSync(path.join(cwd, "a1.txt"), "one");
      await tools.batch_rename_preview.execute("c1", { files: ["a1.txt"], find: "a", replace: "b" });
      const rename = store.pop();
      fs.rmSync(path.join(cwd, "a1.txt"));
      await assert.rejects(rename.apply("go"), /source a1\.txt no longer exists/, isolation);
      await assert.rejects(rename.apply("go"), /source a1\.txt no longer exists/, "the plugin's apply ran again");
      fs.writeFileSync(path.join(cwd, "a1.txt"), "one");
      assert.equal(text(await rename.apply("restored")), "Applied batch rename. Reason: restored");
      assert.ok(fs.existsSync(path.join(cwd, "b1.txt")), isolation);
      await assert.rejects(rename.reject("late"), /already applied/);

      // Not retryable (journal appends): applying again names the first failure; reject still runs.
      fs.mkdirSync(path.join(cwd, "journal.txt"));
      await tools.journal_preview.execute("c2", { journal: "journal.txt", entry: "one" });
      const entry = store.pop();
      const first = await entry.apply("go").then(() => null, (error) => error.message);
      assert.ok(first, `${isolation}: the apply failed`);
      await assert.rejects(entry.apply("again"), (error) => {
        assert.match(error.message, /Pending action "Journal: one" was not applied: its apply failed/);
        assert.ok(error.message.includes(first), `${error.message} names ${first}`);
        assert.match(error.message, /Discard it, then preview the change again/);
        assert.doesNotMatch(error.message, /already applied/);
        return true;
      });
      fs.rmdirSync(path.join(cwd, "journal.txt"));
      assert.equal(text(await entry.reject("give up")), "dropped one");
      assert.deepEqual(journal(cwd), ["rejected one: give up"]);
      await assert.rejects(entry.apply("late"), /already discarded/);
    } finally {
      await factory.close();
    }
  }
});

test("a 0.2 plugin's failed apply took its reject: the reject resolves undefined; close() rejects what a failed apply left", { timeout: SLOW }, async () => {
  const v02 = process.env.XCSH_TEST_V0_2_PLUGIN;
  if (!v02) return; // only the Rust test runner builds the frozen 0.2 fixture
  for (const isolation of ["process", "in-process"]) {
    const { factory, store, tools } = await load([v02, plugin("fixture_journal")], { isolation });
    try {
      await tools.frozen_preview.execute("c", { text: "fail-me" });
      const frozen = store.pop();
      await assert.rejects(frozen.apply("go"), /apply of fail-me failed on purpose/);
      await assert.rejects(frozen.apply("go"), /its apply failed \(apply of fail-me failed on purpose\)/);
      assert.equal(await frozen.reject("discard"), undefined, isolation);
      await assert.rejects(frozen.reject("again"), /already discarded/);
    } finally {
      await factory.close();
    }
  }
  const { factory, store, cwd, tools } = await load([plugin("fixture_journal")]);
  fs.mkdirSync(path.join(cwd, "journal.txt"));
  await tools.journal_preview.execute("c", { journal: "journal.txt", entry: "left" });
  await assert.rejects(store.peek().apply("go"));
  fs.rmdirSync(path.join(cwd, "journal.txt"));
  await factory.close();
  assert.deepEqual(journal(cwd), ["rejected left: Session ended before this action was resolved."]);
});

test("approval: read for a read-only tool, write otherwise, overridden by name; loadMode and strict", { timeout: SLOW }, async () => {
  const logged = [];
  const { factory, tools } = await load([plugin("batch_rename"), plugin("fixture_journal"), plugin("fixture_crash")], {
    approval: { journal_preview: "exec", no_such_tool: "read" },
    loadMode: "essential",
    logger: { warn: (line) => logged.push(line) },
  });
  try {
    // A deferrable tool only previews: read-only unless its plugin says otherwise.
    assert.equal(tools.batch_rename_preview.approval, "read");
    assert.equal(tools.pid.approval, "write", "no read-only hint");
    assert.equal(tools.journal_preview.approval, "exec");
    for (const tool of Object.values(tools)) assert.equal(tool.loadMode, "essential");
    assert.equal(tools.batch_rename_preview.strict, true, "tool_params! schemas are closed");
    assert.ok(logged.some((line) => line.includes('"no_such_tool"')), `${logged}`);
  } finally {
    await factory.close();
  }
  const defaults = await load([plugin("batch_rename")]);
  assert.equal(defaults.tools.batch_rename_preview.loadMode, undefined, "the runtime's default stands");
  await defaults.factory.close();
  assert.throws(() => nativeToolFactory({ approval: { x: "root" } }), (error) => error instanceof TypeError && /approval\.x/.test(error.message));
  assert.throws(() => nativeToolFactory({ loadMode: "lazy" }), (error) => error instanceof TypeError && /loadMode/.test(error.message));
});

test("onSession shutdown closes only that invocation's session, once, whichever tool hears it", { timeout: SLOW }, async () => {
  const factory = nativeToolFactory({ plugins: [plugin("fixture_journal"), plugin("fixture_crash")], defaultDirs: false });
  const main = new PendingActionStore();
  const sub = new PendingActionStore();
  const [mainCwd, subCwd] = [scratch(), scratch()];
  const mainTools = Object.fromEntries((await factory(runtimeApi(mainCwd, main))).map((t) => [t.name, t]));
  const subTools = Object.fromEntries((await factory(runtimeApi(subCwd, sub))).map((t) => [t.name, t]));
  try {
    await subTools.journal_preview.execute("c", { journal: "journal.txt", entry: "sub" });
    await mainTools.journal_preview.execute("c", { journal: "journal.txt", entry: "main" });
    const subPid = Number(text(await subTools.pid.execute("c", {})));
    const mainPid = Number(text(await mainTools.pid.execute("c", {})));
    await Promise.all([
      subTools.journal_preview.onSession({ reason: "shutdown", previousSessionFile: undefined }),
      subTools.pid.onSession({ reason: "shutdown", previousSessionFile: undefined }),
    ]);
    await subTools.ping.onSession({ reason: "shutdown", previousSessionFile: undefined });
    assert.deepEqual(journal(subCwd), ["rejected sub: Session ended before this action was resolved."]);
    assert.ok(!processAlive(subPid), "the subagent session's plugin process ended");
    await assert.rejects(subTools.ping.execute("c", {}), /closed/);
    // The other session is untouched.
    await mainTools.journal_preview.onSession({ reason: "start", previousSessionFile: undefined });
    assert.ok(processAlive(mainPid));
    assert.equal(text(await main.pop().apply("still here")), "journaled main");
  } finally {
    await factory.close();
  }
});

test("import and require give the same factory", async () => {
  const esm = await import("@xcsh/native-plugins");
  assert.equal(esm.nativeToolFactory, nativeToolFactory);
  assert.equal(esm.default, nativeToolFactory);
});

test("bad options throw a TypeError naming the option, before anything loads", () => {
  assert.throws(() => nativeToolFactory({ isolation: "thread" }), (error) => error instanceof TypeError && /isolation/.test(error.message) && /in-process/.test(error.message));
  assert.throws(() => nativeToolFactory({ timeoutMs: -1 }), (error) => error instanceof TypeError && /timeoutMs/.test(error.message));
  assert.throws(() => nativeToolFactory({ memoryLimit: "lots" }), (error) => error instanceof TypeError && /memoryLimit/.test(error.message) && /512M/.test(error.message));
  assert.throws(() => nativeToolFactory({ plugin: ["x"] }), (error) => error instanceof TypeError && /unknown option `plugin`/.test(error.message));
  assert.throws(() => nativeToolFactory({ plugins: "x.so" }), TypeError);
  assert.throws(() => nativeToolFactory({ passEnv: ["*"] }), (error) => error instanceof TypeError && /passEnv/.test(error.message) && /MYTOOL_\*/.test(error.message));
  assert.throws(() => nativeToolFactory({ passEnv: ["A=B"] }), (error) => error instanceof TypeError && /passEnv/.test(error.message));
  assert.throws(() => nativeToolFactory({ passEnv: "GITHUB_TOKEN" }), (error) => error instanceof TypeError && /passEnv/.test(error.message));
  assert.throws(() => nativeToolFactory({ allowRead: "/etc" }), (error) => error instanceof TypeError && /allowRead/.test(error.message));
  assert.doesNotThrow(() => nativeToolFactory({ memoryLimit: "512M", timeoutMs: 1000 }));
  assert.doesNotThrow(() => nativeToolFactory({ passEnv: ["GITHUB_TOKEN", "MYTOOL_*"], allowRead: ["/srv"] }));
  for (const bad of [0, -5, NaN, "30s", null]) {
    assert.throws(() => nativeToolFactory({ stopIdleAfterMs: bad }), (error) => error instanceof TypeError && /stopIdleAfterMs/.test(error.message) && /Infinity/.test(error.message));
  }
  assert.doesNotThrow(() => nativeToolFactory({ stopIdleAfterMs: Infinity }));
  assert.doesNotThrow(() => nativeToolFactory({ stopIdleAfterMs: 500 }));
});

// Issue 27: a plugin process gets no secret of the runtime's environment, cannot read a home
// outside its working directory, and under denyNetwork reaches no socket; each control (the
// same call with passEnv, allowRead, or without denyNetwork) succeeds.
test("a plugin cannot leak secrets: environment, home, network; passEnv, allowRead and the open network as controls", { timeout: SLOW }, async () => {
  const dgram = require("node:dgram");
  const net = require("node:net");
  const secretsPlugin = plugin("fixture_secrets");
  const token = process.env.XCSH_TEST_SECRET_TOKEN;
  const home = scratch();
  fs.mkdirSync(path.join(home, ".ssh"));
  const key = path.join(home, ".ssh", "id_test");
  fs.writeFileSync(key, "TEST PRIVATE KEY");
  const received = [];
  const udp = dgram.createSocket("udp4");
  udp.on("message", (message) => received.push(message.toString()));
  await new Promise((done) => udp.bind(0, "127.0.0.1", done));
  const addr = `127.0.0.1:${udp.address().port}`;
  const socketPath = path.join(home, "agent.sock");
  const accepted = [];
  const server = net.createServer((connection) => connection.on("data", (data) => accepted.push(data.toString())));
  await new Promise((done) => server.listen(socketPath, done));
  const refused = (promise, what) =>
    assert.rejects(promise, (error) => {
      assert.match(error.message, /Permission denied \(os error 13\)/, `${what}: ${error.message}`);
      return true;
    });
  try {
    let { factory, tools } = await load([secretsPlugin]);
    try {
      const env = text(await tools.env.execute("c", {}));
      assert.match(env, /^PATH=/m);
      if (token) assert.ok(!env.includes(token), `the secret leaked:\n${env}`);
      assert.ok(!env.includes("XCSH_TEST_SECRET_TOKEN"), env);
      await refused(tools.read_file.execute("c", { path: key }), "read the home");
      await assert.rejects(tools.read_file.execute("c", { path: key }), (error) => error.message.includes(`cannot read ${key}`));
      assert.match(text(await tools.send_udp.execute("c", { addr, text: "control" })), /^sent/);
      await waitFor(() => received.includes("control"));
      assert.deepEqual(received, ["control"]);
      assert.match(text(await tools.connect_unix.execute("c", { path: socketPath, text: "control" })), /^connected/);
      await waitFor(() => accepted.join("").includes("control"));
    } finally {
      await factory.close();
    }
    ({ factory, tools } = await load([secretsPlugin], {
      passEnv: ["XCSH_TEST_SECRET_*"],
      allowRead: [path.join(home, ".ssh")],
      denyNetwork: true,
    }));
    try {
      const env = text(await tools.env.execute("c", {}));
      if (token) assert.ok(env.includes(`XCSH_TEST_SECRET_TOKEN=${token}`), env);
      assert.equal(text(await tools.read_file.execute("c", { path: key })), "TEST PRIVATE KEY");
      await refused(tools.send_udp.execute("c", { addr, text: "leak" }), "UDP");
      await refused(tools.connect_unix.execute("c", { path: socketPath, text: "leak" }), "Unix socket");
      await refused(tools.connect_abstract.execute("c", { name: "xcsh-issue27-node", text: "leak" }), "abstract socket");
      await refused(tools.open_socket.execute("c", { kind: "raw" }), "raw socket");
      await refused(tools.open_socket.execute("c", { kind: "netlink" }), "netlink socket");
      await new Promise((done) => setTimeout(done, 100));
      assert.ok(!received.includes("leak") && !accepted.join("").includes("leak"), "nothing arrived");
    } finally {
      await factory.close();
    }
  } finally {
    udp.close();
    server.close();
  }
});

// Issue 28: idle plugin processes are stopped, and restart on their next call.
const IDLE_MS = 300;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const pidOf = async (tool, params = {}) => Number(text(await tool.execute("c", params)).split("\n")[0]);

test("an idle plugin process is stopped after stopIdleAfterMs; the next call answers from a new one; three cycles are no crash", { timeout: SLOW }, async () => {
  const { factory, tools } = await load([plugin("fixture_crash")], { stopIdleAfterMs: IDLE_MS });
  try {
    const seen = [];
    for (let cycle = 0; cycle < 4; cycle++) {
      const called = Date.now();
      const pid = await pidOf(tools.pid);
      assert.ok(!seen.includes(pid), `${pid} answered twice`);
      seen.push(pid);
      assert.ok(processAlive(pid));
      await waitFor(() => !processAlive(pid), 10_000);
      assert.ok(!processAlive(pid), `process ${pid} was not stopped`);
      assert.ok(Date.now() - called >= IDLE_MS, "stopped before the idle time");
    }
    assert.equal(text(await tools.ping.execute("c", {})), "pong");
  } finally {
    await factory.close();
  }
});

test("a pending action keeps its process until resolved, and apply runs there; a call longer than the idle time completes", { timeout: SLOW }, async () => {
  const { factory, store, tools } = await load([plugin("fixture_crash")], { stopIdleAfterMs: IDLE_MS });
  try {
    const pusher = await pidOf(tools.pid_preview);
    await sleep(IDLE_MS * 4);
    assert.ok(processAlive(pusher), "stopped while its action was pending");
    assert.equal(text(await resolve(store, "apply", "go")), `applied in ${pusher}`);
    await waitFor(() => !processAlive(pusher), 10_000);
    assert.ok(!processAlive(pusher), "not stopped once the action was applied");
    const rejecter = await pidOf(tools.pid_preview);
    await sleep(IDLE_MS * 4);
    assert.ok(processAlive(rejecter), "stopped while its action was pending");
    assert.equal(text(await resolve(store, "discard", "no")), `rejected in ${rejecter}`);
    const first = await pidOf(tools.pid);
    const started = Date.now();
    assert.equal(await pidOf(tools.nap, { ms: 1200 }), first, "the long call ran in another process");
    assert.ok(Date.now() - started >= 1200);
  } finally {
    await factory.close();
  }
});

test("stopIdleAfterMs: Infinity never stops; a plugin that called keep_alive(true) is not stopped until it lets go", { timeout: SLOW }, async () => {
  let { factory, tools } = await load([plugin("fixture_crash")], { stopIdleAfterMs: Infinity });
  try {
    const pid = await pidOf(tools.pid);
    await sleep(1500);
    assert.ok(processAlive(pid));
    assert.equal(await pidOf(tools.pid), pid);
  } finally {
    await factory.close();
  }
  ({ factory, tools } = await load([plugin("fixture_crash")], { stopIdleAfterMs: IDLE_MS }));
  try {
    const kept = await pidOf(tools.keep_alive, { keep: true });
    await sleep(1500);
    assert.ok(processAlive(kept), "an opted-out process was stopped");
    assert.equal(await pidOf(tools.keep_alive, { keep: false }), kept);
    await waitFor(() => !processAlive(kept), 10_000);
    assert.ok(!processAlive(kept), "not stopped after letting go");
  } finally {
    await factory.close();
  }
});

test("a 0.2 plugin's idle process is stopped and restarted like any other", { timeout: SLOW }, async () => {
  const v02 = process.env.XCSH_TEST_V0_2_PLUGIN;
  if (!v02) return; // only the Rust test runner builds the frozen 0.2 fixture
  const before = childPids();
  const { factory, tools } = await load([v02], { stopIdleAfterMs: IDLE_MS });
  try {
    assert.equal(text(await tools.frozen_echo.execute("c", { text: "one" })), "echo: one");
    const first = childPids().filter((pid) => !before.includes(pid));
    assert.equal(first.length, 1, `${first}`);
    await waitFor(() => !processAlive(first[0]), 10_000);
    assert.ok(!processAlive(first[0]), "the 0.2 plugin's process was not stopped");
    assert.equal(text(await tools.frozen_echo.execute("c", { text: "two" })), "echo: two");
    const second = childPids().filter((pid) => !before.includes(pid));
    assert.equal(second.length, 1, `${second}`);
    assert.notEqual(second[0], first[0]);
  } finally {
    await factory.close();
  }
});

test("plugin log lines reach pi.logger", { timeout: SLOW }, async () => {
  for (const isolation of ["process", "in-process"]) {
    const lines = [];
    const logger = { info: (message) => lines.push(message), warn: (message) => lines.push(message) };
    const { factory, tools } = await load([plugin("fixture_journal")], { isolation, logger });
    try {
      await tools.journal_preview.execute("c", { journal: "journal.txt", entry: "logged" });
      await waitFor(() => lines.some((line) => line.includes("journal preview of logged")));
      assert.ok(lines.some((line) => line.includes("libfixture_journal.so")), `${lines}`);
    } finally {
      await factory.close();
    }
  }
});

test("a runtime that never calls close() still exits, and its plugin processes end with it", { timeout: SLOW }, () => {
  const script = `
    const { nativeToolFactory } = require(${JSON.stringify(path.join(__dirname, ".."))});
    (async () => {
      const factory = nativeToolFactory({ plugins: [${JSON.stringify(plugin("fixture_crash"))}], defaultDirs: false });
      const tools = await factory({ cwd: process.cwd(), pushPendingAction() {} });
      const pid = await tools.find((t) => t.name === "pid").execute("c", {});
      console.log(pid.content[0].text);
    })();`;
  const started = Date.now();
  const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 30_000, env: process.env });
  assert.equal(run.status, 0, run.stderr);
  assert.ok(Date.now() - started < 20_000, "exited on its own");
  const pid = Number(run.stdout.trim());
  assert.ok(pid > 0, run.stdout);
  const deadline = Date.now() + 5_000;
  while (processAlive(pid) && Date.now() < deadline) spawnSync("sleep", ["0.05"]);
  assert.ok(!processAlive(pid), "the plugin process did not outlive the runtime");
});

/// The children of this process, from `/proc/PID/task/*/children`.
function childPids() {
  const pids = [];
  for (const task of fs.readdirSync(`/proc/${process.pid}/task`)) {
    try {
      const list = fs.readFileSync(`/proc/${process.pid}/task/${task}/children`, "utf8");
      pids.push(...list.split(/\s+/).filter(Boolean).map(Number));
    } catch {
      // The thread ended.
    }
  }
  return pids.filter(processAlive);
}

function processAlive(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

async function waitFor(condition, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20));
}

test("damaged copies of a plugin loaded in process are load errors naming each file; the runtime goes on (issue 45)", { timeout: SLOW }, () => {
  // Changed copies of the sample plugin that took `node` down with SIGSEGV, or made it exit
  // from inside the dynamic loader, before each file was loaded first in a throwaway process
  // (seed 12345 of tests/tests/corrupt_libraries.rs, plus zeroed pages). Loaded in a child
  // `node`, so a crash would show as its exit status.
  const original = fs.readFileSync(plugin("batch_rename"));
  const dir = scratch();
  fs.chmodSync(dir, 0o755);
  const copies = [];
  const write = (name, bytes) => {
    const file = path.join(dir, `lib${name}.so`);
    fs.writeFileSync(file, bytes, { mode: 0o644 });
    copies.push(file);
  };
  for (let page = 1; page < original.length / 4096; page += Math.max(1, Math.floor(original.length / 4096 / 24))) {
    const bytes = Buffer.from(original);
    bytes.fill(0, page * 4096, (page + 1) * 4096);
    write(`zeroed_${page}`, bytes);
  }
  const phoff = Number(original.readBigUInt64LE(0x20));
  for (let i = 0; i < 16; i++) {
    const bytes = Buffer.from(original);
    bytes[phoff + 56 * (i % 10) + (i * 7) % 56] ^= 0xff; // one byte of a program header flipped
    write(`phdr_${i}`, bytes);
  }
  const script = `
    const { nativeToolFactory } = require(${JSON.stringify(path.join(__dirname, ".."))});
    (async () => {
      const factory = nativeToolFactory({ plugins: ${JSON.stringify(copies)}, defaultDirs: false, isolation: "in-process" });
      await factory({ cwd: ${JSON.stringify(dir)}, pushPendingAction() {} });
      console.log(JSON.stringify(factory.loadErrors.map((e) => e.message)));
      await factory.close();
    })();`;
  const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 120_000, env: { ...process.env, XCSH_CACHE_DIR: path.join(dir, "cache") } });
  assert.equal(run.status, 0, `node ended with ${run.status} ${run.signal}: ${run.stderr}`);
  const errors = JSON.parse(run.stdout.trim().split("\n").pop());
  for (const message of errors) {
    assert.ok(copies.some((file) => message.includes(file)), `an error naming no file: ${message}`);
  }
  // Which copies the header checks refuse and which the throwaway process catches depends on
  // the build's bytes; that some are refused, each naming its file, does not.
  assert.ok(errors.length > 0, "no copy was refused");
});

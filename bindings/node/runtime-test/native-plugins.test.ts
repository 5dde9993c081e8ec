// @xcsh/native-plugins inside xcsh's real upstream runtime, `@oh-my-pi/pi-coding-agent`
// (pinned in package.json), under Bun: the runtime's own loader (`loadCustomTools`), its
// resolution devices (`write` to `xd://resolve` / `xd://reject`, `dispatchResolutionDevice`),
// its approval gate, its session lifecycle (`onSession`), and one whole agent turn driven by
// its mock model provider. Real addon, real plugin `.so` files, real plugin processes.
//
// Run by `cargo test --test upstream_runtime` (tests/tests/upstream_runtime.rs), which builds
// the plugins and sets XCSH_TEST_PLUGIN_DIR, XCSH_TEST_V0_2_PLUGIN, XCSH_NATIVE_PLUGINS_ADDON,
// XCSH_PLUGIN_HOST and a scratch HOME. Nothing here reaches the network: the model is the
// runtime's mock, and `fetch` is a tripwire the last check reads.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

// Scratch projects live under this package, so that an extension file dropped into a project's
// `.omp/tools/` resolves `@xcsh/native-plugins` from this package's node_modules, as it would
// in a user's project.
const SCRATCH_ROOT = path.join(import.meta.dir, ".scratch");
fs.mkdirSync(SCRATCH_ROOT, { recursive: true });
const SCRATCH = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH_ROOT, "run-")));
// The runtime keeps its configuration under `~/<PI_CONFIG_DIR or .omp>`, resolved once at
// import (Bun fixes the home directory at startup): point it into the scratch directory first.
process.env.PI_CONFIG_DIR = path.relative(os.homedir(), path.join(SCRATCH, "omp-home"));
for (const name of ["PI_CODING_AGENT_DIR", "OMP_PROFILE", "PI_PROFILE", "CLAUDE_CONFIG_DIR"]) delete process.env[name];

const EXT = path.join(import.meta.dir, "ext");
const NATIVE = { path: path.join(EXT, "native-plugins.ts") };
const NATIVE_IN_PROCESS = { path: path.join(EXT, "native-plugins-in-process.ts") };
const NATIVE_SHORT_IDLE = { path: path.join(EXT, "native-plugins-short-idle.ts") };
const JS_PREVIEW = { path: path.join(EXT, "js-preview.ts") };
const PLUGIN_DIR = process.env.XCSH_TEST_PLUGIN_DIR!;
const STORE_UNAVAILABLE = "Pending action store unavailable for custom tools in this runtime.";
const SESSION_ENDED = "Session ended before this action was resolved.";

const fetchCalls: string[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = Object.assign(
  async (input: unknown) => {
    fetchCalls.push(String(input instanceof Request ? input.url : input));
    throw new Error("no network in the runtime tests");
  },
  { preconnect: () => {} },
) as unknown as typeof fetch;

/// The runtime's modules, imported after the configuration directory moved.
async function loadRuntime() {
  const [mock, customTools, resolve, queue, approval, sdk, settings, registry, auth, sessions, errors] = await Promise.all([
    import("@oh-my-pi/pi-ai/providers/mock"),
    import("@oh-my-pi/pi-coding-agent/extensibility/custom-tools"),
    import("@oh-my-pi/pi-coding-agent/tools/resolve"),
    import("@oh-my-pi/pi-coding-agent/session/tool-choice-queue"),
    import("@oh-my-pi/pi-coding-agent/tools/approval"),
    import("@oh-my-pi/pi-coding-agent/sdk"),
    import("@oh-my-pi/pi-coding-agent/config/settings"),
    import("@oh-my-pi/pi-coding-agent/config/model-registry"),
    import("@oh-my-pi/pi-coding-agent/session/auth-storage"),
    import("@oh-my-pi/pi-coding-agent/session/session-manager"),
    import("@oh-my-pi/pi-coding-agent/tools/tool-errors"),
  ]);
  mock.registerMockApi();
  return {
    ...mock,
    ...customTools,
    ...resolve,
    ...queue,
    ...approval,
    createAgentSession: sdk.createAgentSession,
    Settings: settings.Settings,
    ModelRegistry: registry.ModelRegistry,
    AuthStorage: auth.AuthStorage,
    SessionManager: sessions.SessionManager,
    ToolError: errors.ToolError,
  };
}
let rt: Awaited<ReturnType<typeof loadRuntime>>;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  rt = await loadRuntime();
}, 60_000);

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  globalThis.fetch = realFetch;
  fs.rmSync(SCRATCH, { recursive: true, force: true });
  expect(fetchCalls).toEqual([]);
});

type Tool = { name: string; [key: string]: any };
type Result = { content: Array<{ type: string; text?: string }>; details?: any; isError?: boolean };
const text = (result: Result) => result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
let projects = 0;
function project(): string {
  const dir = path.join(SCRATCH, `project-${projects++}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}
const journal = (cwd: string) => {
  const file = path.join(cwd, "journal.txt");
  return fs.existsSync(file) && fs.statSync(file).isFile() ? fs.readFileSync(file, "utf8").trim().split("\n") : [];
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/// Extension files loaded by the runtime's own loader, their pushes queued by its own
/// `queueResolveHandler` on a tool-choice queue; `session` is what the resolution devices need.
async function loadWithDevices(files: Array<{ path: string }>, cwd = project()) {
  const queue = new rt.ToolChoiceQueue();
  const session = {
    cwd,
    getToolChoiceQueue: () => queue,
    peekQueueInvoker: () => queue.peekInFlightInvoker(),
    peekPendingInvoker: () => queue.peekPendingInvoker(),
    clearPendingInvokers: () => queue.clearPendingInvokers(),
  } as any;
  const loaded = await rt.loadCustomTools(files, cwd, ["read", "write"], (action: any) => rt.queueResolveHandler(session, action));
  expect(loaded.errors).toEqual([]);
  const tools = Object.fromEntries(loaded.tools.map((entry: any) => [entry.tool.name, entry.tool as Tool]));
  const close = () => shutdown(Object.values(tools));
  closers.push(close);
  return { queue, session, tools, cwd, close };
}

/// What the runtime does at the end of a session: every loaded tool's `onSession` hears "shutdown".
async function shutdown(tools: Tool[]) {
  for (const tool of tools) await tool.onSession?.({ reason: "shutdown", previousSessionFile: undefined }, {});
}

const device = (session: any, name: "resolve" | "reject", reason: string) =>
  rt.dispatchResolutionDevice(session, name, reason).then(({ result }: { result: Result }) => result);

describe("loaded by the runtime's loadCustomTools", () => {
  test("every native tool is there, with its approval tier, strictness and load mode", async () => {
    const { tools } = await loadWithDevices([NATIVE]);
    expect(Object.keys(tools).sort()).toEqual(
      expect.arrayContaining(["batch_rename_preview", "journal_preview", "echo", "stack_preview", "pid", "ping"]),
    );
    // A preview only previews, and `echo` says it is read-only: "read". `pid` gives no hint:
    // "write". The extension's `approval` option makes `stack_preview` "exec".
    expect(tools.batch_rename_preview.approval).toBe("read");
    expect(tools.echo.approval).toBe("read");
    expect(tools.pid.approval).toBe("write");
    expect(tools.stack_preview.approval).toBe("exec");
    expect(tools.batch_rename_preview.strict).toBe(true); // tool_params!: additionalProperties false
    expect(tools.echo.strict).toBeUndefined();
    expect(tools.batch_rename_preview.loadMode).toBeUndefined(); // the runtime's default stands
    expect(new rt.CustomToolAdapter(tools.batch_rename_preview as any, () => ({}) as any).loadMode).toBe("discoverable");

    // The runtime's own gate, in its "write" mode: read and write tiers pass, exec asks.
    const gate = (tool: Tool) => rt.resolveApproval(tool as any, {}, "write").policy;
    expect(gate(tools.batch_rename_preview)).toBe("allow");
    expect(gate(tools.pid)).toBe("allow");
    expect(gate(tools.stack_preview)).toBe("prompt");
    expect(gate({ name: "no_approval" })).toBe("prompt"); // what every native tool was before
  });

  test("without the runtime's store, a native push fails with the runtime's own message", async () => {
    const cwd = project();
    const loaded = await rt.loadCustomTools([NATIVE], cwd, ["read", "write"]); // no pushPendingAction
    const tools = Object.fromEntries(loaded.tools.map((entry: any) => [entry.tool.name, entry.tool as Tool]));
    closers.push(() => shutdown(Object.values(tools)));
    await expect(tools.journal_preview.execute("c", { journal: "journal.txt", entry: "x" }, undefined, {})).rejects.toThrow(
      STORE_UNAVAILABLE,
    );
  });
});

describe("resolved through xd://resolve and xd://reject", () => {
  test("a native preview is applied, another discarded, LIFO across a JS preview and native ones", async () => {
    const { queue, session, tools, cwd } = await loadWithDevices([NATIVE, JS_PREVIEW]);
    for (const name of ["a1.txt", "a2.txt"]) fs.writeFileSync(path.join(cwd, name), name);
    await tools.batch_rename_preview.execute("c1", { files: ["a1.txt", "a2.txt"], find: "a", replace: "b" }, undefined, {});
    await tools.js_preview.execute("c2", { file: "js.txt", text: "from js" }, undefined, {});
    await tools.journal_preview.execute("c3", { journal: "journal.txt", entry: "one" }, undefined, {});
    expect(queue.peekPendingHead()!.sourceToolName).toBe("journal_preview");

    expect(text(await device(session, "resolve", "journal it"))).toBe("journaled one");
    expect(journal(cwd)).toEqual(["applied one: journal it"]);
    expect(text(await device(session, "reject", "not the JS one"))).toBe("Discarded: JS: write js.txt. Reason: not the JS one");
    expect(fs.existsSync(path.join(cwd, "js.txt"))).toBe(false);
    expect(text(await device(session, "resolve", "the plan is right"))).toBe("Applied batch rename. Reason: the plan is right");
    expect(fs.readdirSync(cwd).sort()).toEqual(["b1.txt", "b2.txt", "journal.txt"]);
    expect(queue.hasPendingInvoker).toBe(false);

    await tools.journal_preview.execute("c4", { journal: "journal.txt", entry: "two" }, undefined, {});
    expect(text(await device(session, "reject", "no"))).toBe("dropped two");
    expect(journal(cwd)).toEqual(["applied one: journal it", "rejected two: no"]);
  });

  for (const ext of [NATIVE, NATIVE_IN_PROCESS]) {
    const mode = ext === NATIVE ? "process isolation" : "in-process";
    test(`${mode}: a failed apply stays pending and xd://reject discards it; a retryable apply is retried`, async () => {
      const { queue, session, tools, cwd } = await loadWithDevices([ext]);
      const a1 = path.join(cwd, "a1.txt");

      // The table's first row: the file the preview renames is deleted, the apply fails, the
      // runtime keeps the preview pending; the reject runs the plugin's reject and clears it.
      fs.writeFileSync(a1, "one");
      await tools.batch_rename_preview.execute("c1", { files: ["a1.txt"], find: "a", replace: "b" }, undefined, {});
      const pending = queue.peekPendingHead()!.id;
      fs.rmSync(a1);
      await expect(device(session, "resolve", "go")).rejects.toThrow("Apply failed: nothing was changed: source a1.txt no longer exists");
      expect(queue.peekPendingHead()!.id).toBe(pending);
      expect(text(await device(session, "reject", "the file is gone"))).toBe("Discarded batch rename. Reason: the file is gone");
      expect(queue.hasPendingInvoker).toBe(false);

      // batch_rename's apply is retryable: restore the file and apply again.
      fs.writeFileSync(a1, "one");
      await tools.batch_rename_preview.execute("c2", { files: ["a1.txt"], find: "a", replace: "b" }, undefined, {});
      fs.rmSync(a1);
      await expect(device(session, "resolve", "go")).rejects.toThrow("source a1.txt no longer exists");
      fs.writeFileSync(a1, "one");
      expect(text(await device(session, "resolve", "restored"))).toBe("Applied batch rename. Reason: restored");
      expect(fs.existsSync(path.join(cwd, "b1.txt"))).toBe(true);
      expect(queue.hasPendingInvoker).toBe(false);

      // journal_preview's apply is not retryable: applying again names the first failure and
      // says what to do; the reject still runs.
      fs.mkdirSync(path.join(cwd, "journal.txt"));
      await tools.journal_preview.execute("c3", { journal: "journal.txt", entry: "one" }, undefined, {});
      const first = await device(session, "resolve", "go").then(
        () => "",
        (error: Error) => error.message,
      );
      expect(first).toStartWith("Apply failed: ");
      const again = await device(session, "resolve", "again").then(
        () => "",
        (error: Error) => error.message,
      );
      expect(again).toContain('Pending action "Journal: one" was not applied: its apply failed (');
      expect(again).toContain(first.slice("Apply failed: ".length));
      expect(again).toContain("Discard it, then preview the change again.");
      expect(again).not.toContain("already applied");
      fs.rmdirSync(path.join(cwd, "journal.txt"));
      expect(text(await device(session, "reject", "give up"))).toBe("dropped one");
      expect(journal(cwd)).toEqual(["rejected one: give up"]);
      expect(queue.hasPendingInvoker).toBe(false);

      // A 0.2 plugin's apply took its reject too: the runtime's own "Discarded" text stands.
      if (process.env.XCSH_TEST_V0_2_PLUGIN) {
        await tools.frozen_preview.execute("c4", { text: "fail-me" }, undefined, {});
        await expect(device(session, "resolve", "go")).rejects.toThrow("apply of fail-me failed on purpose");
        expect(text(await device(session, "reject", "old plugin"))).toBe("Discarded: Frozen: write fail-me. Reason: old plugin");
        expect(queue.hasPendingInvoker).toBe(false);
      }
    });
  }
});

/// An agent session made through the runtime's SDK, its model the runtime's mock provider.
async function agentSession(options: {
  cwd: string;
  responses: any[];
  tools?: Array<{ path: string }>;
  settings?: Record<string, unknown>;
  /** A file-backed session store (under the agent's scratch directory) instead of memory. */
  files?: boolean;
}) {
  const dir = fs.mkdtempSync(path.join(SCRATCH, "agent-"));
  const authStorage = await rt.AuthStorage.create(path.join(dir, "auth.db"));
  authStorage.setRuntimeApiKey("mock", "test-key");
  const modelRegistry = new rt.ModelRegistry(authStorage, path.join(dir, "models.yml"));
  const mock = rt.createMockModel({ responses: options.responses, handler: () => ({ content: ["(the script ended)"] }) });
  const { session } = await rt.createAgentSession({
    cwd: options.cwd,
    agentDir: path.join(dir, "agent"),
    sessionManager: options.files
      ? rt.SessionManager.create(options.cwd, path.join(dir, "sessions"))
      : rt.SessionManager.inMemory(options.cwd),
    authStorage,
    modelRegistry,
    settings: rt.Settings.isolated({
      "compaction.enabled": false,
      "todo.enabled": false,
      "retry.enabled": false,
      ...options.settings,
    } as never),
    model: mock,
    disableExtensionDiscovery: true,
    skills: [],
    rules: [],
    contextFiles: [],
    promptTemplates: [],
    slashCommands: [],
    workspaceTree: { rootPath: options.cwd, rendered: "", truncated: false, totalLines: 0, agentsMdFiles: [] },
    enableMCP: false,
    enableLsp: false,
    skipPythonPreflight: true,
    ...(options.tools ? { preloadedCustomToolPaths: options.tools } : {}),
  });
  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    await session.dispose();
    authStorage.close();
  };
  closers.push(dispose);
  return { session, mock, dispose };
}

const call = (name: string, args: Record<string, unknown>) => ({ content: [{ type: "toolCall", name, arguments: args }] });
const write = (file: string, content: string) => call("write", { path: file, content });
const say = (words: string) => ({ content: [words] });
const results = (session: any) => (session.messages as any[]).filter((message) => message.role === "toolResult");

describe("in an agent session", () => {
  test("one agent turn: the model previews natively, the runtime steers it to xd://resolve, the files are renamed", async () => {
    // The one file a user drops into the project: exactly the guide's (docs/guide/src/runtime.md).
    const cwd = project();
    fs.mkdirSync(path.join(cwd, ".omp", "tools"), { recursive: true });
    fs.writeFileSync(
      path.join(cwd, ".omp", "tools", "native-plugins.ts"),
      `import { nativeToolFactory } from "@xcsh/native-plugins";\n\n` +
        `export default nativeToolFactory({ plugins: [${JSON.stringify(path.join(PLUGIN_DIR, "libbatch_rename.so"))}] });\n`,
    );
    for (const name of ["a1.txt", "a2.txt"]) fs.writeFileSync(path.join(cwd, name), name);
    const { session, mock, dispose } = await agentSession({
      cwd, // no preloaded paths: the runtime discovers .omp/tools/ itself
      responses: [
        write("xd://batch_rename_preview", JSON.stringify({ files: ["a1.txt", "a2.txt"], find: "a", replace: "b" })),
        say("I have previewed the renames."),
        write("xd://resolve", "The user asked for these renames."),
        say("Done."),
      ],
    });
    await session.prompt("Rename a1.txt and a2.txt so that they start with b.");

    expect(mock.calls.length).toBe(4);
    // After the preview the runtime reminds the model, then, as it did not resolve, forces `write`.
    expect(JSON.stringify(mock.calls[1]!.context.messages.at(-1))).toContain("`batch_rename_preview` result above: PREVIEW");
    expect(mock.calls[2]!.options?.toolChoice).toEqual({ type: "tool", name: "write" });
    const [preview, resolved] = results(session);
    expect(preview.isError).toBeFalsy();
    expect(text(preview)).toContain("a1.txt -> b1.txt");
    expect(preview.details.xdev).toMatchObject({ tool: "batch_rename_preview", tier: "read" });
    expect(text(resolved)).toBe("Applied batch rename. Reason: The user asked for these renames.");
    expect(resolved.details.xdev.inner).toMatchObject({ action: "apply", sourceToolName: "batch_rename_preview", label: "Batch rename: 2 files" });
    expect(fs.readdirSync(cwd).filter((name) => name.endsWith(".txt")).sort()).toEqual(["b1.txt", "b2.txt"]);
    expect(session.toolChoiceQueue.hasPendingInvoker).toBe(false);
    await dispose();
  });

  test("the approval gate in its write mode: a write-tier native tool runs, one made exec is refused", async () => {
    const cwd = project();
    const { session, dispose } = await agentSession({
      cwd,
      tools: [NATIVE],
      settings: { "tools.approvalMode": "write" },
      responses: [call("pid", {}), call("stack_preview", { count: 1 }), say("ok")],
    });
    await session.prompt("go");
    const [pid, stack] = results(session);
    expect(pid.isError).toBeFalsy();
    expect(Number(text(pid))).toBeGreaterThan(0);
    expect(stack.isError).toBe(true);
    expect(text(stack)).toStartWith('Tool "stack_preview" requires approval but no interactive UI available.');
    expect(session.toolChoiceQueue.hasPendingInvoker).toBe(false); // it never ran, so nothing was pushed
    await dispose();
  });

  test("onSession shutdown: the ended session's native actions are rejected and its plugin processes end; another session goes on", async () => {
    const stage = (entry: string) => [
      call("pid", {}),
      call("journal_preview", { journal: "journal.txt", entry }),
      say("I will decide later."),
      say("Later."),
      say("Still later."),
      say("Not now."), // the runtime gives up forcing after three forced turns; the action stays pending
    ];
    const [mainCwd, subCwd] = [project(), project()];
    const main = await agentSession({ cwd: mainCwd, tools: [NATIVE], responses: [...stage("main"), write("xd://resolve", "now"), say("done")] });
    const sub = await agentSession({ cwd: subCwd, tools: [NATIVE], responses: stage("sub") });
    await main.session.prompt("stage main");
    await sub.session.prompt("stage sub");
    const pidOf = (session: any) => Number(text(results(session)[0]));
    const [mainPid, subPid] = [pidOf(main.session), pidOf(sub.session)];
    expect(mainPid).not.toBe(subPid);
    expect(sub.session.toolChoiceQueue.hasPendingInvoker).toBe(true);

    await sub.dispose(); // the runtime's shutdown: onSession({reason: "shutdown"}) for each tool
    expect(journal(subCwd)).toEqual([`rejected sub: ${SESSION_ENDED}`]);
    for (let waited = 0; alive(subPid) && waited < 50; waited++) await Bun.sleep(20);
    expect(alive(subPid)).toBe(false);

    expect(alive(mainPid)).toBe(true);
    await main.session.prompt("apply it");
    expect(journal(mainCwd)).toEqual(["applied main: now"]);
    await main.dispose();
    for (let waited = 0; alive(mainPid) && waited < 50; waited++) await Bun.sleep(20);
    expect(alive(mainPid)).toBe(false);
  });
});

/// The plugin processes running `plugin` (an `xcsh-plugin-host --path …/plugin`), by pid: the
/// ones the host started (each forks twice into a PID namespace of its own, the same command
/// line; those below are left out).
function hostsOf(plugin: string): Set<number> {
  const all = new Map<number, number>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (!cmdline.includes("--path") || !cmdline.includes(plugin)) continue;
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      all.set(Number(name), parent);
    } catch {
      // gone meanwhile
    }
  }
  return new Set([...all].filter(([, parent]) => !all.has(parent)).map(([pid]) => pid));
}

describe("when the conversation moves on (/new, /resume, a branch, fork, /tree)", () => {
  const MOVED_ON = (how: string) => `The conversation moved on (${how}) before this action was resolved.`;
  for (const ext of [NATIVE_SHORT_IDLE, NATIVE_IN_PROCESS]) {
    const isolated = ext === NATIVE_SHORT_IDLE;
    const mode = isolated ? "process isolation" : "in-process";
    test(`${mode}: /new, /resume and a branch reject the native action before they return; fork and /tree keep it for xd://resolve`, async () => {
      const cwd = project();
      const earlier = hostsOf("libfixture_journal.so"); // other tests' plugin processes
      const { session, mock, dispose } = await agentSession({ cwd, tools: [ext], files: true, responses: [] });
      // Each prompt's script: the model stages (or resolves), then the mock's fallback answers in
      // words, so the runtime's forcing gives up and the actions stay pending.
      const stage = async (entry: string) => {
        mock.push(call("journal_preview", { journal: "journal.txt", entry }) as any);
        await session.prompt(`stage ${entry}`);
        expect(session.toolChoiceQueue.hasPendingInvoker).toBe(true);
        return [...hostsOf("libfixture_journal.so")].filter((pid) => !earlier.has(pid));
      };
      const resolveNow = async () => {
        mock.push(write("xd://resolve", "now") as any);
        await session.prompt("apply it");
        return text(results(session).at(-1));
      };
      const lines: string[] = [];
      const expectJournal = (line?: string) => {
        if (line) lines.push(line);
        expect(journal(cwd)).toEqual(lines);
      };
      const stoppedSoon = async (pids: number[]) => {
        for (let waited = 0; pids.some(alive) && waited < 150; waited++) await Bun.sleep(20);
        expect(pids.filter(alive)).toEqual([]);
      };

      // /new: the runtime empties its queue; the native reject has run when newSession returns.
      const first = session.sessionFile!;
      const hosts = await stage("one");
      if (isolated) expect(hosts.length).toBe(1);
      expect(await session.newSession()).toBe(true);
      expectJournal(`rejected one: ${MOVED_ON("/new")}`);
      expect(session.toolChoiceQueue.hasPendingInvoker).toBe(false);
      // Nothing of the left conversation can be applied from the new one.
      expect(await resolveNow()).not.toContain("journaled");
      expectJournal();
      // Its plugin process has nothing pending: stopped once idle.
      if (isolated) await stoppedSoon(hosts);

      // The native tools work in the new conversation; /resume rejects what it staged.
      await stage("two");
      expect(await session.switchSession(first)).toBe(true);
      expectJournal(`rejected two: ${MOVED_ON("/resume")}`);
      expect(session.toolChoiceQueue.hasPendingInvoker).toBe(false);

      // A branch from an earlier message.
      await stage("three");
      const users = session.sessionManager.getBranch().filter((e: any) => e.type === "message" && e.message.role === "user");
      const result = await session.branch(users.at(-1).id);
      expect(result.cancelled).toBe(false);
      expectJournal(`rejected three: ${MOVED_ON("a branch from an earlier message")}`);
      expect(session.toolChoiceQueue.hasPendingInvoker).toBe(false);

      // fork: the runtime keeps the preview; xd://resolve applies it.
      await stage("four");
      const beforeFork = session.sessionFile;
      expect(await session.fork()).toBe(true);
      expect(session.sessionFile).not.toBe(beforeFork);
      expectJournal();
      expect(session.toolChoiceQueue.hasPendingInvoker).toBe(true);
      expect(await resolveNow()).toContain("journaled four");
      expectJournal("applied four: now");

      // /tree back past the message that staged it: still queued, still applied.
      await stage("five");
      const staged = session.sessionManager.getBranch().filter((e: any) => e.type === "message" && e.message.role === "user").at(-1);
      await session.navigateTree(staged.parentId);
      expectJournal();
      expect(session.toolChoiceQueue.hasPendingInvoker).toBe(true);
      expect(await resolveNow()).toContain("journaled five");
      expectJournal("applied five: now");

      // shutdown still rejects what is left.
      await stage("six");
      await dispose();
      expectJournal(`rejected six: Session ended before this action was resolved.`);
    });
  }
});

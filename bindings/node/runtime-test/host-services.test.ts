// Host services inside xcsh's real upstream runtime (issue 43), under Bun: native tools ask
// the runtime's own UI (an extension context's `ui`, as the RPC mode and the terminal give
// it), complete through the session's model (the runtime's mock provider), and hear every
// session event, rebuilding their state from their earlier results after a branch and a
// resume. The native plugins are loaded as the guide (docs/guide/src/runtime.md) says a user loads them: the same file
// as custom tools and as an extension. Real addon, real plugins, in plugin processes and
// in-process.
//
// Run by `cargo test --test upstream_runtime` (tests/tests/upstream_runtime.rs).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const SCRATCH_ROOT = path.join(import.meta.dir, ".scratch");
fs.mkdirSync(SCRATCH_ROOT, { recursive: true });
const SCRATCH = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH_ROOT, "services-")));
process.env.PI_CONFIG_DIR = path.relative(os.homedir(), path.join(SCRATCH, "omp-home"));
for (const name of ["PI_CODING_AGENT_DIR", "OMP_PROFILE", "PI_PROFILE", "CLAUDE_CONFIG_DIR"]) delete process.env[name];

const EXT = path.join(import.meta.dir, "ext");
const EXTENSIONS = [
  { mode: "process isolation", file: path.join(EXT, "native-services.ts") },
  { mode: "in-process", file: path.join(EXT, "native-services-in-process.ts") },
];

const fetchCalls: string[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = Object.assign(
  async (input: unknown) => {
    fetchCalls.push(String(input instanceof Request ? input.url : input));
    throw new Error("no network in the runtime tests");
  },
  { preconnect: () => {} },
) as unknown as typeof fetch;

async function loadRuntime() {
  const [mock, sdk, settings, registry, auth, sessions, init] = await Promise.all([
    import("@oh-my-pi/pi-ai/providers/mock"),
    import("@oh-my-pi/pi-coding-agent/sdk"),
    import("@oh-my-pi/pi-coding-agent/config/settings"),
    import("@oh-my-pi/pi-coding-agent/config/model-registry"),
    import("@oh-my-pi/pi-coding-agent/session/auth-storage"),
    import("@oh-my-pi/pi-coding-agent/session/session-manager"),
    import("@oh-my-pi/pi-coding-agent/modes/runtime-init"),
  ]);
  mock.registerMockApi();
  return {
    ...mock,
    createAgentSession: sdk.createAgentSession,
    Settings: settings.Settings,
    ModelRegistry: registry.ModelRegistry,
    AuthStorage: auth.AuthStorage,
    SessionManager: sessions.SessionManager,
    initializeExtensions: init.initializeExtensions,
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

type Result = { content: Array<{ type: string; text?: string }>; details?: any; isError?: boolean };
const text = (result: Result) => result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
let projects = 0;
function project(): string {
  const dir = path.join(SCRATCH, `project-${projects++}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/// A UI as the runtime's RPC mode and terminal give extensions, scripted: every dialog is
/// recorded, and answered by `answer` (undefined: dismissed).
function scriptedUi(answer: (method: string, title: string, detail: unknown) => unknown) {
  const dialogs: Array<{ method: string; title: string; detail: unknown }> = [];
  const ask = (method: string) => async (title: string, detail: unknown) => {
    dialogs.push({ method, title, detail });
    return answer(method, title, detail);
  };
  const ui = {
    select: ask("select"),
    confirm: ask("confirm"),
    input: ask("input"),
    notify: (message: string, type?: string) => dialogs.push({ method: "notify", title: message, detail: type }),
    onTerminalInput: () => () => {},
    setStatus: (key: string, value: unknown) => dialogs.push({ method: "setStatus", title: key, detail: value }),
    setWorkingMessage: () => {},
    setWidget: () => {},
    setFooter: () => {},
    setHeader: () => {},
    setTitle: () => {},
    custom: async () => undefined,
    setEditorText: () => {},
    pasteToEditor: () => {},
    getEditorText: () => "",
    editor: async () => undefined,
    addAutocompleteProvider: () => {},
    setEditorComponent: () => {},
    theme: undefined,
    getAllThemes: () => Promise.resolve([]),
    getTheme: () => Promise.resolve(undefined),
    setTheme: () => Promise.resolve({ success: false, error: "UI not available" }),
    getToolsExpanded: () => false,
    setToolsExpanded: () => {},
  };
  return { ui, dialogs };
}

/// An agent session whose native plugins are `file`, loaded as custom tools and as an
/// extension, with `ui` as its extensions' UI (as `--mode rpc` initializes it) and the mock
/// model answering `responses`, then its fallback.
async function agentSession(options: { cwd: string; file: string; responses: any[]; ui: unknown; files?: boolean }) {
  const dir = fs.mkdtempSync(path.join(SCRATCH, "agent-"));
  const authStorage = await rt.AuthStorage.create(path.join(dir, "auth.db"));
  authStorage.setRuntimeApiKey("mock", "test-key");
  const modelRegistry = new rt.ModelRegistry(authStorage, path.join(dir, "models.yml"));
  const mock = rt.createMockModel({ responses: options.responses, handler: () => ({ content: ["(the script ended)"] }) });
  const extension = (await import(options.file)).default;
  const { session } = await rt.createAgentSession({
    cwd: options.cwd,
    agentDir: path.join(dir, "agent"),
    sessionManager: options.files
      ? rt.SessionManager.create(options.cwd, path.join(dir, "sessions"))
      : rt.SessionManager.inMemory(options.cwd),
    authStorage,
    modelRegistry,
    settings: rt.Settings.isolated({ "compaction.enabled": false, "todo.enabled": false, "retry.enabled": false } as never),
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
    preloadedCustomToolPaths: [{ path: options.file }],
    extensions: [extension],
  });
  await rt.initializeExtensions(session, {
    mode: "rpc",
    uiContext: options.ui as never,
    reportSendError: () => {},
    reportRuntimeError: () => {},
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
const say = (words: string) => ({ content: [words] });
const results = (session: any) => (session.messages as any[]).filter((message) => message.role === "toolResult");
const lastResult = (session: any) => results(session).at(-1);

for (const { mode, file } of EXTENSIONS) {
  describe(`${mode}: native tools and the runtime's host services`, () => {
    test("the runtime's UI answers the sample's confirmation; no means nothing is planned", async () => {
      const cwd = project();
      const files: string[] = [];
      for (let i = 0; i < 21; i++) {
        files.push(`a${i}.txt`);
        fs.writeFileSync(path.join(cwd, `a${i}.txt`), "x");
      }
      const { ui, dialogs } = scriptedUi((method) => (method === "confirm" ? false : undefined));
      const { session, dispose } = await agentSession({
        cwd,
        file,
        ui,
        responses: [call("batch_rename_preview", { files, find: "a", replace: "b" }), say("Not renamed.")],
      });
      await session.prompt("Rename every a file to b.");
      expect(text(lastResult(session))).toBe("The user declined renaming 21 files; nothing was planned.");
      const asked = dialogs.filter((dialog) => dialog.method === "confirm");
      expect(asked.length).toBe(1);
      expect(asked[0].title).toBe("Batch rename");
      expect(String(asked[0].detail)).toStartWith("Plan renaming 21 files");
      expect(session.toolChoiceQueue.hasPendingInvoker).toBe(false);
      await dispose();
    });

    test("complete goes to the session's model (the runtime's mock)", async () => {
      const { ui } = scriptedUi(() => undefined);
      const { session, mock, dispose } = await agentSession({
        cwd: project(),
        file,
        ui,
        responses: [call("test_sampling", { prompt: "Say hello" }), say("hello from the session's model"), say("Done.")],
      });
      await session.prompt("Sample something.");
      expect(text(lastResult(session))).toBe("LLM response: hello from the session's model");
      // The tool's request reached the model as a user message.
      const asked = mock.calls.map((c: any) => JSON.stringify(c.context.messages));
      expect(asked.some((messages: string) => messages.includes("Say hello"))).toBe(true);
      await dispose();
    });

    test("every session event reaches on_session; the todo list is rebuilt after a branch and a resume", async () => {
      const cwd = project();
      const { ui } = scriptedUi(() => undefined);
      const { session, mock, dispose } = await agentSession({ cwd, file, ui, files: true, responses: [] });
      const todo = async (args: Record<string, unknown>) => {
        mock.push(call("todo", args) as any);
        mock.push(say("ok") as any);
        await session.prompt(`todo ${JSON.stringify(args)}`);
        const result = lastResult(session);
        expect(result.toolName).toBe("todo");
        return result;
      };
      expect(text(await todo({ action: "add", item: "a" }))).toBe("todo: [a]");
      expect(text(await todo({ action: "add", item: "b" }))).toBe("todo: [a, b]");

      // A branch from the second request: the conversation where only `a` was added.
      const users = session.sessionManager.getBranch().filter((e: any) => e.type === "message" && e.message.role === "user");
      const branched = await session.branch(users[1].id);
      expect(branched.cancelled).toBe(false);
      expect(text(await todo({ action: "list" }))).toBe("todo: [a]");
      const first = session.sessionFile!;

      // /new: nothing on the new conversation's branch.
      expect(await session.newSession()).toBe(true);
      expect(text(await todo({ action: "list" }))).toBe("todo: []");
      expect(text(await todo({ action: "add", item: "z" }))).toBe("todo: [z]");

      // /resume the first: its list again.
      expect(await session.switchSession(first)).toBe(true);
      expect(text(await todo({ action: "list" }))).toBe("todo: [a]");

      // A fork keeps the conversation (and the list); /tree moves within it.
      expect(await session.fork()).toBe(true);
      const entries = session.sessionManager.getBranch();
      const navigated = await session.navigateTree(entries[0].id, { summarize: false });
      expect(navigated.cancelled).toBe(false);
      const heard = (await todo({ action: "list" })).details.heard as string[];
      for (const reason of ["start", "branch", "switch", "tree"]) expect(heard).toContain(reason);
      expect(heard.filter((reason) => reason === "switch").length).toBeGreaterThanOrEqual(3);

      // The end of the session reaches it too (it writes what it heard at shutdown).
      await dispose();
      for (let waited = 0; !fs.existsSync(path.join(cwd, "todo-heard.txt")) && waited < 150; waited++) await Bun.sleep(20);
      const atShutdown = fs.readFileSync(path.join(cwd, "todo-heard.txt"), "utf8").trim().split("\n");
      expect(atShutdown.at(-1)).toBe("shutdown");
    });
  });
}

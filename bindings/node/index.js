// @xcsh/native-plugins: xcsh native tool plugins (Rust shared libraries) as xcsh custom tools,
// loaded in this process through a Node-API addon, their pending actions pushed onto the
// runtime's own store.
//
// This file is the whole public surface (see index.d.ts): it checks options, finds the addon
// and the plugin host executable, and turns the addon's session into `CustomTool`s. Every
// loading, isolation and validation rule is the Rust loader's.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const host = require("./host.js");
const views = require("./view.js");
const platform = require("./platform.js");

const ADDON_ENV = "XCSH_NATIVE_PLUGINS_ADDON";
const HOST_BIN = process.platform === "win32" ? "xcsh-plugin-host.exe" : "xcsh-plugin-host";
const OPTION_NAMES = [
  "plugins",
  "defaultDirs",
  "isolation",
  "timeoutMs",
  "memoryLimit",
  "allowWrite",
  "allowRead",
  "passEnv",
  "denyNetwork",
  "stopIdleAfterMs",
  "approval",
  "loadMode",
];
const ISOLATION_MODES = ["process", "in-process"];
const APPROVAL_TIERS = ["read", "write", "exec"];
const LOAD_MODES = ["essential", "discoverable"];

let loaded = null;

/// The platform package's directory, or null when it is not installed.
function resolvePackage(name) {
  try {
    return path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

/// The addon's file: `XCSH_NATIVE_PLUGINS_ADDON` when set, else the first that exists of the
/// platform package (`@xcsh/native-plugins-<platform>`), the `native/` folder of a local
/// `npm pack`, and the repository's cargo build (platform.js).
function addonFile() {
  const explicit = process.env[ADDON_ENV];
  if (explicit) {
    if (fs.existsSync(explicit)) return explicit;
    throw new Error(`@xcsh/native-plugins: ${ADDON_ENV} names ${explicit}, which does not exist`);
  }
  const target = platform.targetOf(process.platform, process.arch, platform.detectLibc());
  const candidates = platform.addonCandidates(target, __dirname, resolvePackage);
  const found = candidates.find(({ file }) => file !== null && fs.existsSync(file));
  if (!found) throw new Error(platform.missingAddonMessage(target, candidates, ADDON_ENV));
  return found.file;
}

/// The addon and the directory it was found in (where `xcsh-plugin-host` sits too).
function addon() {
  if (loaded) return loaded;
  const file = addonFile();
  const module = { exports: {} };
  // `process.dlopen` loads a Node-API library whatever its file name (`require` wants `.node`).
  process.dlopen(module, file);
  loaded = { native: module.exports, dir: path.dirname(file) };
  return loaded;
}

/// `xcsh-plugin-host` from the same build as the addon: beside it. `XCSH_PLUGIN_HOST` wins.
function pluginHost(dir) {
  if (process.env.XCSH_PLUGIN_HOST) return process.env.XCSH_PLUGIN_HOST;
  const beside = path.join(dir, HOST_BIN);
  return fs.existsSync(beside) ? beside : undefined;
}

function optionError(name, accepts, value) {
  let shown;
  try {
    shown = typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    shown = typeof value;
  }
  return new TypeError(`nativeToolFactory: option \`${name}\` must be ${accepts}, got ${shown}`);
}

function stringList(name, value) {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item === "")) {
    throw optionError(name, "an array of non-empty path strings", value);
  }
  return value.slice();
}

/// Names of environment variables for `passEnv`: a name, or a prefix and a trailing `*`
/// (the CLI's `--pass-env`); `*` alone would pass the host's secrets, and is refused.
const ENV_PATTERN = /^[^=*\0]+\*?$/;

function envNames(name, value) {
  if (value === undefined) return [];
  if (
    !Array.isArray(value) ||
    value.some((item) => typeof item !== "string" || !ENV_PATTERN.test(item))
  ) {
    throw optionError(
      name,
      'an array of variable names, each a name ("GITHUB_TOKEN") or a prefix and `*` ("MYTOOL_*")',
      Array.isArray(value) ? JSON.stringify(value) : value,
    );
  }
  return value.slice();
}

function boolean(name, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw optionError(name, "a boolean", value);
  return value;
}

/// An approval as xcsh's runtime takes it (`ToolApproval`): a tier, `{tier, ...}`, or a
/// function of the arguments returning either.
function isApproval(value) {
  if (typeof value === "function") return true;
  if (typeof value === "string") return APPROVAL_TIERS.includes(value);
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    APPROVAL_TIERS.includes(value.tier)
  );
}

/// `approval`: per tool name, the runtime's approval that replaces the plugin's own tier.
function approvalOverrides(value) {
  if (value === undefined) return new Map();
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw optionError("approval", 'an object mapping tool names to "read", "write" or "exec"', value);
  }
  const overrides = new Map();
  for (const [name, approval] of Object.entries(value)) {
    if (!isApproval(approval)) {
      throw optionError(
        `approval.${name}`,
        '"read", "write", "exec", an object with such a `tier`, or a function returning one',
        approval,
      );
    }
    overrides.set(name, approval);
  }
  return overrides;
}

/// The user's options, checked and normalised, before anything loads.
function checkOptions(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError("nativeToolFactory: options must be an object");
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.includes(key)) {
      throw new TypeError(
        `nativeToolFactory: unknown option \`${key}\`; the options are ${OPTION_NAMES.join(", ")}`,
      );
    }
  }
  const isolation = options.isolation === undefined ? "process" : options.isolation;
  if (!ISOLATION_MODES.includes(isolation)) {
    throw optionError("isolation", '"process" or "in-process"', isolation);
  }
  const timeoutMs = options.timeoutMs;
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
  ) {
    throw optionError("timeoutMs", "a positive number of milliseconds", timeoutMs);
  }
  // `Infinity` never stops an idle plugin process; `0` is refused (it would not say whether it
  // means "never" or "at once").
  const stopIdleAfterMs = options.stopIdleAfterMs;
  if (
    stopIdleAfterMs !== undefined &&
    (typeof stopIdleAfterMs !== "number" ||
      Number.isNaN(stopIdleAfterMs) ||
      stopIdleAfterMs < 1)
  ) {
    throw optionError(
      "stopIdleAfterMs",
      "a number of milliseconds (at least 1), or Infinity for never",
      stopIdleAfterMs,
    );
  }
  let memoryLimit;
  if (options.memoryLimit !== undefined) {
    const value = options.memoryLimit;
    if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) {
      memoryLimit = String(value);
    } else if (typeof value === "string") {
      const { native } = addon(); // outside the try: a missing addon is not a bad option
      try {
        native.parseSize(value);
      } catch {
        throw optionError(
          "memoryLimit",
          "a positive number of bytes or a size such as \"512M\" or \"2G\"",
          value,
        );
      }
      memoryLimit = value;
    } else {
      throw optionError(
        "memoryLimit",
        "a positive number of bytes or a size such as \"512M\" or \"2G\"",
        value,
      );
    }
  }
  if (options.loadMode !== undefined && !LOAD_MODES.includes(options.loadMode)) {
    throw optionError("loadMode", '"essential" or "discoverable"', options.loadMode);
  }
  return {
    approval: approvalOverrides(options.approval),
    loadMode: options.loadMode,
    plugins: stringList("plugins", options.plugins),
    defaultDirs: boolean("defaultDirs", options.defaultDirs, true),
    isolation,
    timeoutMs,
    memoryLimit,
    allowWrite: stringList("allowWrite", options.allowWrite),
    allowRead: stringList("allowRead", options.allowRead),
    passEnv: envNames("passEnv", options.passEnv),
    denyNetwork: boolean("denyNetwork", options.denyNetwork, false),
    stopIdleAfterMs,
  };
}

/// The message of whatever `who` threw.
function messageOf(thrown, who) {
  if (thrown instanceof Error && thrown.message) return thrown.message;
  if (typeof thrown === "string" && thrown) return thrown;
  return `${who} threw ${String(thrown)}`;
}

function parseResult(json) {
  return json === null || json === undefined ? undefined : JSON.parse(json);
}

/// Whether `schema` is closed throughout: every object schema in it with `properties` refuses
/// others (`additionalProperties: false`, what `tool_params!` derives), so the runtime may send
/// it to providers in strict mode.
function isStrictSchema(schema) {
  if (schema === null || typeof schema !== "object" || schema.type !== "object") return false;
  const closed = (node) => {
    if (Array.isArray(node)) return node.every(closed);
    if (node === null || typeof node !== "object") return true;
    if (node.properties && typeof node.properties === "object" && node.additionalProperties !== false) {
      return false;
    }
    return Object.values(node).every(closed);
  };
  return closed(schema);
}

/// The runtime's tier for a tool: `"read"` when its plugin annotates it read-only, otherwise
/// `"write"` (a native tool runs no shell of the runtime's; what it changes goes through its
/// plugin, or through a pending action the model resolves).
function defaultApproval(spec) {
  return spec.readOnly === true ? "read" : "write";
}

/// Log through `pi.logger` when it has the method (or `log`); never throws.
function logTo(logger, level, message) {
  if (!logger) return;
  try {
    const method = typeof logger[level] === "function" ? logger[level] : logger.log;
    if (typeof method === "function") method.call(logger, message);
  } catch {
    // A broken logger must not break loading.
  }
}

// What xcsh's runtime does with the native actions it holds when its conversation changes,
// read from `@oh-my-pi/pi-coding-agent` 18.2.3 (the guide, docs/guide/src/runtime.md, "Which rule
// holds where"). This is the one place the binding follows it.
//
// The runtime queues each push on its tool-choice queue (tools/resolve.ts,
// `queueResolveHandler`) and empties that queue, calling no `reject`, in
// `#clearSessionScopedToolState` (session/agent-session.ts), which `newSession()` (/new),
// `switchSession()` to another file (/resume) and `branch()` call, and `fork()` and
// `navigateTree()` (/tree) do not. Custom tools cannot see that queue (they get
// `pushPendingAction`; their `onSession` context has `sessionManager`, `model`, ... but not
// the queue), and `onSession` says "switch" for /new, /resume and fork alike (sdk.ts,
// `createCustomToolsExtension`), so the adapter reads which of them happened from the session
// record. Whether the tool call that staged an action is still on the branch is not that
// signal: /tree keeps the action queued when it leaves that call behind, and `branch()` from
// a later message empties the queue with the call still on the branch. What the record does
// say exactly: `sessionManager.fork()` mints a new session id, names the previous one as the
// header's `parentSession` and keeps the same entry objects; /new and /resume change the id
// and load other entries (a resumed fork child of this session has that parent too, but its
// entries are read from its file, not the ones in memory); reloading the same file keeps the
// id (the runtime then keeps its queue unless the file's messages changed, which the tools
// cannot see: kept).
const MOVED_ON = (how) => `The conversation moved on (${how}) before this action was resolved.`;

/// What the session was at the last call or session event a tool saw: its id and its newest
/// entry (the object, as the session manager holds it).
function sessionRecord(ctx) {
  const manager = ctx && ctx.sessionManager;
  if (!manager || typeof manager.getSessionId !== "function") return null;
  try {
    const entries = typeof manager.getEntries === "function" ? manager.getEntries() : [];
    return { manager, id: manager.getSessionId(), anchor: entries.length ? entries[entries.length - 1] : null };
  } catch {
    return null;
  }
}

/// How the conversation moved on, when the runtime dropped the actions it held ("/new",
/// "/resume", "a branch from an earlier message"), or null when it still holds them. `before`
/// is the session's record before the event.
function droppedByRuntime(event, before, ctx) {
  const reason = event && event.reason;
  if (reason === "branch") return "a branch from an earlier message";
  // "tree", "start", compaction and retry events leave the queue as it is.
  if (reason !== "switch" || !before) return null;
  const now = sessionRecord(ctx);
  if (!now || now.id === before.id) return null; // the same session file, reloaded
  const { manager } = now;
  let header = null;
  let entries = [];
  try {
    header = typeof manager.getHeader === "function" ? manager.getHeader() : null;
    entries = typeof manager.getEntries === "function" ? manager.getEntries() : [];
  } catch {
    // Unreadable: treat it as another conversation.
  }
  const forked =
    header !== null &&
    header !== undefined &&
    header.parentSession === before.id &&
    (before.anchor === null || entries.includes(before.anchor));
  if (forked) return null;
  return entries.some((entry) => entry && entry.type === "message") ? "/resume" : "/new";
}

/// One invocation of the factory: a native session and the tools over it.
class PluginSession {
  constructor(options, pi) {
    const { native, dir } = addon();
    this.pi = pi;
    this.options = options;
    this.closed = false;
    this.closing = null;
    this.onClosed = null;
    this.nextCall = 0;
    this.nextAbort = 0;
    this.updateHandlers = new Map();
    // Unsettled native actions, oldest first (`{label, isPending(), reject}`), and what the
    // session record was when a tool last saw it (see `droppedByRuntime`).
    this.actions = [];
    this.record = null;
    this.lastEvent = null;
    // Running calls' promise settlers, by call number; the addon answers each exactly once
    // through `settle` (one thread-safe function for the session, not one per call).
    this.running = new Map();
    // What each running call may use of the runtime (host.js), by call number; the dialogs
    // open for host requests, by request number (aborted when the request is withdrawn).
    this.callHosts = new Map();
    this.dialogs = new Map();
    this.toolNames = new Set();
    this.lastForwarded = null;
    // The addon's functions never keep the runtime alive; a running call does, through this
    // timer, referenced only while calls run (`ref`/`unref` are flag flips, cheaper per call
    // than a timer made and cleared).
    this.keepAlive = setInterval(() => {}, 1 << 30);
    this.keepAlive.unref();
    const push =
      typeof pi.pushPendingAction === "function"
        ? (id, label, sourceToolName, detailsJson, hasReject) =>
            this.push(id, label, sourceToolName, detailsJson, hasReject)
        : null;
    const updates = (call, json) => {
      const handler = this.updateHandlers.get(call);
      if (!handler) return;
      try {
        handler(views.toRuntimeResult(JSON.parse(json)));
      } catch (error) {
        logTo(pi.logger, "warn", `onUpdate threw: ${messageOf(error, "onUpdate")}`);
      }
    };
    this.native = new native.NativeSession(
      {
        cwd: typeof pi.cwd === "string" && pi.cwd ? pi.cwd : process.cwd(),
        plugins: options.plugins,
        defaultDirs: options.defaultDirs,
        isolation: options.isolation,
        timeoutMs: options.timeoutMs,
        memoryLimit: options.memoryLimit,
        allowWrite: options.allowWrite,
        allowRead: options.allowRead,
        passEnv: options.passEnv,
        denyNetwork: options.denyNetwork,
        stopIdleAfterMs: options.stopIdleAfterMs,
        pluginHost: pluginHost(dir),
      },
      push,
      updates,
      pi.logger
        ? (level, plugin, line) => logTo(pi.logger, level, `[${path.basename(plugin)}] ${line}`)
        : null,
      (call, ok, text) => this.settled(call, ok, text),
      (request, call, json) => this.service(request, call, json),
    );
  }

  /// A host request of call `call` (host.js answers it), or, with an empty `json`, the
  /// withdrawal of request `request` (its call was cancelled): its dialog is aborted.
  service(request, call, json) {
    if (json === "") {
      const open = this.dialogs.get(request);
      if (open) open.abort();
      return;
    }
    const controller = new AbortController();
    this.dialogs.set(request, controller);
    Promise.resolve()
      .then(() => host.answer(JSON.parse(json), this.callHosts.get(call), controller.signal))
      .then(
        (reply) => this.native.answerService(request, true, JSON.stringify(reply)),
        (error) => this.native.answerService(request, false, messageOf(error, "the runtime's UI")),
      )
      .finally(() => this.dialogs.delete(request));
  }

  /// Forward a session event to the native tools' `on_session`, with their earlier results on
  /// the current branch; once per event, whichever tool hears it first. `shutdown` is not
  /// forwarded: closing the native session sends it.
  async forwardEvent(event, ctx) {
    if (!event || this.closed || event === this.lastForwarded || event.reason === "shutdown") return;
    this.lastForwarded = event;
    const forwarded = {
      reason: String(event.reason),
      previousSessionFile: event.previousSessionFile ?? undefined,
      results: host.branchResults(ctx, this.toolNames),
    };
    try {
      await this.native.sessionEvent(JSON.stringify(forwarded));
    } catch (error) {
      logTo(this.pi.logger, "warn", `session event not forwarded: ${messageOf(error, "sessionEvent")}`);
    }
  }

  /// The addon's answer to call `call`: the result's JSON, or the error's message.
  settled(call, ok, text) {
    const waiting = this.running.get(call);
    if (!waiting) return;
    this.running.delete(call);
    if (this.running.size === 0) this.keepAlive.unref();
    if (ok) {
      try {
        waiting.resolve(views.toRuntimeResult(JSON.parse(text)));
      } catch (error) {
        waiting.reject(error);
      }
    } else {
      waiting.reject(new Error(text));
    }
  }

  /// A promise for call `call`, settled by `settled`.
  waitFor(call) {
    if (this.running.size === 0) this.keepAlive.ref();
    return new Promise((resolve, reject) => this.running.set(call, { resolve, reject }));
  }

  /// A native push: hand the runtime's store an action whose apply/reject run the plugin's.
  /// A throw here reaches the plugin as its push error (the addon drops the action).
  push(id, label, sourceToolName, detailsJson, hasReject) {
    const action = this.action(id, label, sourceToolName, detailsJson, hasReject);
    try {
      this.pi.pushPendingAction(action);
    } catch (thrown) {
      this.actions.pop(); // the addon drops it: not the runtime's to hold
      throw new Error(messageOf(thrown, "pushPendingAction"));
    }
  }

  /// The runtime's view of native action `id`. Only a successful `apply` or a `reject`
  /// settles it: after a failed apply the runtime (xcsh's keeps such a preview pending) may
  /// reject it, or apply it again (the plugin's apply runs again when the plugin made it
  /// retryable; otherwise the error names the first failure). An `AbortSignal` aborts the
  /// apply or reject where it runs: an aborted apply is undone and leaves the action pending.
  action(id, label, sourceToolName, detailsJson, hasReject) {
    const session = this;
    let state = "pending"; // "pending" | "running" | "applied" | "discarded"
    const live = { label, isPending: () => state === "pending", reject: null };
    const settle = async (apply, reason, signal) => {
      if (state === "running") {
        throw new Error(`Pending action "${label}" is being resolved; wait until it finishes`);
      }
      if (state !== "pending") {
        throw new Error(
          `Pending action "${label}" was already ${state}; it runs apply or reject only once`,
        );
      }
      state = "running";
      let outcome = apply ? "pending" : "discarded";
      const watching = signal && typeof signal.addEventListener === "function";
      const abortNumber = watching ? (session.nextAbort = (session.nextAbort + 1) >>> 0) : undefined;
      const abort = () => session.native.abortSettle(abortNumber);
      // The apply or reject asks the runtime's UI as a call does (docs/guide/src/pending.md): under
      // a call number of its own, with the factory's `pi` (a TypeScript closure captures it too).
      session.nextCall = (session.nextCall + 1) >>> 0;
      const call = session.nextCall;
      const callHost = host.hostOf(session.pi, undefined);
      session.callHosts.set(call, callHost);
      try {
        const settling = session.native.settle(
          id,
          apply,
          String(reason ?? ""),
          abortNumber,
          call,
          JSON.stringify(host.factsOf(callHost)),
        );
        if (watching) {
          signal.addEventListener("abort", abort, { once: true });
          if (signal.aborted) abort();
        }
        const result = parseResult(await settling);
        if (apply) outcome = "applied";
        return result;
      } catch (error) {
        if (error && error.message === "not pending") {
          outcome = "discarded";
          throw new Error(
            `Pending action "${label}" was discarded when the native plugins were closed; nothing was run`,
          );
        }
        throw error;
      } finally {
        if (watching) signal.removeEventListener("abort", abort);
        session.callHosts.delete(call);
        state = outcome;
        if (state !== "pending") {
          const at = session.actions.indexOf(live);
          if (at >= 0) session.actions.splice(at, 1);
        }
      }
    };
    live.reject = (reason) => settle(false, reason);
    session.actions.push(live);
    const action = {
      label,
      sourceToolName,
      apply: (reason, signal) => settle(true, reason, signal),
      reject: (reason, signal) => settle(false, reason, signal),
    };
    if (detailsJson !== null && detailsJson !== undefined) action.details = JSON.parse(detailsJson);
    return action;
  }

  async load() {
    await this.native.load();
    const loadErrors = this.native.loadErrors();
    for (const error of loadErrors) {
      logTo(this.pi.logger, "warn", `native plugin not loaded: ${error.message}`);
    }
    const tools = this.native.tools().map((spec) => this.tool(spec));
    for (const tool of tools) this.toolNames.add(tool.name);
    return { tools, loadErrors };
  }

  tool(spec) {
    const session = this;
    const parameters = JSON.parse(spec.parametersJson);
    const tool = {
      name: spec.name,
      label: spec.label,
      description: spec.description,
      parameters,
      hidden: spec.hidden,
      deferrable: spec.deferrable,
      approval: this.options.approval.has(spec.name)
        ? this.options.approval.get(spec.name)
        : defaultApproval(spec),
      async execute(toolCallId, params, onUpdate, ctx, signal) {
        session.observe(ctx);
        return session.execute(spec.name, toolCallId, params, onUpdate, signal, ctx);
      },
      /// How a call looks while it runs: the status line of the tool's call view, filled from
      /// the arguments by the addon (synchronously, no plugin code); otherwise its label.
      renderCall(args, options, theme) {
        let status = null;
        try {
          const json = session.closed ? null : session.native.callStatus(spec.name, JSON.stringify(args ?? {}));
          status = json ? JSON.parse(json) : null;
        } catch {
          // The label.
        }
        return views.renderCall(status, spec.label, options, theme);
      },
      /// How a result looks: its view (xcsh-plugin-api 0.8), drawn with the runtime's theme;
      /// otherwise, or for an error, its text (view.js).
      renderResult: views.renderResult,
      /// xcsh's runtime tells its tools when the session ends: `"shutdown"` closes this
      /// invocation's native session (once, whichever of its tools hears it first), which
      /// sends the native tools `shutdown`. Other events reach the native tools' `on_session`
      /// and settle the actions the runtime dropped (`droppedByRuntime`).
      async onSession(event, ctx) {
        if (event && event.reason === "shutdown") {
          await session.close();
          return;
        }
        await session.forwardEvent(event, ctx);
        await session.conversationChanged(event, ctx);
      },
    };
    if (this.options.loadMode !== undefined) tool.loadMode = this.options.loadMode;
    if (isStrictSchema(parameters)) tool.strict = true;
    return tool;
  }

  /// Remember the session record a tool was called or told about with.
  observe(ctx) {
    const record = sessionRecord(ctx);
    if (record) this.record = record;
  }

  /// A session event other than shutdown: when the runtime dropped the actions it held,
  /// reject each still unsettled, newest first, through its plugin's `reject`, before the
  /// runtime's call returns. Once per event, whichever tool hears it first.
  async conversationChanged(event, ctx) {
    if (this.closed || (event && event === this.lastEvent)) return;
    this.lastEvent = event;
    const before = this.record;
    this.observe(ctx);
    const how = droppedByRuntime(event, before, ctx);
    if (how === null) return;
    for (const action of this.actions.slice().reverse()) {
      if (!action.isPending()) continue; // an apply or reject running now settles it
      try {
        await action.reject(MOVED_ON(how));
      } catch (error) {
        logTo(this.pi.logger, "warn", `reject of "${action.label}" failed: ${messageOf(error, "reject")}`);
      }
    }
  }

  async execute(name, toolCallId, params, onUpdate, signal, ctx) {
    if (this.closed) {
      throw new Error(`Tool "${name}" cannot run: the native plugins were closed (close() was called)`);
    }
    this.nextCall = (this.nextCall + 1) >>> 0;
    const call = this.nextCall;
    const wantsUpdates = typeof onUpdate === "function";
    if (wantsUpdates) this.updateHandlers.set(call, onUpdate);
    const callHost = host.hostOf(this.pi, ctx);
    this.callHosts.set(call, callHost);
    const abort = () => {
      const message = this.native.cancel(call);
      if (message !== null && message !== undefined) this.settled(call, false, message);
    };
    const watching = signal && typeof signal.addEventListener === "function";
    try {
      const answer = this.waitFor(call);
      try {
        this.native.startCall(
          call,
          name,
          JSON.stringify(params === undefined ? {} : params),
          String(toolCallId ?? ""),
          wantsUpdates,
          JSON.stringify(host.factsOf(callHost)),
        );
      } catch (error) {
        this.settled(call, false, messageOf(error, `Tool "${name}"`));
      }
      if (watching) signal.addEventListener("abort", abort, { once: true });
      if (signal && signal.aborted) abort();
      return await answer;
    } finally {
      if (watching) signal.removeEventListener("abort", abort);
      if (wantsUpdates) this.updateHandlers.delete(call);
      this.callHosts.delete(call);
    }
  }

  /// Reject what is still pending, newest first, and end the plugin processes. Idempotent:
  /// every caller waits for the same close.
  close() {
    this.closed = true;
    if (!this.closing) {
      clearInterval(this.keepAlive);
      this.closing = this.native.close();
      if (this.onClosed) this.closing.then(this.onClosed, this.onClosed);
    }
    return this.closing;
  }
}

/**
 * An xcsh `CustomToolFactory` that loads native tool plugins: `export default
 * nativeToolFactory({ plugins: [...] })` is a whole extension file. See index.d.ts.
 */
function nativeToolFactory(options) {
  const checked = checkOptions(options);
  const sessions = [];
  const loadErrors = [];
  let closed = false;
  const factory = async function nativeTools(pi) {
    // Loaded as an extension (`ExtensionAPI`): the half that lends the native tools the
    // runtime's UI and model (host.js). An extension factory returns nothing.
    if (host.isExtensionApi(pi)) {
      host.installExtension(pi);
      return undefined;
    }
    if (closed) throw new Error("nativeToolFactory: the native plugins were closed (close() was called)");
    const session = new PluginSession(checked, pi || {});
    sessions.push(session);
    // A session closed by its runtime (`onSession` shutdown) leaves the factory's list.
    session.onClosed = () => {
      const at = sessions.indexOf(session);
      if (at >= 0) sessions.splice(at, 1);
    };
    const loadedSession = await session.load();
    for (const name of checked.approval.keys()) {
      if (!loadedSession.tools.some((tool) => tool.name === name)) {
        logTo(pi && pi.logger, "warn", `nativeToolFactory: option \`approval\` names "${name}", which no loaded plugin provides`);
      }
    }
    loadErrors.length = 0;
    for (const error of loadedSession.loadErrors) {
      loadErrors.push({ path: error.path, message: error.message });
    }
    return loadedSession.tools;
  };
  factory.loadErrors = loadErrors;
  factory.close = async function close() {
    closed = true;
    const open = sessions.splice(0);
    // Newest session first, as each session discards its own actions newest first.
    for (const session of open.reverse()) await session.close();
  };
  return factory;
}

const { toolPackage, serveToolPackage } = require("./tool-package.js");

module.exports = { nativeToolFactory, toolPackage, serveToolPackage };
module.exports.default = nativeToolFactory;
// For tool-package.js (not part of the public surface).
Object.defineProperty(module.exports, "loadAddon", { value: addon, enumerable: false });

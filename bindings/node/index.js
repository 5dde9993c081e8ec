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

const ADDON_ENV = "XCSH_NATIVE_PLUGINS_ADDON";
const HOST_BIN = "xcsh-plugin-host";
const OPTION_NAMES = [
  "plugins",
  "defaultDirs",
  "isolation",
  "timeoutMs",
  "memoryLimit",
  "allowWrite",
  "denyNetwork",
];
const ISOLATION_MODES = ["process", "in-process"];

/// Where the addon may be: the packed package's copy, then a cargo build of this repository.
function addonCandidates() {
  const repoTarget = path.join(__dirname, "..", "..", "target");
  return [
    path.join(__dirname, "native", "xcsh_native_plugins.node"),
    path.join(repoTarget, "release", "libxcsh_native_plugins.so"),
    path.join(repoTarget, "debug", "libxcsh_native_plugins.so"),
    path.join(repoTarget, "release", "libxcsh_native_plugins.dylib"),
    path.join(repoTarget, "debug", "libxcsh_native_plugins.dylib"),
  ];
}

let loaded = null;

/// The addon and the directory it was found in (where `xcsh-plugin-host` sits too).
function addon() {
  if (loaded) return loaded;
  const explicit = process.env[ADDON_ENV];
  const candidates = explicit ? [explicit] : addonCandidates();
  const file = candidates.find((candidate) => fs.existsSync(candidate));
  if (!file) {
    throw new Error(
      `@xcsh/native-plugins: the native addon was not found (looked for ${candidates.join(", ")}); ` +
        "build it with `cargo build --release --workspace` in the repository, or set " +
        `${ADDON_ENV} to the built library`,
    );
  }
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

function boolean(name, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw optionError(name, "a boolean", value);
  return value;
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
  return {
    plugins: stringList("plugins", options.plugins),
    defaultDirs: boolean("defaultDirs", options.defaultDirs, true),
    isolation,
    timeoutMs,
    memoryLimit,
    allowWrite: stringList("allowWrite", options.allowWrite),
    denyNetwork: boolean("denyNetwork", options.denyNetwork, false),
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

/// One invocation of the factory: a native session and the tools over it.
class PluginSession {
  constructor(options, pi) {
    const { native, dir } = addon();
    this.pi = pi;
    this.closed = false;
    this.nextCall = 0;
    this.updateHandlers = new Map();
    const push =
      typeof pi.pushPendingAction === "function"
        ? (id, label, sourceToolName, detailsJson, hasReject) =>
            this.push(id, label, sourceToolName, detailsJson, hasReject)
        : null;
    const updates = (call, json) => {
      const handler = this.updateHandlers.get(call);
      if (!handler) return;
      try {
        handler(JSON.parse(json));
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
        denyNetwork: options.denyNetwork,
        pluginHost: pluginHost(dir),
      },
      push,
      updates,
      pi.logger
        ? (level, plugin, line) => logTo(pi.logger, level, `[${path.basename(plugin)}] ${line}`)
        : null,
    );
  }

  /// A native push: hand the runtime's store an action whose apply/reject run the plugin's.
  /// A throw here reaches the plugin as its push error (the addon drops the action).
  push(id, label, sourceToolName, detailsJson, hasReject) {
    const action = this.action(id, label, sourceToolName, detailsJson, hasReject);
    try {
      this.pi.pushPendingAction(action);
    } catch (thrown) {
      throw new Error(messageOf(thrown, "pushPendingAction"));
    }
  }

  action(id, label, sourceToolName, detailsJson, hasReject) {
    const session = this;
    let settled = null;
    const settle = async (apply, reason) => {
      if (settled !== null) {
        throw new Error(
          `Pending action "${label}" was already ${settled}; it runs apply or reject only once`,
        );
      }
      settled = apply ? "applied" : "discarded";
      try {
        return parseResult(await session.native.settle(id, apply, String(reason ?? "")));
      } catch (error) {
        if (error && error.message === "not pending") {
          throw new Error(
            `Pending action "${label}" was discarded when the native plugins were closed; nothing was run`,
          );
        }
        throw error;
      }
    };
    const action = {
      label,
      sourceToolName,
      apply: (reason) => settle(true, reason),
      reject: (reason) => settle(false, reason),
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
    return { tools, loadErrors };
  }

  tool(spec) {
    const session = this;
    return {
      name: spec.name,
      label: spec.label,
      description: spec.description,
      parameters: JSON.parse(spec.parametersJson),
      hidden: spec.hidden,
      deferrable: spec.deferrable,
      async execute(toolCallId, params, onUpdate, _ctx, signal) {
        return session.execute(spec.name, toolCallId, params, onUpdate, signal);
      },
    };
  }

  async execute(name, toolCallId, params, onUpdate, signal) {
    if (this.closed) {
      throw new Error(`Tool "${name}" cannot run: the native plugins were closed (close() was called)`);
    }
    this.nextCall = (this.nextCall + 1) >>> 0;
    const call = this.nextCall;
    const wantsUpdates = typeof onUpdate === "function";
    if (wantsUpdates) this.updateHandlers.set(call, onUpdate);
    const abort = () => this.native.cancel(call);
    const watching = signal && typeof signal.addEventListener === "function";
    if (watching) signal.addEventListener("abort", abort, { once: true });
    if (signal && signal.aborted) abort();
    try {
      const started = this.native.call(
        call,
        name,
        JSON.stringify(params === undefined ? {} : params),
        String(toolCallId ?? ""),
        wantsUpdates,
      );
      return JSON.parse(await started);
    } catch (error) {
      throw error instanceof Error ? error : new Error(messageOf(error, `Tool "${name}"`));
    } finally {
      if (watching) signal.removeEventListener("abort", abort);
      if (wantsUpdates) this.updateHandlers.delete(call);
    }
  }

  async close() {
    this.closed = true;
    await this.native.close();
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
    if (closed) throw new Error("nativeToolFactory: the native plugins were closed (close() was called)");
    const session = new PluginSession(checked, pi || {});
    sessions.push(session);
    const loadedSession = await session.load();
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

module.exports = { nativeToolFactory };
module.exports.default = nativeToolFactory;

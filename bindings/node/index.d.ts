// Types of @xcsh/native-plugins. The shapes mirror xcsh's own `CustomToolFactory`,
// `CustomTool`, `CustomToolPendingAction` and `AgentToolResult`, and require of `pi` only what
// the factory reads, so any xcsh runtime (or a runtime written from the seed) fits.

/** A block of a tool result (audio and resources since xcsh-plugin-api 0.6). */
export type NativeContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } };

/** What a tool, an `apply` or a `reject` gives back (xcsh's `AgentToolResult`). */
export interface NativeToolResult {
  content: NativeContent[];
  details?: unknown;
}

/** A pending action as pushed onto the runtime's store (xcsh's `CustomToolPendingAction`). */
export interface NativePendingAction {
  label: string;
  sourceToolName: string;
  details?: unknown;
  /**
   * Runs the plugin's `apply`, in its process. A successful apply settles the action; a failed
   * one does not: the action may then be rejected, or applied again (the plugin's apply runs
   * again when the plugin made it retryable; otherwise this rejects with an error naming the
   * first failure and saying to discard the action or preview the change again).
   *
   * `signal` aborts it: the plugin's apply is dropped where it runs (in its process too), so an
   * apply that commits staged file changes (`batch_rename`, `ast_edit`) undoes them and removes
   * its temporary files; once it has, this rejects with `apply of "{label}" was cancelled; the
   * action is still pending`, and nothing was changed. An apply that had completed before the
   * abort reached it resolves with its result (everything was changed).
   */
  apply(reason: string, signal?: AbortSignal): Promise<NativeToolResult>;
  /**
   * Runs the plugin's `reject` and settles the action; `undefined` when the plugin gave none, or
   * when an older plugin's failed apply took it (the runtime's default "Discarded" text stands).
   * `signal` aborts it (it then rejects with `reject of "{label}" was cancelled; …`).
   */
  reject(reason: string, signal?: AbortSignal): Promise<NativeToolResult | undefined>;
}

/** What the factory reads from xcsh's `CustomToolAPI` (`pi`), and nothing more. */
export interface NativeToolHost {
  /** The session's working directory (relative paths in tool arguments resolve against it). */
  cwd: string;
  /** The runtime's store. Absent: a plugin's push fails with `Pending action store unavailable for custom tools in this runtime.`; throwing: it fails with the thrown message. */
  pushPendingAction?: (action: NativePendingAction) => void;
  /** Where load errors and plugin log lines go, when present. */
  logger?: Partial<Record<"debug" | "info" | "warn" | "error", (message: string) => void>>;
  /**
   * A UI that answers the native tools' questions (`confirm`, `select`, `input`; forms are
   * asked field by field, then "Submit?"), used when `hasUI` is true. xcsh's runtime gives
   * custom tools a no-op one (`hasUI` false); load the same factory as an extension too (see
   * `nativeToolFactory`) and its context's real `ui` is used instead. Each dialog gets
   * `{signal}`, aborted when the call that asked is cancelled.
   */
  ui?: NativeToolUi;
  /** Whether `ui` can answer. */
  hasUI?: boolean;
}

/** The dialogs the native tools' questions use (a subset of xcsh's `ExtensionUIContext`). */
export interface NativeToolUi {
  confirm?(title: string, message: string, options?: { signal?: AbortSignal }): Promise<boolean>;
  select?(title: string, options: string[], dialog?: { signal?: AbortSignal }): Promise<string | undefined>;
  input?(title: string, placeholder?: string, options?: { signal?: AbortSignal }): Promise<string | undefined>;
  notify?(message: string, type?: "info" | "warning" | "error"): void;
  setStatus?(key: string, text: string | undefined): void;
}

/** A capability tier of xcsh's approval gate. */
export type NativeToolTier = "read" | "write" | "exec";

/** xcsh's `ToolApproval`: a tier, a tier with a reason or policy, or a function of the arguments. */
export type NativeToolApproval =
  | NativeToolTier
  | { tier: NativeToolTier; reason?: string; override?: boolean; policy?: "allow" | "deny" | "prompt"; policyKey?: string }
  | ((args: unknown) => NativeToolTier | { tier: NativeToolTier; reason?: string; override?: boolean; policy?: "allow" | "deny" | "prompt"; policyKey?: string });

/** An xcsh `CustomTool` backed by a native plugin. */
export interface NativeTool {
  name: string;
  label: string;
  description: string;
  /** The tool's JSON Schema (arguments are validated against it before the plugin runs). */
  parameters: Record<string, unknown>;
  hidden: boolean;
  /** It may push pending actions (the runtime's `resolve` applies or discards them). */
  deferrable: boolean;
  /** The approval gate's tier: `"read"` when the plugin annotates the tool read-only, else `"write"`; the factory's `approval` option overrides it. */
  approval: NativeToolApproval;
  /** The factory's `loadMode`, when given (the runtime's default otherwise). */
  loadMode?: "essential" | "discoverable";
  /** `true` when the schema is closed throughout (`additionalProperties: false`), so providers may use strict mode. */
  strict?: boolean;
  /**
   * xcsh's session events: `{reason: "shutdown"}` closes this invocation's native session
   * (idempotent); after `/new`, `/resume` or a branch (told from fork and `/tree` by
   * `ctx.sessionManager`), the native actions the runtime dropped are rejected, newest first.
   */
  onSession(event: { reason: string; previousSessionFile?: string }, ctx?: { sessionManager?: unknown }): Promise<void>;
  /**
   * How a result looks in the runtime: the view the plugin gave (kept in `details["xcsh/view"]`)
   * drawn with the runtime's theme, collapsed or expanded; otherwise, or for an error, the
   * result's text. Returns a component (`render(width)` gives the lines).
   */
  /**
   * How a call looks while it runs: the status line of the tool's call view (xcsh-plugin-api
   * 0.8), filled from the arguments so far; otherwise the tool's label.
   */
  renderCall(
    args: unknown,
    options: { expanded: boolean; isPartial: boolean; spinnerFrame?: number },
    theme: { fg(role: string, text: string): string; bold(text: string): string },
  ): { render(width: number): string[]; invalidate(): void };
  renderResult(
    result: { content: NativeContent[]; details?: unknown; isError?: boolean },
    options: { expanded: boolean; isPartial: boolean; spinnerFrame?: number },
    theme: { fg(role: string, text: string): string; bold(text: string): string },
  ): { render(width: number): string[]; invalidate(): void };
  /**
   * Run the tool. Rejects with an `Error` carrying the loader's message (plugin file, tool and
   * cause) on invalid arguments, a tool error, a crashed plugin process or a timeout. When it
   * settles, every action the call pushed has been handed to `pi.pushPendingAction`, in order.
   */
  execute(
    toolCallId: string,
    params: unknown,
    onUpdate?: (partial: NativeToolResult) => void,
    ctx?: unknown,
    signal?: AbortSignal,
  ): Promise<NativeToolResult>;
}

/** Options of {@link nativeToolFactory}: the `xcsh-plugins` CLI's, with the same defaults. */
export interface NativeToolFactoryOptions {
  /** Plugin files, or directories of plugins (searched first), as `--plugin`. */
  plugins?: string[];
  /** Also search `<cwd>/.xcsh/tools/` (trusted plugins only) and `~/.xcsh/agent/tools/`. Default `true`. */
  defaultDirs?: boolean;
  /** Where plugin code runs: `"process"` (default on Linux) or `"in-process"`. */
  isolation?: "process" | "in-process";
  /** Abandon a call, apply or reject after this many milliseconds (default: no limit). */
  timeoutMs?: number;
  /** Address-space limit of each plugin process: bytes, or a size such as `"512M"` (default 4G). */
  memoryLimit?: number | string;
  /** Paths plugin processes may write under (and read), besides `cwd` and a private temporary directory. */
  allowWrite?: string[];
  /**
   * Paths plugin processes may read, besides the system's directories, `cwd`, the plugin's own
   * directory, their private temporary directory and `allowWrite`: everything else (your home,
   * the shared `/tmp`) is refused. As `--allow-read`.
   */
  allowRead?: string[];
  /**
   * Variables of this process's environment that plugin processes get, besides `PATH`, `HOME`,
   * `USER`, `LANG`, `LC_*`, `TERM`, `TZ` and a `TMPDIR` of their own: names, or a prefix and a
   * trailing `*` (`"MYTOOL_*"`). As `--pass-env`.
   */
  passEnv?: string[];
  /**
   * Deny plugin processes the network: no socket but a Unix stream pair (no TCP, UDP, raw,
   * packet or netlink socket, no connection to a Unix socket outside). Default `false`.
   */
  denyNetwork?: boolean;
  /**
   * Stop a plugin's process once it has been idle (no call, no apply or reject, nothing it
   * pushed still pending) this many milliseconds; its next call starts it again. Default
   * `30000`, as the CLI's `--stop-idle-after 30s`. `Infinity` never stops one (as `off`);
   * `0` is refused. No effect with `isolation: "in-process"`.
   */
  stopIdleAfterMs?: number;
  /** Per tool name, the approval that replaces the tool's own tier, e.g. `{ my_tool: "exec" }`. */
  approval?: Record<string, NativeToolApproval>;
  /** How the runtime presents every native tool (`"essential"`: top level; `"discoverable"`: behind tool search). Default: the runtime's own. */
  loadMode?: "essential" | "discoverable";
}

/** A plugin file that did not load. */
export interface NativeLoadError {
  path: string;
  message: string;
}

/** The parts of xcsh's `ExtensionAPI` the factory uses when it is loaded as an extension. */
export interface NativeToolExtensionHost {
  on(event: string, handler: (event: unknown, ctx: { sessionManager?: object; ui?: NativeToolUi; hasUI?: boolean; model?: unknown }) => unknown): void;
  registerTool(tool: unknown): void;
}

/**
 * The factory xcsh calls with its `pi`; also closes what it loaded. Called with an
 * `ExtensionAPI` (the same file loaded as an extension: `--extension file`, or a copy under
 * `.omp/extensions/`), it loads nothing and lends the native tools of the same session the
 * extension context's real UI and model.
 */
export interface NativeToolFactory {
  (pi: NativeToolHost): Promise<NativeTool[]>;
  (pi: NativeToolExtensionHost): Promise<undefined>;
  /** Discard (through each plugin's `reject`, newest first) every native action never resolved, and end the plugin processes. */
  close(): Promise<void>;
  /** Files that failed to load in the last invocation; the others still loaded. */
  readonly loadErrors: NativeLoadError[];
}

/**
 * An xcsh `CustomToolFactory` loading native tool plugins:
 * `export default nativeToolFactory({ plugins: ["./libmy_tool.so"] })`.
 * Throws a `TypeError` naming the option when an option is invalid, before anything loads.
 */
export declare function nativeToolFactory(options?: NativeToolFactoryOptions): NativeToolFactory;
export default nativeToolFactory;

/**
 * The `omp` tools and extensions entry of a tool packed by `xcsh-plugins pack` (its package
 * directory, holding `xcsh-tool.json`): a `nativeToolFactory` over this machine's library, from
 * the platform package npm or Bun installed. Throws, naming the platforms the package has, when
 * it has no library for this machine (xcsh's installer then refuses the package). `options`
 * are `nativeToolFactory`'s but `plugins` and `defaultDirs`.
 */
export declare function toolPackage(
  dir: string,
  options?: Omit<NativeToolFactoryOptions, "plugins" | "defaultDirs">,
): NativeToolFactory;

/**
 * The `bin` of a packed tool: serve it over MCP on stdio through this binding's
 * `xcsh-plugins` (`XCSH_PLUGINS_BIN` overrides it), passing the command line's arguments on
 * (`--cwd DIR`, `--allow-write PATH`, ...). Exits with the server's exit code.
 */
export declare function serveToolPackage(dir: string): void;

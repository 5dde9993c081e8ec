// The runtime as the native plugins' host (docs/guide/src/ask.md, runtime.md): what a native tool's
// questions, notifications and completions are answered with, and the session history its
// `on_session` reads.
//
// xcsh's runtime gives a custom-tool factory `pi.pushPendingAction` but only a no-op `pi.ui`
// (hasUI false in every mode), and an extension a real `ctx.ui` but no `pushPendingAction`.
// A deferrable native tool needs both, so the same `nativeToolFactory(...)` export is also an
// extension: loaded as one (`--extension file`, or a copy under `.omp/extensions/`), it only
// remembers each session's extension context here, by its `sessionManager` (the same object
// the custom tools see). The registry lives on `globalThis`: the runtime imports an extension
// file as a module instance of its own.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const url = require("node:url");
const { withoutView } = require("./view.js");

const REGISTRY = Symbol.for("@xcsh/native-plugins.extension-contexts");
const contexts = globalThis[REGISTRY] || (globalThis[REGISTRY] = new WeakMap());

/// The extension events whose context is remembered: the first (session start) and the ones
/// that come with each turn, so a context is there before the model calls any tool.
const REMEMBERED = ["session_start", "session_switch", "session_branch", "session_tree", "before_agent_start", "turn_start", "tool_call"];

/// Whether `pi` is an `ExtensionAPI` rather than a custom-tool `pi`.
function isExtensionApi(pi) {
  return (
    pi !== null &&
    typeof pi === "object" &&
    typeof pi.on === "function" &&
    typeof pi.registerTool === "function" &&
    typeof pi.pushPendingAction !== "function"
  );
}

/// The extension half: remember each session's context (its real `ui`, `model`).
function installExtension(pi) {
  const remember = (_event, ctx) => {
    if (ctx && ctx.sessionManager && typeof ctx.sessionManager === "object") {
      contexts.set(ctx.sessionManager, ctx);
    }
  };
  for (const type of REMEMBERED) pi.on(type, remember);
}

let aiEntry; // undefined: not looked for yet; null: none

/// The entry file of the runtime's own `@oh-my-pi/pi-ai` (its `completeSimple` drives the
/// session's model: a registered provider, the test suite's mock), found from the runtime's
/// location; null where there is none. The package is ESM-only (no `require`), so it is found
/// on disk and imported by path, which gives the runtime's own module instance.
function runtimeAiEntry() {
  if (aiEntry !== undefined) return aiEntry;
  aiEntry = null;
  const bases = [process.argv[1] && path.dirname(path.resolve(process.argv[1])), process.cwd()];
  for (const base of bases.filter(Boolean)) {
    for (let dir = base; ; dir = path.dirname(dir)) {
      const manifest = path.join(dir, "node_modules", "@oh-my-pi", "pi-ai", "package.json");
      if (fs.existsSync(manifest)) {
        try {
          const pkg = JSON.parse(fs.readFileSync(manifest, "utf8"));
          const root = pkg.exports && pkg.exports["."];
          const entry = (root && (root.import || root.default)) || pkg.module || pkg.main;
          if (entry) aiEntry = path.join(path.dirname(manifest), entry);
        } catch {
          // An unreadable manifest: no model through it.
        }
        return aiEntry;
      }
      if (path.dirname(dir) === dir) break;
    }
  }
  return aiEntry;
}

/// The runtime's `completeSimple`.
async function runtimeCompleter() {
  const entry = runtimeAiEntry();
  if (!entry) throw new Error("No model available to plugins in this host.");
  const ai = await import(url.pathToFileURL(entry).href);
  if (typeof ai.completeSimple !== "function") throw new Error("@oh-my-pi/pi-ai has no completeSimple");
  return ai.completeSimple;
}

/// What a call of a native tool may use, from its `ctx` (and the factory's `pi`): the UI that
/// can answer (the extension context's when it has one, else `pi.ui` when the host says
/// `hasUI`), the session's model and registry, and the session manager.
function hostOf(pi, ctx) {
  const manager = ctx && ctx.sessionManager;
  const ext = manager && typeof manager === "object" ? contexts.get(manager) : undefined;
  let ui = null;
  if (ext && ext.hasUI && ext.ui) ui = ext.ui;
  else if (pi.hasUI && pi.ui) ui = pi.ui;
  const model = (ext && ext.model) || (ctx && ctx.model) || undefined;
  const modelRegistry = (ext && ext.modelRegistry) || (ctx && ctx.modelRegistry) || undefined;
  const complete = model && runtimeAiEntry() ? runtimeCompleter : null;
  return { ui, model, modelRegistry, manager, complete, logger: pi.logger };
}

/// The `HostFacts` of a call (snake_case, as the addon reads them).
function factsOf(host) {
  const facts = { has_ui: host.ui !== null, can_complete: Boolean(host.model && host.complete) };
  if (host.model) facts.model = { provider: String(host.model.provider ?? ""), id: String(host.model.id ?? "") };
  return facts;
}

/// A form, one field at a time on the runtime's dialogs (it has no forms), then "Submit?".
/// `fields` is the addon's reading of the schema (`FormField`s: name, label, input, default),
/// the same list the terminal asks from.
async function askForm(ui, message, fields, options) {
  const values = {};
  for (const field of fields || []) {
    const { name, input } = field;
    const label = `${message}: ${field.label}`;
    if (input.kind === "yes_no") {
      values[name] = await ui.confirm(label, name, options);
    } else if (input.kind === "choices") {
      // One choice at a time until the user dismisses the dialog.
      const picked = [];
      for (;;) {
        const left = input.options.filter((c) => !picked.includes(c.value));
        if (left.length === 0) break;
        const shown = await ui.select(`${label} (dismiss to finish)`, left.map((c) => c.label), options);
        const choice = left.find((c) => c.label === shown);
        if (!choice) break;
        picked.push(choice.value);
      }
      values[name] = picked;
    } else if (input.kind === "choice") {
      const shown = await ui.select(label, input.options.map((c) => c.label), options);
      const choice = input.options.find((c) => c.label === shown);
      if (choice === undefined) return { reply: "form", action: "cancel" };
      values[name] = choice.value;
    } else {
      const text = await ui.input(label, field.default !== undefined ? String(field.default) : undefined, options);
      if (text === undefined) return { reply: "form", action: "cancel" };
      if (text === "" && field.default !== undefined) values[name] = field.default;
      else if (text === "") continue;
      else if (input.kind === "integer" || input.kind === "number") values[name] = Number(text);
      else values[name] = text;
    }
  }
  const submit = await ui.confirm(message, "Submit?", options);
  return submit ? { reply: "form", action: "accept", content: values } : { reply: "form", action: "decline" };
}

/// The model's text for a `CompletionRequest`.
async function complete(host, request, signal) {
  const model = host.model;
  const messages = request.messages.map((m) => ({
    role: m.role,
    content: [{ type: "text", text: m.text }],
    timestamp: Date.now(),
  }));
  const options = { maxTokens: request.max_tokens, signal };
  if (host.modelRegistry && typeof host.modelRegistry.resolver === "function") {
    const session = host.manager && typeof host.manager.getSessionId === "function" ? host.manager.getSessionId() : undefined;
    options.apiKey = host.modelRegistry.resolver(model, session);
  }
  const context = { messages };
  if (request.system) context.systemPrompt = [request.system];
  const completeSimple = await host.complete();
  const answer = await completeSimple(model, context, options);
  if (answer && answer.stopReason === "error") throw new Error(answer.errorMessage || "the model failed");
  const blocks = (answer && answer.content) || [];
  return blocks.filter((b) => b && b.type === "text").map((b) => b.text).join("");
}

/// Answer one `HostRequest` (parsed) with a `HostReply` object; throws with the message the
/// plugin's request fails with.
async function answer(request, host, signal) {
  const ui = host && host.ui;
  const options = { signal };
  switch (request.service) {
    case "confirm":
      return { reply: "confirmed", yes: Boolean(await ui.confirm(request.title, request.message, options)) };
    case "select":
      return { reply: "chosen", value: (await ui.select(request.title, request.options, options)) ?? null };
    case "input":
      return { reply: "chosen", value: (await ui.input(request.title, request.placeholder ?? undefined, options)) ?? null };
    case "form":
      return askForm(ui, request.message, request.fields, options);
    case "notify": {
      const level = request.level === "warning" ? "warning" : request.level === "error" ? "error" : "info";
      if (ui && typeof ui.notify === "function") ui.notify(request.message, level);
      else if (host && host.logger) {
        const method = level === "info" ? "info" : level === "warning" ? "warn" : "error";
        if (typeof host.logger[method] === "function") host.logger[method](request.message);
      }
      return { reply: "done" };
    }
    case "set_status":
      if (ui && typeof ui.setStatus === "function") ui.setStatus(request.key, request.text ?? undefined);
      return { reply: "done" };
    case "complete": {
      const text = await complete(host, request.request, signal);
      return { reply: "completion", text, model: String(host.model.id ?? "") };
    }
    default:
      throw new Error(`this runtime does not offer the host service "${request.service}"`);
  }
}

/// The earlier results of `names`' tools on the session's current branch, oldest first, as
/// the addon reads them (`{toolName, toolCallId, details}`).
function branchResults(ctx, names) {
  const manager = ctx && ctx.sessionManager;
  if (!manager || typeof manager.getBranch !== "function") return [];
  const results = [];
  try {
    for (const entry of manager.getBranch()) {
      const message = entry && entry.type === "message" ? entry.message : null;
      if (!message || message.role !== "toolResult" || !names.has(message.toolName)) continue;
      // The view the binding keeps in `details` for the runtime's renderer is not the plugin's.
      const details = withoutView(message.details ?? null);
      results.push({ toolName: message.toolName, toolCallId: String(message.toolCallId ?? ""), details: details ?? null });
    }
  } catch {
    // An unreadable history: the tools rebuild from nothing.
  }
  return results;
}

module.exports = { isExtensionApi, installExtension, hostOf, factsOf, answer, branchResults };

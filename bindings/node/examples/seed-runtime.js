// A runtime written from the seed (shared/seed/resolve-tool-runtime.it.md): its
// PendingActionStore (a LIFO stack) and its hidden `resolve`, as xcsh's TypeScript runtime
// has them. The tests and the example play xcsh's side with it.
"use strict";

const NO_PENDING = "No pending action to resolve. Nothing to apply or discard.";

class PendingActionStore {
  constructor() {
    this.stack = [];
  }
  push(action) {
    if (!action || typeof action.label !== "string" || action.label === "") {
      throw new Error("pending action label must not be empty");
    }
    this.stack.push(action);
  }
  peek() {
    return this.stack[this.stack.length - 1];
  }
  pop() {
    return this.stack.pop();
  }
  get hasPending() {
    return this.stack.length > 0;
  }
  get count() {
    return this.stack.length;
  }
}

function text(result) {
  return (result?.content ?? [])
    .filter((part) => part.type === "text" && part.text)
    .map((part) => part.text)
    .join("\n");
}

/// The seed's `resolve`: pop the newest action, then apply or discard it.
async function resolve(store, action, reason) {
  const pending = store.pop();
  if (!pending) throw new Error(NO_PENDING);
  const details = {
    action,
    reason,
    sourceToolName: pending.sourceToolName ?? "custom_tool",
    label: pending.label,
  };
  if (action === "apply") {
    const result = await pending.apply(reason);
    return { content: [{ type: "text", text: text(result) || `Applied: ${pending.label}.` }], details };
  }
  const replaced = pending.reject ? await pending.reject(reason) : undefined;
  if (replaced) return { content: replaced.content, details };
  return {
    content: [{ type: "text", text: `Discarded: ${pending.label}. Reason: ${reason}` }],
    details,
  };
}

/// The `pi` a runtime hands a custom tool factory.
function runtimeApi(cwd, store, logger) {
  const pi = { cwd };
  if (store) pi.pushPendingAction = (action) => store.push(action);
  if (logger) pi.logger = logger;
  return pi;
}

module.exports = { PendingActionStore, resolve, runtimeApi, text, NO_PENDING };

// Plays xcsh's side for the extension in batch-rename.extension.ts: a store and `resolve`
// written from the seed, a preview, an apply, then a preview and a discard.
// Run: bun bindings/node/examples/runtime-demo.ts (after `cargo build --release --workspace`).
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import factory from "./batch-rename.extension.ts";
import { PendingActionStore, resolve, text } from "./seed-runtime.js";

const cwd = mkdtempSync(join(tmpdir(), "xcsh-demo-"));
for (const name of ["draft_notes.md", "draft_plan.md"]) writeFileSync(join(cwd, name), name);
const store = new PendingActionStore();
const tools = await factory({ cwd, pushPendingAction: (action) => store.push(action) });
const rename = tools.find((tool) => tool.name === "batch_rename_preview");
if (!rename) throw new Error(`batch_rename_preview not loaded: ${JSON.stringify(factory.loadErrors)}`);

const args = { files: ["draft_notes.md", "draft_plan.md"], find: "draft_", replace: "" };
console.log(text(await rename.execute("call-1", args)));
console.log(`pending: ${store.count} (${store.peek()?.label}); the runtime now forces resolve`);
console.log(text(await resolve(store, "apply", "the plan is right")));
console.log(`files: ${readdirSync(cwd).sort().join(", ")}`);

console.log(text(await rename.execute("call-2", { files: ["notes.md"], find: "notes", replace: "n" })));
console.log(text(await resolve(store, "discard", "keep the name")));
console.log(`files: ${readdirSync(cwd).sort().join(", ")}`);
await factory.close();

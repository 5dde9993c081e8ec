// A native tool's question in xcsh's runtime run as `omp --mode rpc` (issue 43): the question
// arrives as an `extension_ui_request` frame on stdout, this test answers it with an
// `extension_ui_response` frame on stdin, as an RPC client does. The native plugins are set up
// as the guide (docs/guide/src/runtime.md) says: the file in `.omp/tools/` (custom tools) and `--extension` (the UI). The
// model is the runtime's mock, registered as a provider by a test extension.
//
// Run by `cargo test --test upstream_runtime` (tests/tests/upstream_runtime.rs).
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";

import { mockRpcSession } from "./frames";

const EXT = path.join(import.meta.dir, "ext");
const SCRATCH_ROOT = path.join(import.meta.dir, ".scratch");

for (const ext of ["native-services.ts", "native-services-in-process.ts"]) {
  test(`--mode rpc (${ext}): a native tool's confirm is an extension_ui_request frame; the answer reaches the plugin`, async () => {
    fs.mkdirSync(SCRATCH_ROOT, { recursive: true });
    const root = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH_ROOT, "rpc-")));
    const cwd = path.join(root, "project");
    fs.mkdirSync(path.join(cwd, ".omp", "tools"), { recursive: true });
    // The guide's setup (docs/guide/src/runtime.md): the file in .omp/tools/ and the same file as an extension.
    const native = path.join(cwd, ".omp", "tools", "native-plugins.ts");
    fs.writeFileSync(native, `export { default } from ${JSON.stringify(path.join(EXT, ext))};\n`);
    const files: string[] = [];
    for (let i = 0; i < 21; i++) {
      files.push(`a${i}.txt`);
      fs.writeFileSync(path.join(cwd, `a${i}.txt`), "x");
    }
    const script = [
      { content: [{ type: "toolCall", name: "batch_rename_preview", arguments: { files, find: "a", replace: "b" } }] },
      { content: ["Nothing was renamed."] },
    ];
    const { child, frames, send, stderr } = mockRpcSession({
      cwd,
      script,
      extensions: [native],
      env: { ...process.env, HOME: root, PI_CONFIG_DIR: ".omp-home" },
    });
    try {
      await frames.next((f) => f.type === "ready", "ready");
      send({ id: "p1", type: "prompt", message: "Rename every a file to b." });
      const question = await frames.next((f) => f.type === "extension_ui_request" && f.method === "confirm", "confirm request");
      expect(question.title).toBe("Batch rename");
      expect(question.message).toStartWith("Plan renaming 21 files");
      send({ type: "extension_ui_response", id: question.id, confirmed: false });
      const ended = await frames.next(
        (f) => f.type === "tool_execution_end" && f.toolName === "batch_rename_preview",
        "tool_execution_end",
      );
      const result = JSON.stringify(ended.result ?? ended);
      expect(result).toContain("The user declined renaming 21 files; nothing was planned.");
      // Nothing renamed, nothing pending.
      expect(fs.readdirSync(cwd).filter((name) => name.startsWith("b"))).toEqual([]);
    } catch (error) {
      throw new Error(`${error}\n--- stderr\n${stderr().slice(-3000)}`);
    } finally {
      child.kill();
      await child.exited;
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
}

// How a native tool's result looks inside xcsh's runtime (issue 55): the component the binding's
// `renderResult` returns, drawn with the runtime's own theme (the package's public `theme`,
// dark) at a fixed width through `component.render(width)`, for the sample plugin's preview
// collapsed, expanded and while streaming, compared with the snapshot files in `snapshots/`
// (reviewed by hand; `XCSH_UPDATE_SNAPSHOTS=1` rewrites them). The runtime's `--mode rpc` does
// not draw, so the renderer is called as the runtime's tool view calls it.
import { afterAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { spawnSync } from "node:child_process";

import { initThemeSync, theme } from "@oh-my-pi/pi-coding-agent";
// The runtime's own ast_edit renderer, for the side-by-side only (a test may reach into the
// runtime's files; the binding never does).
import { astEditToolRenderer } from "@oh-my-pi/pi-coding-agent/tools/ast-edit";
import { nativeToolFactory } from "@xcsh/native-plugins";

const seed = require("../examples/seed-runtime.js");
const views = require("../view.js");
const PLUGIN_DIR = process.env.XCSH_TEST_PLUGIN_DIR!;
const SNAPSHOTS = path.join(import.meta.dir, "snapshots");
const WIDTH = 80;
const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-views-")));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/// `lines` against the snapshot `name` (written instead under XCSH_UPDATE_SNAPSHOTS=1).
function snapshot(name: string, lines: string[]) {
  const file = path.join(SNAPSHOTS, `${name}.txt`);
  const drawn = `${lines.join("\n")}\n`;
  if (process.env.XCSH_UPDATE_SNAPSHOTS === "1") {
    fs.mkdirSync(SNAPSHOTS, { recursive: true });
    fs.writeFileSync(file, drawn);
  }
  expect(drawn).toBe(fs.readFileSync(file, "utf8"));
}

test("the sample's preview, drawn with the runtime's theme, collapsed, expanded and streaming", async () => {
  initThemeSync(undefined, false, "dark", "light");
  const files = Array.from({ length: 7 }, (_, i) => `a${i}.txt`);
  for (const file of files) fs.writeFileSync(path.join(scratch, file), "x");
  const factory = nativeToolFactory({ plugins: [path.join(PLUGIN_DIR, "libbatch_rename.so")], defaultDirs: false });
  try {
    const tools = await factory(seed.runtimeApi(scratch, new seed.PendingActionStore()));
    const tool = tools.find((t: { name: string }) => t.name === "batch_rename_preview")!;
    const result = await tool.execute("call-1", { files, find: "a", replace: "b" });
    const draw = (options: { expanded: boolean; isPartial: boolean; spinnerFrame?: number }) =>
      tool.renderResult(result, options, theme).render(WIDTH);
    // The call while it runs, filled from its arguments.
    snapshot(
      "batch-rename-call",
      tool.renderCall({ files, find: "a", replace: "b" }, { expanded: false, isPartial: true, spinnerFrame: 3 }, theme).render(WIDTH),
    );
    snapshot("batch-rename-collapsed", draw({ expanded: false, isPartial: false }));
    snapshot("batch-rename-expanded", draw({ expanded: true, isPartial: false }));
    snapshot("batch-rename-streaming", draw({ expanded: false, isPartial: true, spinnerFrame: 3 }));
    // A failed call draws its message in the error role, as text.
    const failed = tool.renderResult(
      { content: [{ type: "text", text: "Tool \"batch_rename_preview\" failed: no such file a9.txt" }], isError: true },
      { expanded: false, isPartial: false },
      theme,
    );
    snapshot("batch-rename-error", failed.render(WIDTH));
  } finally {
    await factory.close();
  }
}, 60_000);

/// The native ast_edit's preview of one rewrite over four files, as `xcsh-plugins call --json`
/// returns it: `{content, details, view}`.
function nativeAstEditPreview(dir: string) {
  const tree: Record<string, string> = {
    "src/a.rs": "fn a() { foo(1); }\n",
    "src/b.rs": "fn b() { foo(2); foo(3); }\n",
    "c.rs": "fn c() { foo(4); }\n",
    "d.rs": "fn d() { foo(5); }\n",
  };
  for (const [file, text] of Object.entries(tree)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  const args = { ops: [{ pat: "foo($A)", out: "bar($A)" }] };
  const run = spawnSync(
    process.env.XCSH_CLI!,
    ["--no-default-dirs", "--cwd", dir, "call", "--json", "--discard", "ast_edit", JSON.stringify(args)],
    { encoding: "utf8" },
  );
  expect(run.status).toBe(0);
  return { args, result: JSON.parse(run.stdout).result };
}

test("the native ast_edit's preview, collapsed and expanded, beside the runtime's own ast_edit drawing the same change", () => {
  initThemeSync(undefined, false, "dark", "light");
  const dir = fs.mkdtempSync(path.join(scratch, "ast-"));
  const { args, result } = nativeAstEditPreview(dir);
  expect(result.view.status.title).toBe("AST Edit");
  const runtimeResult = views.toRuntimeResult(result);
  for (const expanded of [false, true]) {
    const options = { expanded, isPartial: false };
    const name = expanded ? "expanded" : "collapsed";
    snapshot(`ast-edit-native-${name}`, views.renderResult(runtimeResult, options, theme).render(WIDTH));
    // The same text and details through the runtime's own renderer (the native ast_edit's
    // text and details have the shape of the TypeScript tool's).
    const typescript = astEditToolRenderer.renderResult(
      { content: result.content, details: result.details },
      options,
      theme,
      args,
    );
    snapshot(`ast-edit-typescript-${name}`, typescript.render(WIDTH));
  }
  // A failed apply: its message, in the error role.
  const failed = views.renderResult(
    { content: [{ type: "text", text: "Nothing was written: src/a.rs changed since the preview." }], isError: true },
    { expanded: false, isPartial: false },
    theme,
  );
  snapshot("ast-edit-native-failed-apply", failed.render(WIDTH));
});

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

import { initThemeSync, theme } from "@oh-my-pi/pi-coding-agent";
import { nativeToolFactory } from "@xcsh/native-plugins";

const seed = require("../examples/seed-runtime.js");
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

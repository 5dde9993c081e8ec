// Run by .ci/windows under Node for Windows in Wine: loads the Windows addon through
// @xcsh/native-plugins' own index.js (XCSH_NATIVE_PLUGINS_ADDON names the cargo build), then in
// process and in a plugin process previews and applies a rename through the sample .dll via the
// runtime's store. Wine's Node cannot write to a pipe it was given as stdout, so the lines go to
// the file named by argv[2]; argv[3] is the plugin, argv[4] the working directory.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const [out, plugin, work] = process.argv.slice(2);
const log = (line) => fs.appendFileSync(out, line + "\n");
const fail = (error) => {
  log(`error: ${error && error.stack ? error.stack : error}`);
  process.exit(1);
};
process.on("uncaughtException", fail);
(async () => {
  const { nativeToolFactory } = require(path.join(__dirname, "..", "..", "bindings", "node", "index.js"));
  fs.writeFileSync(path.join(work, "notes-draft.md"), "draft\n");
  const renames = { "in-process": ["draft", "final"], process: ["final", "done"] };
  for (const [isolation, [find, replace]] of Object.entries(renames)) {
    const pending = [];
    const factory = nativeToolFactory({ plugins: [plugin], defaultDirs: false, isolation });
    const tools = await factory({ cwd: work, pushPendingAction: (action) => pending.push(action) });
    if (tools.length !== 1) throw new Error(`load errors: ${JSON.stringify(factory.loadErrors)}`);
    const preview = await tools[0].execute("call", { files: [`notes-${find}.md`], find, replace });
    const applied = await pending.pop().apply("under Wine");
    await factory.close();
    const first = (result) => result.content[0].text.split("\n")[0];
    log(`${isolation}: ${tools[0].name}: ${first(preview)} / ${first(applied)}`);
  }
  const left = fs.readdirSync(work).sort();
  log(`files: ${left.join(" ")}`);
  if (left.join(" ") !== "notes-done.md") throw new Error(`expected only notes-done.md, found ${left}`);
})().catch(fail);

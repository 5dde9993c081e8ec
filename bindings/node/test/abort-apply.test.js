// An apply aborted through its AbortSignal (issue 34), on the real built addon and the real
// batch_rename plugin renaming 2,000 files, in a plugin process and in-process, aborted at
// several moments (mid-commit included): the plugin's apply is dropped where it runs, so the
// tree is all old or all new with no file besides as soon as the promise settles, and the
// promise says which (rejects "was cancelled; the action is still pending": nothing changed).
// Run by `node --test` and `bun test` (see binding.test.js for the environment).
"use strict";

const { test } = typeof Bun !== "undefined" ? require("bun:test") : require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const { nativeToolFactory } = require("..");
const { PendingActionStore, runtimeApi, text } = require("../examples/seed-runtime.js");

const PLUGIN_DIR =
  process.env.XCSH_TEST_PLUGIN_DIR || path.join(__dirname, "..", "..", "..", "target", "debug");
const BATCH_RENAME = path.join(PLUGIN_DIR, "libbatch_rename.so");
const FILES = 2000;
const SLOW = 120_000;

/// Every file under `dir` (hidden ones too), by relative path, with its content.
function snapshot(dir, root = dir, files = {}) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) snapshot(full, root, files);
    else files[path.relative(root, full)] = fs.readFileSync(full, "utf8");
  }
  return files;
}

/// "old" or "new", whichever `dir` is exactly; fails on anything else (a torn apply, a leftover).
function whole(dir, old, renamed) {
  const now = snapshot(dir);
  const canonical = (files) => JSON.stringify(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1)));
  const same = (a, b) => canonical(a) === canonical(b);
  if (same(now, old)) return "old";
  if (same(now, renamed)) return "new";
  const extra = Object.keys(now).filter((name) => !(name in old) && !(name in renamed));
  assert.fail(`${dir} is neither as before nor as applied: ${Object.keys(now).length} files, extra ${extra.slice(0, 5)}`);
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/// Resolves once `moment` came: a number of milliseconds, or "journal" (the commit's journal
/// directory appeared: mid-commit); whether it was the journal, seen.
async function moment(cwd, when, settled) {
  if (when !== "journal") {
    await sleep(when);
    return false;
  }
  const journal = path.join(cwd, ".xcsh");
  while (!fs.existsSync(journal)) {
    if (settled()) return false;
    await sleep(0);
  }
  return true;
}

async function abortedApply(isolation, when) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-abort-"));
  const files = [];
  const old = {};
  const renamed = {};
  for (let n = 0; n < FILES; n++) {
    const name = `f${String(n).padStart(4, "0")}_old.txt`;
    fs.writeFileSync(path.join(cwd, name), `file ${n}\n`);
    files.push(name);
    old[name] = `file ${n}\n`;
    renamed[name.replace("_old", "_new")] = `file ${n}\n`;
  }
  const store = new PendingActionStore();
  const factory = nativeToolFactory({ plugins: [BATCH_RENAME], defaultDirs: false, isolation });
  const tools = Object.fromEntries((await factory(runtimeApi(cwd, store))).map((tool) => [tool.name, tool]));
  try {
    await tools.batch_rename_preview.execute("c1", { files, find: "_old", replace: "_new" });
    const action = store.pop();
    const controller = new AbortController();
    let settled = false;
    const applying = action.apply("test", controller.signal).then(
      (result) => ({ result }),
      (error) => ({ error }),
    );
    applying.then(() => (settled = true));
    const midCommit = await moment(cwd, when, () => settled);
    controller.abort();
    const { result, error } = await applying;
    // The promise settles once the apply has ended where it ran: the tree is settled now.
    const tree = whole(cwd, old, renamed);
    const context = `${isolation}, aborted at ${when}: ${error ? error.message : text(result)}`;
    if (error) {
      assert.equal(
        error.message,
        `apply of "Batch rename: ${FILES} files" was cancelled; the action is still pending`,
        context,
      );
      assert.equal(tree, "old", `aborted, yet the files changed: ${context}`);
      // Still pending: applied again, without an abort, it renames every file.
      assert.equal(text(await action.apply("again")), "Applied batch rename. Reason: again");
      assert.equal(whole(cwd, old, renamed), "new", context);
    } else {
      assert.equal(text(result), "Applied batch rename. Reason: test", context);
      assert.equal(tree, "new", `applied, yet not every file changed: ${context}`);
      await assert.rejects(action.apply("again"), /already applied/);
    }
    return { tree, midCommit };
  } finally {
    await factory.close();
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

for (const isolation of ["process", "in-process"]) {
  test(`${isolation}: an apply aborted through its signal is undone where it runs, or completes, and says which`, { timeout: SLOW }, async () => {
    let undoneMidCommit = 0;
    for (const when of ["journal", 1, 40, 150, 500, "journal"]) {
      const { tree, midCommit } = await abortedApply(isolation, when);
      if (tree === "old" && midCommit) undoneMidCommit += 1;
    }
    assert.ok(undoneMidCommit > 0, "no abort came while the commit ran and undid it");
  });
}

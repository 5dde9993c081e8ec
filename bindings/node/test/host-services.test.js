// Host services through the binding (issue 43), on the real addon and plugin `.so` files,
// under `node --test` and `bun test`: a scripted `pi.ui` (what a runtime with a real UI
// hands the factory) answers the sample plugin's confirmation and a form, a question open when
// its call is aborted is withdrawn (its dialog's signal fires), no UI means the defaults, no
// model means `No model available to plugins in this host.`, and session events reach the
// native tools' `on_session` with their earlier results. A pending action's apply and reject
// ask the same UI (docs/guide/src/pending.md).
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
const plugin = (name) => path.join(PLUGIN_DIR, `lib${name}.so`);
const SLOW = 60_000;
const NO_MODEL = "No model available to plugins in this host.";

/// Load `plugins` for a runtime whose `pi.ui` is `ui` (none: no UI).
async function load(plugins, isolation, ui) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-node-host-"));
  const store = new PendingActionStore();
  const pi = runtimeApi(cwd, store);
  if (ui) Object.assign(pi, { ui, hasUI: true });
  const factory = nativeToolFactory({ plugins, defaultDirs: false, isolation });
  const tools = Object.fromEntries((await factory(pi)).map((tool) => [tool.name, tool]));
  return { factory, store, cwd, tools };
}

/// 21 files and the arguments renaming them all (above the sample's threshold of 20).
function manyFiles(cwd) {
  const files = [];
  for (let i = 0; i < 21; i++) {
    files.push(`a${i}.txt`);
    fs.writeFileSync(path.join(cwd, `a${i}.txt`), "x");
  }
  return { files, find: "a", replace: "b" };
}

for (const isolation of ["process", "in-process"]) {
  test(`${isolation}: an action's apply and reject ask the runtime's UI`, { timeout: SLOW }, async () => {
    const asked = [];
    const notes = [];
    const ui = {
      confirm: async (title, message) => (asked.push([title, message]), true),
      notify: (message) => notes.push(message),
    };
    const { factory, store, tools } = await load([plugin("fixture_action_context")], isolation, ui);
    try {
      await tools.ask_on_apply.execute("call-1", {});
      assert.equal(store.count, 1);
      assert.deepEqual(asked, [], "nothing asked before the apply");
      const applied = await store.pop().apply("go");
      assert.equal(text(applied), "has_ui=true confirmed=true echo=from-apply");
      assert.deepEqual(asked, [["Apply", "Really apply?"]]);
      assert.deepEqual(notes, ["applying (go)"]);
      await tools.ask_on_apply.execute("call-2", {});
      const rejected = await store.pop().reject("not now");
      assert.equal(text(rejected), "rejected with has_ui=true");
      assert.deepEqual(notes, ["applying (go)", "discarded (not now)"]);
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: the runtime's UI answers the sample's confirmation`, { timeout: SLOW }, async () => {
    const asked = [];
    const answers = [false, true];
    const ui = { confirm: async (title, message) => (asked.push([title, message]), answers.shift()) };
    const { factory, store, cwd, tools } = await load([plugin("batch_rename")], isolation, ui);
    try {
      const args = manyFiles(cwd);
      const no = await tools.batch_rename_preview.execute("call-1", args);
      assert.equal(text(no), "The user declined renaming 21 files; nothing was planned.");
      assert.equal(store.count, 0);
      assert.equal(asked[0][0], "Batch rename");
      assert.match(asked[0][1], /^Plan renaming 21 files/);
      const yes = await tools.batch_rename_preview.execute("call-2", args);
      assert.match(text(yes), /^Prepared rename plan for 21 files/);
      assert.equal(store.count, 1);
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: without a UI nothing is asked, and there is no model`, { timeout: SLOW }, async () => {
    const { factory, store, cwd, tools } = await load([plugin("batch_rename"), plugin("fixture_conformance")], isolation);
    try {
      const planned = await tools.batch_rename_preview.execute("call-1", manyFiles(cwd));
      assert.match(text(planned), /^Prepared rename plan for 21 files/);
      assert.equal(store.count, 1);
      await assert.rejects(tools.test_sampling.execute("call-2", { prompt: "hi" }), { message: NO_MODEL });
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: a form asked field by field on the runtime's dialogs`, { timeout: SLOW }, async () => {
    const typed = ["alice", "alice@example.com"];
    const ui = {
      input: async () => typed.shift(),
      confirm: async (_title, message) => message === "Submit?",
    };
    const { factory, tools } = await load([plugin("fixture_conformance")], isolation, ui);
    try {
      const answered = await tools.test_elicitation.execute("call-1", { message: "Who are you?" });
      assert.equal(
        text(answered),
        'User response: action=accept, content={"username":"alice","email":"alice@example.com"}',
      );
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: a form's choices are asked by their titles and answered with their values`, { timeout: SLOW }, async () => {
    // The addon reads the schema (enum, oneOf titles, legacy enumNames, arrays of choices)
    // into the fields the terminal asks too; the runtime's dialogs see titles, never values.
    const asked = [];
    const picks = {
      "Select one option": "option2",
      "Select one option with titles": "Third Option",
      "Select one option (legacy)": "Option Two",
      "Select multiple options (dismiss to finish)": ["option3", "option1"],
      "Select multiple options with titles (dismiss to finish)": ["Second Choice"],
    };
    const ui = {
      select: async (title, labels) => {
        const key = title.slice(title.indexOf(": ") + 2);
        asked.push([key, labels]);
        const pick = picks[key];
        return Array.isArray(pick) ? pick.shift() : pick;
      },
      confirm: async (_title, message) => message === "Submit?",
    };
    const { factory, tools } = await load([plugin("fixture_conformance")], isolation, ui);
    try {
      const answered = await tools.test_elicitation_sep1330_enums.execute("call-1", {});
      assert.equal(
        text(answered),
        "Elicitation completed: action=accept, content=" +
          JSON.stringify({
            untitledSingle: "option2",
            titledSingle: "value3",
            legacyEnum: "opt2",
            untitledMulti: ["option3", "option1"],
            titledMulti: ["value2"],
          }),
      );
      const shown = Object.fromEntries(asked.map(([key, labels]) => [key, labels]));
      assert.deepEqual(shown["Select one option with titles"], ["First Option", "Second Option", "Third Option"]);
      assert.deepEqual(shown["Select one option (legacy)"], ["Option One", "Option Two", "Option Three"]);
      // A multiple choice offers what is left after each pick.
      assert.deepEqual(asked.filter(([key]) => key.startsWith("Select multiple options (")).map(([, l]) => l), [
        ["option1", "option2", "option3"],
        ["option1", "option2"],
        ["option2"],
      ]);
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: aborting a call withdraws its open question`, { timeout: SLOW }, async () => {
    let dialog = null;
    const ui = {
      confirm: (_title, _message, options) =>
        new Promise((resolve) => {
          dialog = options.signal;
          options.signal.addEventListener("abort", () => resolve(false));
        }),
    };
    const { factory, cwd, tools } = await load([plugin("batch_rename")], isolation, ui);
    try {
      const controller = new AbortController();
      const running = tools.batch_rename_preview.execute("call-1", manyFiles(cwd), undefined, undefined, controller.signal);
      while (dialog === null) await new Promise((resolve) => setTimeout(resolve, 20));
      controller.abort();
      await assert.rejects(running);
      for (let i = 0; i < 100 && !dialog.aborted; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(dialog.aborted, true, "the dialog was withdrawn");
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: audio and resources reach the runtime as a line naming each`, { timeout: SLOW }, async () => {
    const { factory, tools } = await load([plugin("fixture_conformance")], isolation);
    try {
      const audio = await tools.test_audio_content.execute("a1", {});
      assert.deepEqual(audio.content, [{ type: "text", text: "[audio audio/wav, 44 bytes]" }]);
      const mixed = await tools.test_multiple_content_types.execute("m1", {});
      assert.deepEqual(
        mixed.content.map((block) => block.type),
        ["text", "image", "text"],
      );
      assert.equal(mixed.content[2].text, "[resource test://mixed-content-resource (application/json), 27 bytes]");
    } finally {
      await factory.close();
    }
  });

  test(`${isolation}: session events reach on_session with the tool's earlier results`, { timeout: SLOW }, async () => {
    const { factory, tools } = await load([plugin("fixture_todo")], isolation);
    try {
      const todo = tools.todo;
      await todo.execute("t1", { action: "add", item: "a" });
      const two = await todo.execute("t2", { action: "add", item: "b" });
      assert.equal(text(two), "todo: [a, b]");
      // The runtime's history after a branch back to where only `a` had been added.
      const branch = [
        { type: "message", message: { role: "toolResult", toolName: "todo", toolCallId: "t1", details: { items: ["a"] } } },
        { type: "message", message: { role: "toolResult", toolName: "other", toolCallId: "x", details: { items: ["z"] } } },
      ];
      const ctx = { sessionManager: { getBranch: () => branch, getSessionId: () => "s1", getEntries: () => branch } };
      await todo.onSession({ reason: "branch", previousSessionFile: undefined }, ctx);
      const listed = await todo.execute("t3", { action: "list" });
      assert.equal(text(listed), "todo: [a]");
      assert.deepEqual(listed.details.heard, ["branch"]);
      await todo.onSession({ reason: "auto_compaction_start" }, ctx);
      const after = await todo.execute("t4", { action: "list" });
      assert.deepEqual(after.details.heard, ["branch", "auto_compaction_start"]);
    } finally {
      await factory.close();
    }
  });
}

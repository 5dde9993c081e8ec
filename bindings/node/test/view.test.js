// How a native tool's result looks in the runtime (issue 55): the view a plugin gave, carried
// in `details["xcsh/view"]` and drawn by the tools' `renderResult` with the theme the runtime
// hands it; the text otherwise. On the real addon and the sample plugin, under Node and Bun
// (tests/tests/node_binding.rs). The theme here marks each role (`<role>text</role>`), so the
// lines show which role drew what; the runtime's own theme is the runtime tests' business.
"use strict";

const { test } = typeof Bun !== "undefined" ? require("bun:test") : require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const { nativeToolFactory } = require("..");
const { renderResult, toRuntimeResult, withoutView } = require("../view.js");
const { PendingActionStore, runtimeApi } = require("../examples/seed-runtime.js");

const PLUGIN_DIR =
  process.env.XCSH_TEST_PLUGIN_DIR || path.join(__dirname, "..", "..", "..", "target", "debug");
const SLOW = 60_000;
const ROLES = new Set(["toolOutput", "toolTitle", "success", "error", "warning", "muted", "dim", "accent", "toolDiffAdded", "toolDiffRemoved"]);
const theme = {
  fg(role, text) {
    if (!ROLES.has(role)) throw new Error(`no colour ${role}`);
    return `<${role}>${text}</${role}>`;
  },
  bold: (text) => `*${text}*`,
};
const draw = (result, options, width = 80) => renderResult(result, { expanded: false, isPartial: false, ...options }, theme).render(width);

test("the sample's preview is drawn from its view, collapsed and expanded", { timeout: SLOW }, async () => {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-view-"));
  const files = Array.from({ length: 7 }, (_, i) => `a${i}.txt`);
  for (const file of files) fs.writeFileSync(path.join(cwd, file), "x");
  for (const isolation of ["process", "in-process"]) {
    const factory = nativeToolFactory({ plugins: [path.join(PLUGIN_DIR, "libbatch_rename.so")], defaultDirs: false, isolation });
    try {
      const tools = await factory(runtimeApi(cwd, new PendingActionStore()));
      const tool = tools.find((t) => t.name === "batch_rename_preview");
      const result = await tool.execute("call-1", { files, find: "a", replace: "b" });
      assert.match(result.content[0].text, /^Prepared rename plan for 7 files/, isolation);
      assert.equal("view" in result, false, "the view rides in details");
      assert.equal(result.details["xcsh/view"].status.title, "Batch Rename");

      const collapsed = tool.renderResult(result, { expanded: false, isPartial: false }, theme).render(80);
      assert.equal(
        collapsed[0],
        "<accent>◌</accent> <toolTitle>*Batch Rename*</toolTitle> <muted>a → b</muted> <warning>[proposed]</warning><dim> · 7 files</dim>",
      );
      assert.deepEqual(collapsed.slice(1), [
        "<muted>from    to</muted>",
        "<toolOutput>a0.txt  b0.txt</toolOutput>",
        "<toolOutput>a1.txt  b1.txt</toolOutput>",
        "<toolOutput>a2.txt  b2.txt</toolOutput>",
        "<toolOutput>a3.txt  b3.txt</toolOutput>",
        "<toolOutput>a4.txt  b4.txt</toolOutput>",
        "<muted>… 2 more renames</muted>",
      ]);
      const expanded = tool.renderResult(result, { expanded: true, isPartial: false }, theme).render(80);
      assert.equal(expanded.length, 1 + 1 + 7, isolation);
      assert.equal(expanded[8], "<toolOutput>a6.txt  b6.txt</toolOutput>");
      // The call, while the arguments stream in: its call view filled by the addon.
      assert.deepEqual(tool.renderCall({ find: "a", files }, { expanded: false, isPartial: true }, theme).render(80), [
        "<accent>◌</accent> <toolTitle>*Batch Rename*</toolTitle><dim> · 7 files</dim>",
      ]);
      assert.deepEqual(
        tool.renderCall({ find: "a", replace: "b", files }, { expanded: false, isPartial: true, spinnerFrame: 1 }, theme).render(80),
        ["<accent>⠙</accent> <toolTitle>*Batch Rename*</toolTitle> <muted>a → b</muted><dim> · 7 files</dim>"],
      );
      // Streaming: the status shows the runtime's spinner frame.
      const partial = tool.renderResult(result, { expanded: false, isPartial: true, spinnerFrame: 2 }, theme).render(80);
      assert.match(partial[0], /^<accent>⠹<\/accent>/);
    } finally {
      await factory.close();
    }
  }
});

test("a tool without a call view shows its label while it runs", { timeout: SLOW }, async () => {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-view-"));
  const factory = nativeToolFactory({ plugins: [path.join(PLUGIN_DIR, "libfixture_journal.so")], defaultDirs: false });
  try {
    const tools = await factory(runtimeApi(cwd, new PendingActionStore()));
    const drawn = tools[0].renderCall({}, { expanded: false, isPartial: true }, theme).render(80);
    assert.deepEqual(drawn, [`<toolTitle>*${tools[0].label}*</toolTitle>`]);
  } finally {
    await factory.close();
  }
});

test("a result without a view, an error, or a view that fails to draw shows the text", () => {
  const text = { content: [{ type: "text", text: "one\ntwo" }] };
  assert.deepEqual(draw(text), ["<toolOutput>one</toolOutput>", "<toolOutput>two</toolOutput>"]);
  assert.deepEqual(draw({ ...text, isError: true, details: { "xcsh/view": { status: { title: "x" } } } }), [
    "<error>one</error>",
    "<error>two</error>",
  ]);
  // Long lines wrap at the width, as the runtime's own text does.
  assert.deepEqual(draw({ content: [{ type: "text", text: "abcdef" }] }, {}, 4), [
    "<toolOutput>abcd</toolOutput>",
    "<toolOutput>ef</toolOutput>",
  ]);
  const broken = { content: [{ type: "text", text: "t" }], details: { "xcsh/view": { blocks: [{ type: "table", rows: 7 }] } } };
  assert.deepEqual(draw(broken), ["<toolOutput>t</toolOutput>"]);
});

test("roles of a newer API draw as tool output, blocks of one are skipped, lines are cut at the width", () => {
  const view = {
    status: { state: "sparkling", title: "T", badge: { label: "b", role: "neon" } },
    blocks: [
      { type: "hologram" },
      { type: "text", spans: [{ text: "x", role: "neon" }, { text: "y\nz", role: "accent" }] },
      { type: "diff", path: "a.rs", lines: [{ kind: "added", text: "0123456789" }], omitted: 2 },
    ],
  };
  const lines = draw({ content: [], details: { "xcsh/view": view } }, {}, 8);
  assert.deepEqual(lines, [
    "<accent>◌</accent> <toolTitle>*T*</toolTitle> <toolOutput>[b]</toolOutput>",
    "<toolOutput>x</toolOutput><accent>y</accent>",
    "<accent>z</accent>",
    "<accent>a.rs</accent>",
    "<toolDiffAdded>+ 01234</toolDiffAdded><dim>…</dim>",
    "<muted>… 2 mor</muted><dim>…</dim>",
  ]);
});

test("the view is the binding's: a plugin's earlier results come back without it", () => {
  const view = { status: { state: "success", title: "T" } };
  assert.deepEqual(toRuntimeResult({ content: [], view }), { content: [], details: { "xcsh/view": view } });
  assert.deepEqual(toRuntimeResult({ content: [], details: { n: 1 }, view }), {
    content: [],
    details: { n: 1, "xcsh/view": view },
  });
  assert.deepEqual(toRuntimeResult({ content: [], details: [1, 2], view }), { content: [], details: [1, 2] });
  assert.equal(withoutView({ "xcsh/view": view }), null);
  assert.deepEqual(withoutView({ n: 1, "xcsh/view": view }), { n: 1 });
  assert.deepEqual(withoutView({ n: 1 }), { n: 1 });
});

// How a native tool's result looks in xcsh's runtime: the view a plugin gave
// (`xcsh_plugin_api::view::View`, already cleaned and bounded by the session) drawn with the
// theme the runtime hands `renderResult`, as a component of its own (`render(width)` returns
// the lines; pi-tui's `Component` is that shape). Nothing here reads the runtime's internal
// files, which move between versions: only the `theme` argument (`fg(role, text)`,
// `bold(text)`) and the options (`expanded`, `isPartial`, `spinnerFrame`).
//
// The runtime hands `renderResult` only a result's `content`, `details` and `isError`, so the
// view rides in `details` under "xcsh/view" (`toRuntimeResult`); the binding takes it out again
// before the plugin sees its earlier results (`withoutView`). A result without a view, an
// error, or a view that fails to draw shows the text, as the runtime's own fallback does.
"use strict";

const VIEW_KEY = "xcsh/view";

/// `result` (the addon's `{content, details, view}`) as the runtime keeps it: the view moved
/// into `details` (a plugin's details that are not an object keep no view: the text stays).
function toRuntimeResult(result) {
  if (!result || typeof result !== "object" || !("view" in result)) return result;
  const { view, ...rest } = result;
  const details = rest.details;
  if (details === undefined || details === null) return { ...rest, details: { [VIEW_KEY]: view } };
  if (typeof details === "object" && !Array.isArray(details)) {
    return { ...rest, details: { ...details, [VIEW_KEY]: view } };
  }
  return rest;
}

/// `details` as the plugin gave them: without the view `toRuntimeResult` added (`null` when
/// the view was all there was).
function withoutView(details) {
  if (!details || typeof details !== "object" || Array.isArray(details) || !(VIEW_KEY in details)) {
    return details;
  }
  const { [VIEW_KEY]: _view, ...rest } = details;
  return Object.keys(rest).length === 0 ? null : rest;
}

const ROLES = {
  tool_output: "toolOutput",
  success: "success",
  error: "error",
  warning: "warning",
  muted: "muted",
  accent: "accent",
};
const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The runtime's `renderResult` for native tools.
function renderResult(result, options, theme) {
  const view = result && result.details && typeof result.details === "object" ? result.details[VIEW_KEY] : undefined;
  const opts = options || {};
  if (view && typeof view === "object" && !(result && result.isError)) {
    try {
      const lines = viewLines(view, opts);
      // A view that draws nothing (nothing it holds could be read) shows the text instead.
      if (lines.some((segments) => segments.some(([, text]) => text))) {
        return component((width) => lines.map((segments) => paint(cut(segments, width), theme)));
      }
    } catch {
      // A view that cannot be drawn: the text, below.
    }
  }
  const text = textOf(result);
  const role = result && result.isError ? "error" : "toolOutput";
  return component((width) =>
    text.split("\n").flatMap((line) => wrap(line, width).map((part) => paint([[role, part]], theme))),
  );
}

/// The runtime's `renderCall` for a native tool: the status line its call view gives
/// (`status`, filled by the addon from the call's arguments, which may still be arriving), or
/// the tool's label as the runtime shows one without a renderer.
function renderCall(status, label, options, theme) {
  if (status && typeof status === "object") {
    try {
      const lines = viewLines({ status }, { ...(options || {}), isPartial: true });
      return component((width) => lines.map((segments) => paint(cut(segments, width), theme)));
    } catch {
      // The label, below.
    }
  }
  return component((width) => [paint(cut([["toolTitle", String(label), "bold"]], width), theme)]);
}

/// A component drawing `draw(width)`, redrawn on every call.
function component(draw) {
  return {
    render(width) {
      return draw(Math.max(1, Number(width) || 80));
    },
    invalidate() {},
  };
}

/// The view as lines, each a list of `[role, text]` segments (roles are the theme's).
function viewLines(view, options) {
  const lines = [];
  const status = view.status;
  if (status && typeof status === "object") {
    const state = options.isPartial ? "pending" : status.state;
    const icon =
      state === "success" ? ["success", "✔"]
      : state === "warning" ? ["warning", "⚠"]
      : state === "error" ? ["error", "✘"]
      : ["accent", typeof options.spinnerFrame === "number" ? SPINNER[options.spinnerFrame % SPINNER.length] : "◌"];
    const line = [icon, ["", " "], ["toolTitle", String(status.title ?? ""), "bold"]];
    if (status.description) line.push(["", " "], ["muted", String(status.description)]);
    if (status.badge && typeof status.badge === "object") {
      line.push(["", " "], [role(status.badge.role), `[${status.badge.label}]`]);
    }
    for (const fact of Array.isArray(status.meta) ? status.meta : []) line.push(["dim", ` · ${fact}`]);
    lines.push(line);
  }
  blocksLines(Array.isArray(view.blocks) ? view.blocks : [], Boolean(options.expanded), lines);
  return lines;
}

function blocksLines(blocks, expanded, lines) {
  for (const block of blocks) {
    if (!block || typeof block !== "object") continue;
    switch (block.type) {
      case "text": {
        let line = [];
        for (const span of Array.isArray(block.spans) ? block.spans : []) {
          const parts = String(span.text ?? "").split("\n");
          parts.forEach((part, i) => {
            if (i > 0) {
              lines.push(line);
              line = [];
            }
            line.push([role(span.role), part]);
          });
        }
        lines.push(line);
        break;
      }
      case "files":
        for (const file of Array.isArray(block.files) ? block.files : []) {
          const line = [["accent", String(file.path ?? "")]];
          if (file.note) line.push(["dim", `  ${file.note}`]);
          lines.push(line);
        }
        break;
      case "diff":
        lines.push([["accent", String(block.path ?? "")]]);
        for (const diff of Array.isArray(block.lines) ? block.lines : []) {
          const [marker, shade] =
            diff.kind === "added" ? ["+", "toolDiffAdded"] : diff.kind === "removed" ? ["-", "toolDiffRemoved"] : [" ", "toolOutput"];
          lines.push([[shade, `${marker} ${diff.text ?? ""}`]]);
        }
        if (block.omitted > 0) lines.push([["muted", `… ${block.omitted} more lines`]]);
        break;
      case "table": {
        const rows = [Array.isArray(block.columns) ? block.columns : [], ...(Array.isArray(block.rows) ? block.rows : [])].map(
          (row) => row.map((cell) => String(cell)),
        );
        const widths = [];
        for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] || 0, length(cell))));
        rows.forEach((row, index) => {
          const text = row.map((cell, i) => cell + " ".repeat(widths[i] - length(cell))).join("  ").trimEnd();
          lines.push([[index === 0 ? "muted" : "toolOutput", text]]);
        });
        if (block.omitted > 0) lines.push([["muted", `… ${block.omitted} more rows`]]);
        break;
      }
      case "section":
        blocksLines(Array.isArray(expanded ? block.expanded : block.collapsed) ? (expanded ? block.expanded : block.collapsed) : [], expanded, lines);
        break;
      default:
      // A block of a newer API: skipped.
    }
  }
}

/// The theme's name for a view's role (an unknown one is tool output).
function role(name) {
  return ROLES[name] || "toolOutput";
}

/// Segments drawn with the theme: a role it lacks draws the text plain.
function paint(segments, theme) {
  return segments
    .map(([shade, text, bold]) => {
      if (!text) return "";
      let out = text;
      if (bold && theme && typeof theme.bold === "function") out = safely(() => theme.bold(out), out);
      if (shade && theme && typeof theme.fg === "function") out = safely(() => theme.fg(shade, out), out);
      return out;
    })
    .join("");
}

function safely(draw, fallback) {
  try {
    const drawn = draw();
    return typeof drawn === "string" ? drawn : fallback;
  } catch {
    return fallback;
  }
}

/// `segments` cut to `width` characters, the last cut one ending in `…`.
function cut(segments, width) {
  const total = segments.reduce((sum, [, text]) => sum + length(text), 0);
  if (total <= width) return segments;
  const out = [];
  let left = width - 1;
  for (const [shade, text, bold] of segments) {
    if (left <= 0) break;
    const chars = Array.from(text);
    out.push([shade, chars.slice(0, left).join(""), bold]);
    left -= Math.min(left, chars.length);
  }
  out.push(["dim", "…"]);
  return out;
}

/// `line` in pieces of at most `width` characters.
function wrap(line, width) {
  const chars = Array.from(line.replace(/\t/g, "    "));
  if (chars.length <= width) return [chars.join("")];
  const parts = [];
  for (let at = 0; at < chars.length; at += width) parts.push(chars.slice(at, at + width).join(""));
  return parts;
}

function length(text) {
  return Array.from(String(text)).length;
}

/// The result's text blocks, joined (what the runtime shows for a tool without a renderer).
function textOf(result) {
  const content = result && Array.isArray(result.content) ? result.content : [];
  return content
    .filter((block) => block && block.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
}

module.exports = { toRuntimeResult, withoutView, renderResult, renderCall, VIEW_KEY };

#!/usr/bin/env bash
# Issue 52 line counts: each tool in TypeScript (the runtime's custom-tool API) and in Rust
# with #[tool], after each language's formatter, counting non-blank, non-comment lines.
# Formats temporary copies only; the committed sources are never rewritten.
#   TS:   oxfmt (pinned in package-lock.json; settings from the runtime repo's .oxfmtrc.json)
#   Rust: rustfmt with the workspace's config (rustfmt.toml if any, else defaults), edition 2021
# Doc comments (/// //! /** */ /*! */) are counted two ways: excluded like any comment, and
# counted as code (in Rust the doc comment IS the description the TypeScript spells out).
# Usage: tools/line-counts/count.sh   (run `npm ci` in tools/line-counts first)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

oxfmt="$here/node_modules/.bin/oxfmt"
[ -x "$oxfmt" ] || { echo "oxfmt missing: run 'npm ci' in $here" >&2; exit 1; }

# tool name | TypeScript source | Rust source
tools=(
  "git_cleanup|$here/git_cleanup.ts|$root/plugins/git-cleanup/src/lib.rs"
  "batch_rename_preview|$here/batch_rename_preview.ts|$here/batch_rename_preview.rs"
  "hello|$here/hello.ts|$here/hello.rs"
)

for row in "${tools[@]}"; do
  IFS='|' read -r name ts rs <<<"$row"
  cp "$ts" "$tmp/$name.ts"
  cp "$rs" "$tmp/$name.rs"
done
"$oxfmt" -c "$here/.oxfmtrc.json" "$tmp"/*.ts >/dev/null
rustfmt_config=()
for c in "$root/rustfmt.toml" "$root/.rustfmt.toml"; do
  [ -f "$c" ] && rustfmt_config=(--config-path "$c")
done
rustfmt --edition 2021 "${rustfmt_config[@]}" "$tmp"/*.rs

echo "oxfmt $("$oxfmt" --version | sed 's/^Version: //'), $(rustfmt --version)"
names=""
for row in "${tools[@]}"; do names="$names ${row%%|*}"; done
node - "$tmp" $names <<'JS'
const fs = require("fs");
const [dir, ...names] = process.argv.slice(2);

// Drops a `#[cfg(test)] mod tests { ... }` module (formatted code: it ends at the first
// line that is the module's closing brace at the attribute's indentation).
function withoutTests(lines) {
	const out = [];
	for (let i = 0; i < lines.length; i++) {
		const m = /^(\s*)#\[cfg\(test\)\]\s*$/.exec(lines[i]);
		if (m && /^\s*mod tests\s*\{/.test(lines[i + 1] ?? "")) {
			i += 2;
			while (i < lines.length && lines[i] !== `${m[1]}}`) i++;
			continue;
		}
		out.push(lines[i]);
	}
	return out;
}

// Counts code lines and doc-comment lines (ordinary comments and blanks are neither).
// A line holding code and a trailing comment is code.
function count(text, rust) {
	let lines = text.split("\n");
	if (rust) lines = withoutTests(lines);
	let code = 0;
	let doc = 0;
	let block = null; // "doc" | "comment" while inside /* */
	for (const raw of lines) {
		const line = raw.trim();
		if (block) {
			if (block === "doc") doc++;
			if (line.includes("*/")) block = null;
			continue;
		}
		if (line === "") continue;
		if (line.startsWith("///") || line.startsWith("//!")) {
			doc++;
			continue;
		}
		if (line.startsWith("//")) continue;
		if (line.startsWith("/*")) {
			const isDoc = (line.startsWith("/**") && !line.startsWith("/**/")) || line.startsWith("/*!");
			if (isDoc) doc++;
			if (!line.slice(2).includes("*/")) block = isDoc ? "doc" : "comment";
			continue;
		}
		code++;
	}
	return { code, withDocs: code + doc };
}

const pad = (s, n) => String(s).padEnd(n);
const cols = [22, 10, 12, 12, 14, 14, 16, 8];
const row = cells => console.log(cells.map((c, i) => pad(c, cols[i])).join(" ").trimEnd());
row(["tool", "TS lines", "TS (+docs)", "Rust lines", "Rust (+docs)", "ratio", "ratio (+docs)", "≤ 1.3"]);
row(cols.map(n => "-".repeat(n)));
let over = false;
for (const name of names) {
	const ts = count(fs.readFileSync(`${dir}/${name}.ts`, "utf8"), false);
	const rs = count(fs.readFileSync(`${dir}/${name}.rs`, "utf8"), true);
	const r1 = rs.code / ts.code;
	const r2 = rs.withDocs / ts.withDocs;
	const ok = r => (r <= 1.3 ? "yes" : ((over = true), "NO"));
	row([name, ts.code, ts.withDocs, rs.code, rs.withDocs, r1.toFixed(2), r2.toFixed(2), `${ok(r1)}/${ok(r2)}`]);
}
console.log("ratio = Rust/TS; '+docs' counts doc comments (/// //! /** */) as code in both languages.");
console.log("Rust git_cleanup: plugins/git-cleanup/src/lib.rs without its #[cfg(test)] module.");
if (over) {
	console.error("a Rust tool is over 1.3 times its TypeScript line count (issue 52's target)");
	process.exit(1);
}
JS

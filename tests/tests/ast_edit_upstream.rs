//! `ast_edit` against the engine of xcsh's own `ast_edit`: the `astEdit` function of
//! `@oh-my-pi/pi-natives` (the runtime's native addon, installed with the runtime in
//! `bindings/node/runtime-test`, loaded under Bun by `ast-edit-reference.ts`).
//!
//! Each case is a small tree (hidden files and directories, ignored files, `node_modules`,
//! statements with and without their terminator, nested matches) in one of six languages.
//! Both tools rewrite a copy of it; then, as issue 46 asks:
//! - the counts are `astEdit`'s (its dry run: `totalReplacements` and per file);
//! - where `astEdit` applies, both trees are byte for byte the same;
//! - where it refuses (nested matches: `Overlapping replacements detected`), its tree is left
//!   as it was, and `ast_edit` wrote every match, inner first (the case's expected files).
//!
//! Without the runtime the test says so and passes, unless `XCSH_REQUIRE_UPSTREAM_RUNTIME=1`
//! (set by `.ci/run`).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use xcsh_integration_tests::artifacts;
use xcsh_integration_tests::node::upstream_runtime;
use xcsh_integration_tests::tree::{snapshot, Snapshot};

/// One comparison: a tree, the rewrites, and, for nested matches `astEdit` refuses, the
/// files as `ast_edit` must write them.
struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    ops: &'static [(&'static str, &'static str)],
    nested: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        name: "JavaScript require with and without `;`, hidden, ignored and node_modules files",
        files: &[
            (".gitignore", "gen/\n"),
            (
                "a.js",
                "const x = require(\"x\");\nconst y = require('y')\nlet z = require(\"z\");\nfunction f() {\n  const w = require(\"w\"); return w;\n}\n",
            ),
            (".eslintrc.js", "const p = require(\"p\");\nmodule.exports = {};\n"),
            (".config/tool.js", "const q = require(\"q\")\n"),
            ("gen/g.js", "const g = require(\"g\");\n"),
            ("node_modules/m/index.js", "const m = require(\"m\");\n"),
        ],
        ops: &[("const $A = require($M)", "import $A from $M")],
        nested: &[],
    },
    Case {
        name: "TypeScript comparisons and var declarations, two rewrites",
        files: &[
            (
                "src/a.ts",
                "if (a === undefined || a === null) { f(); }\nvar b = 1;\nvar c = 2\nfunction g(x: number) {\n  return x === undefined || x === null;\n}\n",
            ),
            (".hidden.ts", "var d: string = \"d\";\n"),
        ],
        ops: &[
            ("$A === undefined || $A === null", "$A == null"),
            ("var $A = $B", "let $A = $B"),
        ],
        nested: &[],
    },
    Case {
        name: "TSX calls inside JSX",
        files: &[(
            "ui/view.tsx",
            "export const V = () => <div title={t(\"a\")}>{t(\"b\")}</div>;\n",
        )],
        ops: &[("t($A)", "i18n($A)")],
        nested: &[],
    },
    Case {
        name: "Python calls as statements, with and without `;`",
        files: &[
            ("main.py", "print(1)\nx = foo(2)\nif x:\n    print(x); print(3)\n"),
            (".tools/run.py", "print(\"hidden\")\n"),
        ],
        ops: &[("print($A)", "log($A)")],
        nested: &[],
    },
    Case {
        name: "Go short declarations, with and without `;`",
        files: &[(
            "main.go",
            "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tx := 1\n\ty := f(x);\n\tfmt.Println(x, y)\n}\n",
        )],
        ops: &[("$X := $Y", "var $X = $Y")],
        nested: &[],
    },
    Case {
        name: "Rust unwraps, none nested",
        files: &[(
            "src/lib.rs",
            "fn f() -> i32 {\n    let a = x.unwrap();\n    let b = y.unwrap_or(1);\n    a.unwrap()\n}\n",
        )],
        ops: &[("$X.unwrap()", "$X.expect(\"e\")")],
        nested: &[],
    },
    Case {
        name: "Rust unwraps, nested",
        files: &[(
            "src/n.rs",
            "fn f() {\n    let v = a.unwrap().unwrap();\n    b.unwrap();\n}\n",
        )],
        ops: &[("$X.unwrap()", "$X.expect(\"e\")")],
        nested: &[(
            "src/n.rs",
            "fn f() {\n    let v = a.expect(\"e\").expect(\"e\");\n    b.expect(\"e\");\n}\n",
        )],
    },
    Case {
        name: "Python calls, nested, in a hidden directory too",
        files: &[
            ("p.py", "x = foo(foo(1))\nfoo(2)\n"),
            (".h/q.py", "foo(foo(foo(3)))\n"),
        ],
        ops: &[("foo($A)", "bar($A)")],
        nested: &[
            ("p.py", "x = bar(bar(1))\nbar(2)\n"),
            (".h/q.py", "bar(bar(bar(3)))\n"),
        ],
    },
];

#[test]
fn ast_edit_makes_the_edits_xcsh_s_own_ast_edit_makes() {
    let Some((dir, bun)) = upstream_runtime("@oh-my-pi/pi-natives") else {
        return;
    };
    let mut refused = 0;
    for case in CASES {
        let theirs = tempfile::tempdir().unwrap();
        let ours = tempfile::tempdir().unwrap();
        write(theirs.path(), case.files);
        write(ours.path(), case.files);
        let original = snapshot(theirs.path());

        let counted = reference(&bun, &dir, theirs.path(), case, true);
        let applied = reference(&bun, &dir, theirs.path(), case, false);
        let details = ast_edit(ours.path(), case);

        assert_eq!(
            details["totalReplacements"], counted["totalReplacements"],
            "{}: the total",
            case.name
        );
        assert_eq!(
            per_file(&details["fileReplacements"]),
            per_file(&counted["fileChanges"]),
            "{}: the counts per file",
            case.name
        );
        let ours = snapshot(ours.path());
        match applied.get("error").and_then(Value::as_str) {
            None => {
                assert!(case.nested.is_empty(), "{}: astEdit applied it", case.name);
                assert_eq!(applied["applied"], true, "{}: {applied}", case.name);
                assert_ne!(ours, original, "{}: nothing changed", case.name);
                assert_same(&ours, &snapshot(theirs.path()), case.name);
            }
            Some(error) => {
                assert!(
                    error.contains("Overlapping replacements"),
                    "{}: astEdit failed: {error}",
                    case.name
                );
                assert!(!case.nested.is_empty(), "{}: astEdit refused it", case.name);
                assert_eq!(snapshot(theirs.path()), original, "{}", case.name);
                let mut expected = original.clone();
                for (path, content) in case.nested {
                    expected.insert((*path).to_owned(), Some(content.as_bytes().to_vec()));
                }
                assert_same(&ours, &expected, case.name);
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 2, "the nested cases are refused by astEdit");
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (relative, content) in files {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// `astEdit` on `root` through Bun: its result, or `{error}`.
fn reference(bun: &Path, dir: &Path, root: &Path, case: &Case, dry_run: bool) -> Value {
    let rewrites: serde_json::Map<String, Value> = case
        .ops
        .iter()
        .map(|(pat, out)| ((*pat).to_owned(), json!(out)))
        .collect();
    let request = json!({"path": root, "rewrites": rewrites, "dryRun": dry_run});
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(bun)
        .arg("./ast-edit-reference.ts")
        .arg(request.to_string())
        .current_dir(dir)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}: bun failed: {}",
        case.name,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: astEdit printed no JSON ({e}): {}",
            case.name,
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// `xcsh-plugins call ast_edit --apply` on `root`: the preview's details.
fn ast_edit(root: &Path, case: &Case) -> Value {
    let ops: Vec<Value> = case
        .ops
        .iter()
        .map(|(pat, out)| json!({"pat": pat, "out": out}))
        .collect();
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--json", "--cwd"])
        .arg(root)
        .args(["call", "ast_edit"])
        .arg(json!({ "ops": ops }).to_string())
        .args(["--apply", "--reason", "compare"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}: ast_edit failed: {text}{}",
        case.name,
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    report["result"]["details"].clone()
}

/// `[{path, count}]` as a map, whatever the order.
fn per_file(list: &Value) -> BTreeMap<String, u64> {
    list.as_array()
        .map(|files| {
            files
                .iter()
                .map(|f| {
                    (
                        f["path"].as_str().unwrap_or_default().to_owned(),
                        f["count"].as_u64().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn assert_same(actual: &Snapshot, expected: &Snapshot, case: &str) {
    for (path, content) in expected {
        assert_eq!(
            actual
                .get(path)
                .map(|c| c.as_deref().map(String::from_utf8_lossy)),
            Some(content.as_deref().map(String::from_utf8_lossy)),
            "{case}: {path}"
        );
    }
    assert_eq!(actual.len(), expected.len(), "{case}: the files");
}

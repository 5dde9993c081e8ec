//! `ast_edit` through `xcsh-plugins call ... --apply` writes exactly what
//! `ast-grep run --pattern P --rewrite R --update-all` writes on a copy of the same tree.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use xcsh_integration_tests::{artifacts, ast_grep_cli};

/// Rust, TypeScript and Python sources with nested, repeated and multi-line matches.
fn write_tree(root: &Path) {
    let files = [
        (
            "src/main.rs",
            "fn main() {\n    let v = foo(1);\n    println!(\"{}\", foo(foo(2)));\n    let w = foo(\n        v + 1,\n    );\n}\n",
        ),
        ("src/util.rs", "pub fn helper() -> i32 {\n    foo(40) + foo(2)\n}\n"),
        (
            "web/app.ts",
            "import { x } from './x';\nconsole.log(x);\nfunction f(a: number) {\n  console.log(a, \"two\");\n  return foo(a);\n}\n",
        ),
        ("web/view.tsx", "export const V = () => <div>{foo(1)}</div>;\n"),
        (
            "py/main.py",
            "def run(x):\n    print(x)\n    return foo(foo(x))\n\nprint(\"done\")\n",
        ),
        ("README.md", "foo(1) is not code here\n"),
        ("ignored/skip.rs", "fn skip() { foo(9); }\n"),
        (".gitignore", "ignored/\n"),
    ];
    for (relative, content) in files {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    // ast-grep honours .gitignore inside a git work tree, as ripgrep does.
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status();
    assert!(init.is_ok_and(|s| s.success()), "git init failed");
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_owned();
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn ast_edit_apply(root: &Path, pattern: &str, rewrite: &str) {
    let args = serde_json::json!({"ops": [{"pat": pattern, "out": rewrite}]}).to_string();
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--cwd"])
        .arg(root)
        .args(["call", "ast_edit", &args, "--apply", "--reason", "compare"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "ast_edit {pattern}: {text}");
    assert!(text.contains("Applied "), "{text}");
}

/// `ast-grep run --update-all`, again until nothing changes: where matches nest (`foo(foo(x))`)
/// one run rewrites the outer one only, while `ast_edit` rewrites both, the inner first
/// (docs/guide/src/ast-edit.md); for these rewrites, which make no new matches, that is where
/// ast-grep's runs end.
fn ast_grep_apply(cli: &Path, root: &Path, pattern: &str, rewrite: &str) {
    for _ in 0..5 {
        let before = snapshot(root);
        ast_grep_apply_once(cli, root, pattern, rewrite);
        if snapshot(root) == before {
            return;
        }
    }
    panic!("ast-grep {pattern} still changed the tree after 5 runs");
}

fn ast_grep_apply_once(cli: &Path, root: &Path, pattern: &str, rewrite: &str) {
    let output = Command::new(cli)
        .args([
            "run",
            "--pattern",
            pattern,
            "--rewrite",
            rewrite,
            "--update-all",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    // ast-grep exits 1, saying nothing, when it found no match (a later run).
    let nothing_found = output.status.code() == Some(1) && output.stderr.is_empty();
    assert!(
        output.status.success() || nothing_found,
        "ast-grep {pattern}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn ast_edit_writes_what_ast_grep_writes() {
    let cli = match ast_grep_cli() {
        Ok(cli) => cli,
        Err(reason) => {
            println!("skipped: no ast-grep CLI to compare with: {reason}");
            return;
        }
    };
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    write_tree(ours.path());
    write_tree(theirs.path());
    let original = snapshot(ours.path());
    for (pattern, rewrite) in [
        ("foo($A)", "bar($A)"),
        ("console.log($$$ARGS)", "logger.info($$$ARGS)"),
        ("print($X)", "log.info($X)"),
    ] {
        ast_edit_apply(ours.path(), pattern, rewrite);
        ast_grep_apply(&cli, theirs.path(), pattern, rewrite);
    }
    let (ours, theirs) = (snapshot(ours.path()), snapshot(theirs.path()));
    for (path, content) in &theirs {
        assert_eq!(
            String::from_utf8_lossy(&ours[path]),
            String::from_utf8_lossy(content),
            "{} differs from ast-grep's",
            path.display()
        );
    }
    assert_eq!(ours.len(), theirs.len());
    // Something really changed, and the ignored file did not.
    assert_ne!(
        ours[Path::new("src/main.rs")],
        original[Path::new("src/main.rs")]
    );
    assert_eq!(
        ours[Path::new("ignored/skip.rs")],
        original[Path::new("ignored/skip.rs")]
    );
}

/// The same call in the grammars beyond Rust/TypeScript/Python, each in its own file, the
/// language inferred from the extension by both tools.
fn write_language_tree(root: &Path) {
    let files = [
        ("go/main.go", "package main\n\nfunc main() {\n\tx := foo(1)\n\tfoo(foo(x))\n}\n"),
        ("java/Main.java", "class Main {\n    void run() {\n        foo(1);\n        int y = foo(foo(2));\n    }\n}\n"),
        ("c/main.c", "int main(void) {\n    foo(1);\n    return foo(foo(2));\n}\n"),
        ("cpp/main.cpp", "#include <vector>\nint main() {\n    auto v = foo(1);\n    return foo(v);\n}\n"),
        ("cs/Program.cs", "class P {\n    static void Main() {\n        foo(1);\n        var y = foo(foo(2));\n    }\n}\n"),
        ("kt/Main.kt", "fun main() {\n    foo(1)\n    val y = foo(foo(2))\n}\n"),
        ("swift/main.swift", "let x = foo(1)\nprint(foo(x))\n"),
        ("scala/Main.scala", "object Main {\n  def run(): Unit = {\n    foo(1)\n    val y = foo(foo(2))\n  }\n}\n"),
        ("rb/main.rb", "def run(x)\n  foo(1)\n  foo(foo(x))\nend\n"),
        ("php/index.php", "<?php\nfunction run($x) {\n    foo(1);\n    return foo(foo($x));\n}\n"),
        ("lua/main.lua", "local x = foo(1)\nprint(foo(foo(x)))\n"),
        ("ex/main.ex", "defmodule M do\n  def run(x) do\n    foo(1)\n    foo(foo(x))\n  end\nend\n"),
        ("dart/main.dart", "void main() {\n  foo(1);\n  var y = foo(foo(2));\n}\n"),
        ("sol/C.sol", "contract C {\n    function f() public {\n        foo(1);\n        foo(foo(2));\n    }\n}\n"),
    ];
    for (relative, content) in files {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status();
    assert!(init.is_ok_and(|s| s.success()), "git init failed");
}

#[test]
fn ast_edit_writes_what_ast_grep_writes_in_every_language() {
    let cli = match ast_grep_cli() {
        Ok(cli) => cli,
        Err(reason) => {
            println!("skipped: no ast-grep CLI to compare with: {reason}");
            return;
        }
    };
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    write_language_tree(ours.path());
    write_language_tree(theirs.path());
    let original = snapshot(ours.path());
    ast_edit_apply(ours.path(), "foo($A)", "bar($A)");
    ast_grep_apply(&cli, theirs.path(), "foo($A)", "bar($A)");
    let (ours, theirs) = (snapshot(ours.path()), snapshot(theirs.path()));
    assert_eq!(ours.len(), theirs.len());
    let mut changed = 0;
    for (path, content) in &theirs {
        assert_eq!(
            String::from_utf8_lossy(&ours[path]),
            String::from_utf8_lossy(content),
            "{} differs from ast-grep's",
            path.display()
        );
        changed += usize::from(original[path] != *content);
    }
    // Eleven languages really rewrote something (Go, Java, C++, C#, Kotlin, Swift, Scala, Ruby,
    // PHP, Lua, Elixir); in C, Dart and Solidity ast-grep's `foo($A)` matches nothing, and
    // neither tool changes those files.
    assert!(changed >= 11, "only {changed} files changed");
}

/// Run the command-line host with only the built-in tools, in `root`.
fn cli(root: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--cwd"])
        .arg(root)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// docs/guide/src/write.md: `ast_edit`'s `Option` arguments are listed by their type, not "or
/// null".
#[test]
fn list_shows_optional_arguments_by_their_type() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, text) = cli(dir.path(), &["list"]);
    assert!(ok, "{text}");
    assert!(!text.contains("or null"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|line| line.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("limit").contains(" number (optional)"), "{text}");
    assert!(line("per_file").contains(" boolean (optional)"), "{text}");
    assert!(line("path").contains(" string (optional)"), "{text}");
    assert!(line("ops").contains(" (required)"), "{text}");
}

/// A `null` a model sends for an optional argument is that argument left out.
#[test]
fn call_takes_null_optional_arguments_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn main() { foo(1); }\n").unwrap();
    let args = serde_json::json!({
        "ops": [{"pat": "foo($A)", "out": "bar($A)"}],
        "limit": null, "per_file": null, "lang": null, "path": null
    })
    .to_string();
    let (ok, text) = cli(dir.path(), &["call", "ast_edit", &args, "--apply"]);
    assert!(ok, "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.rs")).unwrap(),
        "fn main() { bar(1); }\n"
    );
    let (ok, text) = cli(dir.path(), &["call", "ast_edit", r#"{"ops": null}"#]);
    assert!(!ok);
    assert!(
        text.contains(
            r#"Invalid arguments for tool "ast_edit": at /ops: null is not of type "array""#
        ),
        "{text}"
    );
}

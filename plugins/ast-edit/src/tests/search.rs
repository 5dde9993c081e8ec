//! Previews: formats, limit, selector, globs, comma lists, `.gitignore`, parse issues,
//! overlaps, and one rewrite per compiled grammar.

use serde_json::json;

use super::{details, edit, ok_text, read, resolve, session, tree};

const RUST: &str = "fn main() {\n    foo(1);\n    foo(2);\n}\n";

#[tokio::test]
async fn single_file_preview_writes_nothing_and_pushes_one_action() {
    let dir = tree(&[("a.rs", RUST)]);
    let s = session(dir.path());
    let args = json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}], "path": "a.rs"});
    let text = ok_text(&edit(&s, args).await);
    assert_eq!(text, "-2:5 foo(1)\n+2:5 bar(1)\n-3:5 foo(2)\n+3:5 bar(2)");
    assert_eq!(read(dir.path(), "a.rs"), RUST);
    let store = s.store().expect("the session has a store");
    assert_eq!(store.count(), 1);
    let top = store.peek().expect("one pending action");
    assert_eq!(top.label, "AST Edit: 2 replacements in 1 file");
    assert_eq!(top.source_tool_name, "ast_edit");
}

#[tokio::test]
async fn directory_preview_is_grouped_and_sorted() {
    let dir = tree(&[
        ("src/b.rs", "fn b() { foo(2); }\n"),
        ("src/a.rs", "fn a() { foo(1); }\n"),
        ("z.py", "foo(3)\n"),
        ("no.rs", "fn no() {}\n"),
    ]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})).await;
    let text = ok_text(&out);
    assert_eq!(
        text,
        "# src/\n## ├─ a.rs (1 replacement)\n-1:10 foo(1)\n+1:10 bar(1)\n\
         ## └─ b.rs (1 replacement)\n-1:10 foo(2)\n+1:10 bar(2)\n\n\
         # ./\n## └─ z.py (1 replacement)\n-1:1 foo(3)\n+1:1 bar(3)"
    );
    let d = details(&out);
    assert_eq!(d["totalReplacements"], 3);
    assert_eq!(d["filesTouched"], 3);
    assert_eq!(d["filesSearched"], 4);
    assert_eq!(d["limitReached"], false);
    assert_eq!(
        d["fileReplacements"][0],
        json!({"path": "src/a.rs", "count": 1})
    );
    let label = s.store().and_then(|st| st.peek()).map(|p| p.label);
    assert_eq!(
        label.as_deref(),
        Some("AST Edit: 3 replacements in 3 files")
    );
}

#[tokio::test]
async fn no_match_pushes_nothing() {
    let dir = tree(&[("a.rs", RUST)]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": [{"pat": "nothing($A)", "out": "x"}]})).await;
    assert_eq!(ok_text(&out), "No replacements made");
    assert_eq!(details(&out)["totalReplacements"], 0);
    assert!(!s.has_pending());
}

#[tokio::test]
async fn limit_cuts_in_path_order_and_apply_writes_only_those() {
    let dir = tree(&[("a.rs", RUST), ("b.rs", "fn b() { foo(3); }\n")]);
    let s = session(dir.path());
    let args = json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}], "limit": 1.9});
    let out = edit(&s, args).await;
    let text = ok_text(&out);
    assert!(
        text.ends_with("\n\nLimit reached; narrow path or increase limit."),
        "{text}"
    );
    assert_eq!(details(&out)["totalReplacements"], 1);
    assert_eq!(details(&out)["limitReached"], true);
    assert_eq!(
        ok_text(&resolve(&s, "apply").await),
        "Applied 1 replacement(s) in 1 file(s)."
    );
    assert_eq!(
        read(dir.path(), "a.rs"),
        RUST.replacen("foo(1)", "bar(1)", 1)
    );
    assert_eq!(read(dir.path(), "b.rs"), "fn b() { foo(3); }\n");
}

#[tokio::test]
async fn selector_matches_a_node_inside_its_context() {
    let src = "class B {\n  x = 1;\n  y = 2;\n}\nlet z = 3;\n";
    let dir = tree(&[("a.js", src)]);
    let s = session(dir.path());
    let args = json!({
        "ops": [{"pat": "class A { $F = $V }", "out": "$F = 0"}],
        "sel": "field_definition",
        "lang": "javascript",
    });
    let text = ok_text(&edit(&s, args).await);
    assert_eq!(
        text,
        "# ./\n## └─ a.js (2 replacements)\n-2:3 x = 1\n+2:3 x = 0\n-3:3 y = 2\n+3:3 y = 0"
    );
    ok_text(&resolve(&s, "apply").await);
    assert_eq!(
        read(dir.path(), "a.js"),
        "class B {\n  x = 0;\n  y = 0;\n}\nlet z = 3;\n"
    );
}

#[tokio::test]
async fn glob_filter_and_path_globs() {
    let dir = tree(&[
        ("src/a.ts", "foo(1);\n"),
        ("src/b.js", "foo(2);\n"),
        ("src/deep/c.ts", "foo(3);\n"),
    ]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    let files = |out: &xcsh_loader::ToolOutcome| {
        let d = details(out);
        let list = d["fileReplacements"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        list.iter()
            .map(|f| f["path"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    let out = edit(&s, json!({"ops": op, "glob": "*.ts"})).await;
    assert_eq!(files(&out), ["src/a.ts", "src/deep/c.ts"]);
    // Paths in details are relative to the search base (`src` here).
    let out = edit(&s, json!({"ops": op, "path": "src/*.ts"})).await;
    assert_eq!(files(&out), ["a.ts"]);
    let out = edit(&s, json!({"ops": op, "path": "src/**/*.{ts,js}"})).await;
    assert_eq!(files(&out), ["a.ts", "b.js", "deep/c.ts"]);
    let out = edit(&s, json!({"ops": op, "path": "src", "glob": "deep/*.ts"})).await;
    assert_eq!(files(&out), ["deep/c.ts"]);
}

#[tokio::test]
async fn comma_lists_combine_files_and_directories() {
    let dir = tree(&[
        ("a.rs", "fn a() { foo(1); }\n"),
        ("lib/b.rs", "fn b() { foo(2); }\n"),
        ("other/c.rs", "fn c() { foo(3); }\n"),
    ]);
    let s = session(dir.path());
    let args = json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}], "path": "a.rs, lib,a.rs"});
    let out = edit(&s, args).await;
    let text = ok_text(&out);
    assert!(
        text.starts_with("# ./\n## └─ a.rs (1 replacement)\n"),
        "{text}"
    );
    assert!(
        text.contains("# lib/\n## └─ b.rs (1 replacement)"),
        "{text}"
    );
    assert_eq!(details(&out)["scopePath"], "a.rs, lib, a.rs");
    assert_eq!(details(&out)["totalReplacements"], 2);
}

#[tokio::test]
async fn ignored_git_node_modules_and_binary_files_are_left_alone_hidden_ones_are_searched() {
    let dir = tree(&[
        (".gitignore", "ignored/\n*.gen.rs\n"),
        ("kept.rs", "fn k() { foo(1); }\n"),
        ("ignored/x.rs", "fn x() { foo(2); }\n"),
        ("out.gen.rs", "fn g() { foo(3); }\n"),
        (".hidden/y.rs", "fn y() { foo(4); }\n"),
        (".z.rs", "fn z() { foo(6); }\n"),
        (".git/w.rs", "fn w() { foo(7); }\n"),
        ("node_modules/m/v.rs", "fn v() { foo(8); }\n"),
        ("bin.rs", "fn b() { foo(5); }\0\n"),
    ]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})).await;
    assert_eq!(
        details(&out)["fileReplacements"],
        json!([
            {"path": ".hidden/y.rs", "count": 1},
            {"path": ".z.rs", "count": 1},
            {"path": "kept.rs", "count": 1},
        ])
    );
    ok_text(&resolve(&s, "apply").await);
    assert_eq!(read(dir.path(), "kept.rs"), "fn k() { bar(1); }\n");
    assert_eq!(read(dir.path(), ".hidden/y.rs"), "fn y() { bar(4); }\n");
    assert_eq!(read(dir.path(), ".z.rs"), "fn z() { bar(6); }\n");
    assert_eq!(read(dir.path(), "ignored/x.rs"), "fn x() { foo(2); }\n");
    assert_eq!(read(dir.path(), "out.gen.rs"), "fn g() { foo(3); }\n");
    assert_eq!(read(dir.path(), ".git/w.rs"), "fn w() { foo(7); }\n");
    assert_eq!(
        read(dir.path(), "node_modules/m/v.rs"),
        "fn v() { foo(8); }\n"
    );
}

#[tokio::test]
async fn parse_problems_are_listed_and_capped() {
    let mut files: Vec<(String, String)> = (0..22)
        .map(|i| (format!("broken{i:02}.rs"), "fn f( { foo(1); }\n".to_owned()))
        .collect();
    files.push(("ok.rs".to_owned(), "fn ok() { foo(9); }\n".to_owned()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let dir = tree(&refs);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})).await;
    let text = ok_text(&out);
    assert!(
        text.contains("\n\nParse issues:\n- broken00.rs: parse error"),
        "{text}"
    );
    assert!(text.ends_with("\n- … and 2 more"), "{text}");
    assert_eq!(text.matches("\n- broken").count(), 20);
    assert_eq!(
        details(&out)["parseErrors"].as_array().map(Vec::len),
        Some(22)
    );
    assert_eq!(details(&out)["totalReplacements"], 1);
    // With nothing to replace, the issues still show.
    let out = edit(
        &s,
        json!({"ops": [{"pat": "foo($A)", "out": "x"}], "path": "broken00.rs"}),
    )
    .await;
    assert!(ok_text(&out).starts_with("No replacements made\n\nParse issues:\n- broken00.rs"));
}

#[tokio::test]
async fn overlapping_ops_are_refused() {
    let dir = tree(&[("a.rs", RUST)]);
    let s = session(dir.path());
    let ops = json!([{"pat": "foo($A)", "out": "bar($A)"}, {"pat": "foo(1)", "out": "one()"}]);
    let out = edit(&s, json!({ "ops": ops })).await;
    assert!(out.is_error);
    assert!(out
        .text()
        .starts_with("Overlapping edits in a.rs: `foo($A)` at 2:5 and `foo(1)` at 2:5"));
    assert!(!s.has_pending());
}

#[tokio::test]
async fn a_match_replaces_its_whole_node_unless_asked_to_keep_what_trails_the_pattern() {
    // As xcsh's astEdit: the declaration's `;` is part of the match; the nested `Some`s are
    // both rewritten, the inner first.
    let ops =
        json!([{"pat": "var $A = $B", "out": "let $A = $B"}, {"pat": "Some($X)", "out": "$X"}]);
    for (keep_trailing, expected) in [
        (None, "let a = 1\n1;\n"),
        (Some(false), "let a = 1\n1;\n"),
        (Some(true), "let a = 1;\n1;\n"),
    ] {
        let dir = tree(&[("a.ts", "var a = 1;\nSome(Some(1));\n")]);
        let s = session(dir.path());
        let mut args = json!({ "ops": ops });
        if let Some(keep) = keep_trailing {
            args["keep_trailing"] = json!(keep);
        }
        let out = edit(&s, args).await;
        assert_eq!(details(&out)["totalReplacements"], 3, "{}", out.text());
        ok_text(&resolve(&s, "apply").await);
        assert_eq!(
            read(dir.path(), "a.ts"),
            expected,
            "keep_trailing {keep_trailing:?}"
        );
    }
}

#[tokio::test]
async fn every_compiled_grammar_rewrites() {
    let dir = tree(&[
        ("a.rs", "fn a() { foo(1); }\n"),
        ("b.ts", "const b: number = foo(1);\n"),
        ("c.tsx", "const c = <div>{foo(1)}</div>;\n"),
        ("d.js", "foo(1);\n"),
        ("e.py", "x = foo(1)\n"),
    ]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})).await;
    assert_eq!(details(&out)["filesTouched"], 5, "{}", out.text());
    ok_text(&resolve(&s, "apply").await);
    for file in ["a.rs", "b.ts", "c.tsx", "d.js", "e.py"] {
        let content = read(dir.path(), file);
        assert!(
            content.contains("bar(1)") && !content.contains("foo"),
            "{file}: {content}"
        );
    }
}

#[tokio::test]
async fn path_lists_root_and_directory_globs() {
    let dir = tree(&[
        ("apps/a.ts", "foo(1);\n"),
        ("packages/pkg-x/src/deep/x.ts", "foo(2);\n"),
        ("packages/pkg-x/lib/no.ts", "foo(3);\n"),
        ("packages/pkg-y/src/y.ts", "foo(4);\n"),
        ("packages/pkg-y/src/y.js", "foo(5);\n"),
        ("phases/p.ts", "foo(6);\n"),
        ("other/o.ts", "foo(7);\n"),
    ]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    let files = |out: &xcsh_loader::ToolOutcome| {
        let list = details(out)["fileReplacements"].clone();
        let list = list.as_array().cloned().unwrap_or_default();
        list.iter()
            .map(|f| f["path"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    // A space-separated list, echoed in scopePath.
    let out = edit(&s, json!({"ops": op, "path": "apps/ packages/ phases/"})).await;
    assert_eq!(details(&out)["scopePath"], "apps/, packages/, phases/");
    assert_eq!(files(&out).len(), 6);
    assert!(details(&out).get("parseErrors").is_none());
    // A glob naming directories inside an absolute path, with a glob filter.
    let root = dir.path().display();
    let path = format!("{root}/packages/pkg-*/src");
    let out = edit(&s, json!({"ops": op, "path": path, "glob": "**/*.ts"})).await;
    assert_eq!(files(&out), ["pkg-x/src/deep/x.ts", "pkg-y/src/y.ts"]);
    // `/` is the session's root, and an absolute path outside it is taken inside it.
    let out = edit(&s, json!({"ops": op, "path": "/"})).await;
    assert_eq!(files(&out).len(), 7);
    assert_eq!(details(&out)["scopePath"], ".", "as xcsh shows the root");
    let out = edit(&s, json!({"ops": op, "path": "/other"})).await;
    assert_eq!(files(&out), ["o.ts"]);
    let out = edit(&s, json!({"ops": op, "path": "/other/o.ts"})).await;
    assert_eq!(ok_text(&out), "-1:1 foo(7)\n+1:1 bar(7)");
}

/// The walk that skips subtrees without the pattern's fixed string finds exactly what ast-grep's
/// own non-reentrant pre-order `Visitor` finds: nested, adjacent, multi-line and near-miss
/// matches, in several grammars, and fixed strings that overlap themselves.
#[test]
fn pruned_walk_finds_what_the_visitor_finds() {
    use ast_grep_core::tree_sitter::traversal::Visitor;
    use ast_grep_core::tree_sitter::StrDoc;
    use ast_grep_core::AstGrep;

    use crate::lang::{self, Lang};
    use crate::search::{compile, find_matches, occurrences};

    let cases: &[(&str, &str, &str)] = &[
        (
            "rs",
            "foo($A)",
            "fn m() { foo(foo(2)); foo (3); foo(\n  4,\n); foo(5, 6); foofoo(7); my_foo(8); }\n",
        ),
        (
            "rs",
            "$A.unwrap()",
            "fn m() { a.unwrap().b.unwrap(); x.unwrap_or(1); (y).unwrap(); }\n",
        ),
        (
            "ts",
            "console.log($$$A)",
            "console.log(1, console.log(2));\nconsole . log(3);\nconsole.logx(4);\n",
        ),
        (
            "py",
            "aaa($X)",
            "aaaa(1)\naaa(aaa(2))\nb = aaa(3) + aaaaa(4)\n",
        ),
        (
            "js",
            "if ($C) { $$$B }",
            "if (a) { if (b) { f(); } }\nif (c) g();\n",
        ),
    ];
    for (ext, pat, source) in cases {
        let lang = lang::parse(ext).expect("a compiled-in language");
        let (compiled, issues) =
            compile(&[((*pat).to_owned(), "X".to_owned())], None, &[lang], true).expect("compile");
        assert!(issues.is_empty());
        let op = &compiled.ops_for(lang)[0];
        let grep = AstGrep::<StrDoc<Lang>>::try_new(source, lang).expect("parse");
        let ranges = |found: Vec<ast_grep_core::NodeMatch<'_, StrDoc<Lang>>>| -> Vec<_> {
            found.iter().map(|m| m.range()).collect()
        };
        let expected = ranges(
            Visitor::new(&op.pattern)
                .reentrant(true)
                .visit(grep.root())
                .collect(),
        );
        assert!(!expected.is_empty(), "{pat} in {source}");
        assert_eq!(
            ranges(find_matches(grep.root(), op, source)),
            expected,
            "{pat}"
        );
    }
    assert_eq!(occurrences("aaaa", "aa"), vec![0, 1, 2]);
    assert_eq!(occurrences("éaé", "é"), vec![0, 3]);
    assert_eq!(occurrences("abc", "d"), Vec::<usize>::new());
}

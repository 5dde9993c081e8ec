//! Matches nested in matches (docs/guide/src/ast-edit.md): both rewritten, the inner first, each
//! previewed and counted; a limit keeps or cuts a group whole; overlaps, runaway nesting and an
//! outer match undone by its inner rewrite are refused with nothing written.

use serde_json::json;

use super::{details, edit, ok_text, read, resolve, session, tree};

const UNWRAPS: &str = "fn f() {\n    let v = a.unwrap().unwrap().unwrap();\n    b.unwrap();\n}\n";

#[tokio::test]
async fn nested_matches_are_all_rewritten_inner_first_and_each_counted() {
    let dir = tree(&[("n.rs", UNWRAPS)]);
    let s = session(dir.path());
    let out = edit(
        &s,
        json!({"ops": [{"pat": "$X.unwrap()", "out": "$X.expect(\"e\")"}]}),
    )
    .await;
    let text = ok_text(&out);
    assert_eq!(details(&out)["totalReplacements"], 4, "{text}");
    assert_eq!(
        details(&out)["fileReplacements"],
        json!([{"path": "n.rs", "count": 4}])
    );
    // Every edit is shown: the outermost with everything inside it rewritten.
    assert!(
        text.contains(
            "-2:13 a.unwrap().unwrap().unwrap()\n+2:13 a.expect(\"e\").expect(\"e\").expect(\"e\")"
        ),
        "{text}"
    );
    assert!(
        text.contains("-2:13 a.unwrap()\n+2:13 a.expect(\"e\")"),
        "{text}"
    );
    let applied = ok_text(&resolve(&s, "apply").await);
    assert_eq!(applied, "Applied 4 replacement(s) in 1 file(s).");
    assert_eq!(
        read(dir.path(), "n.rs"),
        "fn f() {\n    let v = a.expect(\"e\").expect(\"e\").expect(\"e\");\n    b.expect(\"e\");\n}\n"
    );
}

#[tokio::test]
async fn nested_matches_of_different_ops_and_languages() {
    let dir = tree(&[
        ("p.py", "x = foo(foo(1))\nprint(foo(2))\n"),
        ("j.js", "f(f(f(a)));\n"),
    ]);
    let s = session(dir.path());
    let ops = json!([{"pat": "foo($A)", "out": "bar($A)"}, {"pat": "print($A)", "out": "log($A)"}]);
    let out = edit(&s, json!({ "ops": ops })).await;
    assert_eq!(details(&out)["totalReplacements"], 4, "{}", out.text());
    ok_text(&resolve(&s, "apply").await);
    assert_eq!(read(dir.path(), "p.py"), "x = bar(bar(1))\nlog(bar(2))\n");

    let out = edit(&s, json!({"ops": [{"pat": "f($A)", "out": "g([$A])"}]})).await;
    assert_eq!(details(&out)["totalReplacements"], 3, "{}", out.text());
    ok_text(&resolve(&s, "apply").await);
    assert_eq!(read(dir.path(), "j.js"), "g([g([g([a])])]);\n");
}

#[tokio::test]
async fn a_limit_keeps_or_cuts_a_nested_group_whole() {
    let dir = tree(&[("n.rs", UNWRAPS)]);
    let s = session(dir.path());
    let op = json!([{"pat": "$X.unwrap()", "out": "$X.expect(\"e\")"}]);
    // The first group has three edits: a limit of 2 cannot keep it in part.
    let out = edit(&s, json!({"ops": op, "limit": 2})).await;
    assert!(
        out.text().starts_with("No replacements made"),
        "{}",
        out.text()
    );
    let out = edit(&s, json!({"ops": op, "limit": 3})).await;
    assert_eq!(details(&out)["totalReplacements"], 3, "{}", out.text());
    assert_eq!(details(&out)["limitReached"], true);
    ok_text(&resolve(&s, "apply").await);
    assert!(read(dir.path(), "n.rs")
        .contains("expect(\"e\").expect(\"e\").expect(\"e\");\n    b.unwrap();"));
}

#[tokio::test]
async fn an_outer_match_undone_by_its_inner_rewrite_is_refused_naming_both() {
    let source = "fn f() { g(h(1)); }\n";
    let dir = tree(&[("a.rs", source)]);
    let s = session(dir.path());
    let ops = json!([{"pat": "g(h($A))", "out": "k($A)"}, {"pat": "h($A)", "out": "z($A)"}]);
    let out = edit(&s, json!({ "ops": ops })).await;
    assert!(out.is_error, "{}", out.text());
    assert!(
        out.text().starts_with("In a.rs, `g(h($A))` at 1:10 no longer matches once the matches nested in it are rewritten; nothing was changed."),
        "{}",
        out.text()
    );
    assert!(!s.has_pending());
    assert_eq!(read(dir.path(), "a.rs"), source);
}

#[tokio::test]
async fn runaway_nesting_is_refused() {
    let nested = format!("fn m() {{ {}1{}; }}\n", "f(".repeat(20), ")".repeat(20));
    let dir = tree(&[("a.rs", nested.as_str())]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": [{"pat": "f($A)", "out": "g($A)"}]})).await;
    assert!(out.is_error, "{}", out.text());
    assert!(
        out.text()
            .starts_with("Matches nested more than 16 deep in a.rs (`f($A)` at 1:10 holds them)"),
        "{}",
        out.text()
    );
    // Up to the bound, every level is rewritten.
    let nested = format!("fn m() {{ {}1{}; }}\n", "f(".repeat(16), ")".repeat(16));
    std::fs::write(dir.path().join("a.rs"), &nested).expect("write");
    let out = edit(&s, json!({"ops": [{"pat": "f($A)", "out": "g($A)"}]})).await;
    assert_eq!(details(&out)["totalReplacements"], 16, "{}", out.text());
    ok_text(&resolve(&s, "apply").await);
    assert_eq!(read(dir.path(), "a.rs"), nested.replace("f(", "g("));
}

//! Argument errors: each message of xcsh's own `ast_edit`, unknown and disabled languages,
//! invalid patterns.

use serde_json::json;

use super::{assert_error, edit, session, tree};

#[tokio::test]
async fn empty_ops_are_refused() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": []})).await;
    assert_error(&out, "`ops` must include at least one op entry");
}

#[tokio::test]
async fn empty_pattern_is_refused_with_its_index() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let ops = json!([{"pat": "foo($A)", "out": "bar($A)"}, {"pat": "  ", "out": "x"}]);
    let out = edit(&s, json!({ "ops": ops })).await;
    assert_error(&out, "`ops[1].pat` must be a non-empty pattern");
}

#[tokio::test]
async fn duplicate_pattern_is_refused() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let ops = json!([{"pat": "foo($A)", "out": "bar($A)"}, {"pat": "foo($A)", "out": "baz($A)"}]);
    let out = edit(&s, json!({ "ops": ops })).await;
    assert_error(&out, "Duplicate rewrite pattern: foo($A)");
}

#[tokio::test]
async fn non_positive_limits_are_refused() {
    let dir = tree(&[("a.rs", "fn main() { foo(1); }\n")]);
    let s = session(dir.path());
    for limit in [json!(0), json!(-3), json!(0.5)] {
        let args = json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}], "limit": limit});
        assert_error(&edit(&s, args).await, "limit must be a positive number");
    }
    assert!(!s.has_pending());
}

#[tokio::test]
async fn missing_paths_are_named() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    for path in ["nope.rs", "missing/dir", "missing/*.rs", "a.rs, gone.rs"] {
        let out = edit(&s, json!({"ops": op, "path": path})).await;
        let shown = path.rsplit(", ").next().unwrap_or(path);
        assert_error(&out, &format!("Path not found: {shown}"));
    }
}

#[tokio::test]
async fn unknown_language_is_an_error() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let out = edit(
        &s,
        json!({"ops": [{"pat": "x", "out": "y"}], "lang": "klingon"}),
    )
    .await;
    assert!(out.is_error);
    let text = out.text();
    assert!(
        text.starts_with("Unknown language `klingon`; supported languages: "),
        "{text}"
    );
    for name in ["javascript", "python", "rust", "tsx", "typescript"] {
        assert!(text.contains(name), "{text}");
    }
}

#[cfg(not(feature = "all-languages"))]
#[tokio::test]
async fn disabled_language_is_an_error_not_a_panic() {
    let dir = tree(&[("main.go", "package main\nfunc main() { foo(1) }\n")]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    let out = edit(&s, json!({"ops": op, "lang": "go"})).await;
    assert!(out.is_error);
    assert!(
        out.text().contains("is not enabled in this build"),
        "{}",
        out.text()
    );
    // An explicit file of a disabled language, without `lang`.
    let out = edit(&s, json!({"ops": op, "path": "main.go"})).await;
    assert!(out.is_error);
    assert!(
        out.text().contains("language go is not enabled"),
        "{}",
        out.text()
    );
    // While walking, such files are simply not candidates.
    let out = edit(&s, json!({"ops": op})).await;
    assert_eq!(super::ok_text(&out), "No replacements made");
}

#[tokio::test]
async fn uninferable_file_needs_lang() {
    let dir = tree(&[("notes.txt", "foo(1)\n")]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    let out = edit(&s, json!({"ops": op, "path": "notes.txt"})).await;
    assert!(out.is_error);
    assert!(out
        .text()
        .starts_with("Cannot infer the language of notes.txt"));
    let out = edit(
        &s,
        json!({"ops": op, "path": "notes.txt", "lang": "python"}),
    )
    .await;
    assert_eq!(super::ok_text(&out), "-1:1 foo(1)\n+1:1 bar(1)");
}

#[tokio::test]
async fn invalid_pattern_names_pattern_and_complaint() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let out = edit(
        &s,
        json!({"ops": [{"pat": "a; b", "out": "c"}], "lang": "rust"}),
    )
    .await;
    assert!(out.is_error);
    let text = out.text();
    assert!(text.starts_with("Invalid pattern `a; b`: rust: "), "{text}");
    assert!(text.contains("Multiple AST nodes"), "{text}");
    let out = edit(
        &s,
        json!({"ops": [{"pat": "fn (", "out": "c"}], "lang": "rust"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text().starts_with("Invalid pattern `fn (`"),
        "{}",
        out.text()
    );
}

#[tokio::test]
async fn invalid_selector_is_an_invalid_pattern() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let args =
        json!({"ops": [{"pat": "foo($A)", "out": "x"}], "lang": "rust", "sel": "no_such_kind"});
    let out = edit(&s, args).await;
    assert!(out.is_error);
    assert!(
        out.text().starts_with("Invalid pattern `foo($A)`: rust: "),
        "{}",
        out.text()
    );
}

#[tokio::test]
async fn unknown_fields_fail_schema_validation() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let out = edit(
        &s,
        json!({"ops": [{"pat": "x", "out": "y"}], "preview": true}),
    )
    .await;
    assert!(out.is_error);
    assert!(out
        .text()
        .starts_with("Invalid arguments for tool \"ast_edit\""));
}

#[cfg(feature = "all-languages")]
#[tokio::test]
async fn every_ast_grep_language_is_inferred_and_its_aliases_accepted() {
    let dir = tree(&[
        ("main.go", "package main\n\nfunc main() { foo(1) }\n"),
        ("App.kt", "fun main() { foo(2) }\n"),
        ("x.rb", "foo(3)\n"),
        ("a.cc", "int main() { return foo(4); }\n"),
        ("notes.txt", "foo(5)\n"),
    ]);
    let s = session(dir.path());
    let spec = s.tools().into_iter().find(|t| t.name == "ast_edit");
    let description = spec.map(|t| t.description).unwrap_or_default();
    for name in [
        "go", "kotlin", "ruby", "cpp", "csharp", "swift", "yaml", "golang",
    ] {
        assert!(description.contains(name), "{name} missing: {description}");
    }
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    let out = edit(&s, json!({"ops": op})).await;
    assert_eq!(
        super::details(&out)["totalReplacements"],
        4,
        "{}",
        out.text()
    );
    for (alias, file) in [("golang", "main.go"), ("kt", "App.kt"), ("c++", "a.cc")] {
        if let Some(store) = s.store() {
            store.clear();
        }
        let out = edit(&s, json!({"ops": op, "lang": alias})).await;
        assert_eq!(
            super::details(&out)["fileReplacements"],
            json!([{"path": file, "count": 1}]),
            "{alias}: {}",
            out.text()
        );
    }
}

#[cfg(feature = "all-languages")]
#[tokio::test]
async fn tla_plus_files_are_inferred_and_rewritten() {
    let spec = "---- MODULE Spec ----\nEXTENDS Naturals\nVARIABLE x\nInc(n) == n + 1\nNext == x' = Inc(x)\n====\n";
    let dir = tree(&[("Spec.tla", spec)]);
    let s = session(dir.path());
    // A TLA+ expression only parses inside a module: the pattern is a context and `sel` picks
    // the operator application out of it.
    let context = "---- MODULE P ----\nOp == Inc($A)\n====";
    let op = json!([{"pat": context, "out": "Succ($A)"}]);
    let out = edit(&s, json!({"ops": op, "sel": "bound_op"})).await;
    assert_eq!(
        super::ok_text(&out),
        "# ./\n## └─ Spec.tla (1 replacement)\n-5:14 Inc(x)\n+5:14 Succ(x)"
    );
    let applied = super::resolve(&s, "apply").await;
    assert_eq!(
        super::ok_text(&applied),
        "Applied 1 replacement(s) in 1 file(s)."
    );
    assert_eq!(
        super::read(dir.path(), "Spec.tla"),
        spec.replace("= Inc(x)", "= Succ(x)")
    );
    let out = edit(&s, json!({"ops": op, "sel": "bound_op", "lang": "tla"})).await;
    assert_eq!(super::ok_text(&out), "No replacements made");
}

#[tokio::test]
async fn optional_arguments_are_published_without_null() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let spec = s.tools().into_iter().find(|t| t.name == "ast_edit");
    let schema = spec.map(|t| t.parameters).unwrap_or_default();
    let property = |name: &str| {
        let mut property = schema["properties"][name].clone();
        if let Some(object) = property.as_object_mut() {
            object.remove("description");
        }
        property
    };
    assert_eq!(
        property("limit"),
        json!({"type": "number", "format": "double"})
    );
    assert_eq!(property("per_file"), json!({"type": "boolean"}));
    assert_eq!(property("keep_trailing"), json!({"type": "boolean"}));
    for name in ["lang", "path", "glob", "sel"] {
        assert_eq!(property(name), json!({"type": "string"}), "{name}");
    }
    assert_eq!(schema["required"], json!(["ops"]));
    assert!(!schema.to_string().contains("\"null\""), "{schema}");
}

#[tokio::test]
async fn null_optional_arguments_are_taken_as_absent() {
    let dir = tree(&[("a.rs", "fn main() { foo(1); }\n")]);
    let s = session(dir.path());
    let args = json!({
        "ops": [{"pat": "foo($A)", "out": "bar($A)"}],
        "lang": null, "path": null, "glob": null, "sel": null, "limit": null,
        "per_file": null, "keep_trailing": null
    });
    let out = edit(&s, args).await;
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(
        super::details(&out)["totalReplacements"],
        1,
        "{}",
        out.text()
    );
    assert!(s.has_pending());
}

#[tokio::test]
async fn a_null_for_the_required_ops_is_refused_by_name() {
    let dir = tree(&[("a.rs", "fn main() {}\n")]);
    let s = session(dir.path());
    let out = edit(&s, json!({"ops": null})).await;
    assert_error(
        &out,
        "Invalid arguments for tool \"ast_edit\": at /ops: null is not of type \"array\"",
    );
}

//! `rustfmt_preview` through the test harness: with the real rustfmt where it is installed,
//! and with scripted programs for rustfmt's failures.

use std::process::{Command, Stdio};

use rustfmt_preview::RustfmtPreview;
use xcsh_plugin_api::host::HostRequest;
use xcsh_plugin_api::testing::{PluginTest, TestError};
use xcsh_plugin_api::view::{Block, DiffLine};
use xcsh_plugin_api::{json, tools, ExecOutput, Value};

const UNFORMATTED: &str = "fn main(){let x=1;\nprintln!(\"{}\",x);}\n";
const FORMATTED: &str = "fn main() {\n    let x = 1;\n    println!(\"{}\", x);\n}\n";

/// Whether rustfmt runs here; the tests that need it are skipped (with a note) otherwise.
fn have_rustfmt() -> bool {
    let ok = Command::new("rustfmt")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !ok {
        eprintln!("skipped: `rustfmt --version` failed (rustfmt is not installed)");
    }
    ok
}

/// What rustfmt itself makes of `source` (edition 2021, from standard input).
fn rustfmt_output(source: &str) -> String {
    let mut child = Command::new("rustfmt")
        .args(["--emit", "stdout", "--edition", "2021", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("rustfmt starts");
    let mut stdin = child.stdin.take().expect("rustfmt's standard input");
    std::io::Write::write_all(&mut stdin, source.as_bytes()).expect("rustfmt reads its input");
    drop(stdin);
    let output = child.wait_with_output().expect("rustfmt ends");
    assert!(output.status.success());
    String::from_utf8(output.stdout).expect("rustfmt prints UTF-8")
}

#[tokio::test]
async fn previews_writes_nothing_then_apply_formats() {
    if !have_rustfmt() {
        return;
    }
    let test = PluginTest::new(tools![RustfmtPreview]);
    let dir = test.working_dir().to_owned();
    std::fs::create_dir(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), UNFORMATTED).unwrap();
    let outcome = test
        .call("rustfmt_preview", json!({"paths": ["src/main.rs"]}))
        .await
        .unwrap();
    let text = outcome.text();
    assert!(
        text.starts_with("rustfmt would change 1 of 1 file(s):"),
        "{text}"
    );
    assert!(
        text.contains("src/main.rs @@ -1,2 +1,4 @@ (2 line(s) replaced by 4)"),
        "{text}"
    );
    // How it looks where a host draws it: the file, and expanded its changed lines.
    let view = outcome.result().view.clone().expect("a view");
    assert_eq!(view.status.unwrap().meta, ["1 of 1 file(s)"]);
    let Block::Section { expanded, .. } = &view.blocks[0] else {
        panic!("{:?}", view.blocks)
    };
    assert_eq!(
        expanded[1],
        Block::diff(
            "src/main.rs",
            [
                DiffLine::removed("fn main(){let x=1;"),
                DiffLine::removed("println!(\"{}\",x);}"),
                DiffLine::added("fn main() {"),
                DiffLine::added("    let x = 1;"),
                DiffLine::added("    println!(\"{}\", x);"),
                DiffLine::added("}"),
            ]
        )
    );
    let pending = test.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].label, "Rustfmt: format 1 file(s)");
    assert_eq!(pending[0].source_tool_name, "rustfmt_preview");
    let on_disk = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert_eq!(on_disk, UNFORMATTED, "execute writes nothing");

    let applied = test.apply_newest("ok").await.unwrap();
    assert_eq!(applied.joined_text(), "Formatted 1 file(s).");
    let on_disk = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert_eq!(on_disk, rustfmt_output(UNFORMATTED));
    assert_eq!(on_disk, FORMATTED);
    assert!(!dir.join(".xcsh").exists(), "nothing left behind");
}

#[tokio::test]
async fn a_file_edited_after_the_preview_is_not_overwritten() {
    if !have_rustfmt() {
        return;
    }
    let test = PluginTest::new(tools![RustfmtPreview]);
    let dir = test.working_dir().to_owned();
    std::fs::write(dir.join("a.rs"), UNFORMATTED).unwrap();
    std::fs::write(dir.join("b.rs"), UNFORMATTED).unwrap();
    test.call("rustfmt_preview", json!({"paths": ["a.rs", "b.rs"]}))
        .await
        .unwrap();
    let edited = "fn main(){let y=2;}\n";
    std::fs::write(dir.join("b.rs"), edited).unwrap();

    let error = test.apply_newest("ok").await.unwrap_err().to_string();
    assert!(
        error.contains("Nothing was written: 1 file(s) changed since the preview: b.rs"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("b.rs")).unwrap(), edited);
    let a = std::fs::read_to_string(dir.join("a.rs")).unwrap();
    assert_eq!(a, UNFORMATTED, "all or nothing");
}

#[tokio::test]
async fn an_already_formatted_file_pushes_nothing() {
    if !have_rustfmt() {
        return;
    }
    let test = PluginTest::new(tools![RustfmtPreview]);
    std::fs::write(test.working_dir().join("lib.rs"), FORMATTED).unwrap();
    let outcome = test
        .call("rustfmt_preview", json!({"paths": ["lib.rs", "lib.rs"]}))
        .await
        .unwrap();
    assert_eq!(outcome.text(), "Already formatted: 1 file(s)");
    assert!(test.pending().is_empty());
    // Only the final newline missing: a change, summarized as such.
    std::fs::write(test.working_dir().join("lib.rs"), FORMATTED.trim_end()).unwrap();
    let outcome = test
        .call("rustfmt_preview", json!({"paths": ["lib.rs"]}))
        .await
        .unwrap();
    assert!(
        outcome.text().contains("lib.rs line endings only"),
        "{}",
        outcome.text()
    );
    assert_eq!(test.pending().len(), 1);
}

#[tokio::test]
async fn rustfmt_failing_names_the_file_and_its_error() {
    let test = PluginTest::new(tools![RustfmtPreview]).with_programs(|_| {
        Ok(ExecOutput {
            stderr: b"error: expected item\n".to_vec(),
            code: Some(1),
            ..ExecOutput::default()
        })
    });
    std::fs::create_dir(test.working_dir().join("src")).unwrap();
    std::fs::write(test.working_dir().join("src/broken.rs"), "fn {").unwrap();
    let error = test
        .call("rustfmt_preview", json!({"paths": ["src/broken.rs"]}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "src/broken.rs: rustfmt failed (exit code 1): error: expected item"
    );
    assert!(test.pending().is_empty());
    // What ran: rustfmt on standard input, in the file's directory, with a timeout.
    let asked = test.asked();
    let [HostRequest::Exec { request }] = asked.as_slice() else {
        panic!("{asked:?}");
    };
    assert_eq!(request.program, "rustfmt");
    assert_eq!(
        request.args,
        ["--emit", "stdout", "--edition", "2021", "--quiet"]
    );
    assert_eq!(request.stdin.as_deref(), Some(&b"fn {"[..]));
    assert!(request.cwd.ends_with("src"), "{:?}", request.cwd);
    assert_eq!(request.timeout_ms, Some(30_000));
}

#[tokio::test]
async fn a_missing_rustfmt_is_reported() {
    let test = PluginTest::new(tools![RustfmtPreview])
        .with_programs(|request| Err(format!("command not found: {}", request.program)));
    std::fs::write(test.working_dir().join("main.rs"), UNFORMATTED).unwrap();
    let error = test
        .call("rustfmt_preview", json!({"paths": ["main.rs"]}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("main.rs: command not found: rustfmt"),
        "{error}"
    );
}

#[tokio::test]
async fn truncated_output_is_refused() {
    let test = PluginTest::new(tools![RustfmtPreview]).with_programs(|_| {
        Ok(ExecOutput {
            stdout: b"fn main() {".to_vec(),
            code: Some(0),
            truncated: true,
            ..ExecOutput::default()
        })
    });
    std::fs::write(test.working_dir().join("main.rs"), UNFORMATTED).unwrap();
    let error = test
        .call("rustfmt_preview", json!({"paths": ["main.rs"]}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("main.rs: rustfmt's output was cut"),
        "{error}"
    );
    assert!(test.pending().is_empty());
}

#[tokio::test]
async fn only_existing_rs_files_are_taken() {
    let test = PluginTest::new(tools![RustfmtPreview]);
    let refused = |paths: Value| {
        let test = &test;
        async move {
            test.call("rustfmt_preview", json!({ "paths": paths }))
                .await
        }
    };
    let error = refused(json!(["main.rs", "notes.md"])).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "notes.md: not a Rust source file; rustfmt_preview formats .rs files only"
    );
    let error = refused(json!([])).await.unwrap_err();
    assert!(matches!(error, TestError::InvalidArguments(_)), "{error}");
    let error = refused(json!(["gone.rs"])).await.unwrap_err().to_string();
    assert!(error.starts_with("cannot read gone.rs: "), "{error}");
    // The reject of a pushed action.
    if have_rustfmt() {
        std::fs::write(test.working_dir().join("a.rs"), UNFORMATTED).unwrap();
        test.call("rustfmt_preview", json!({"paths": ["a.rs"]}))
            .await
            .unwrap();
        let rejected = test.reject_newest("no").await.unwrap().unwrap();
        assert_eq!(rejected.joined_text(), "Discarded formatting of 1 file(s).");
        let a = std::fs::read_to_string(test.working_dir().join("a.rs")).unwrap();
        assert_eq!(a, UNFORMATTED);
    }
}

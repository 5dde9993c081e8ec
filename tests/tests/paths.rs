//! Plugin files whose names are not UTF-8 load like any other, and errors about them still
//! name them (lossily) instead of failing or panicking.

#![cfg(unix)]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use xcsh_integration_tests::{artifacts, plugin};
use xcsh_loader::Session;

fn non_utf8(prefix: &[u8], suffix: &[u8]) -> std::ffi::OsString {
    let mut bytes = prefix.to_vec();
    bytes.extend_from_slice(b"\xff\xfe");
    bytes.extend_from_slice(suffix);
    OsStr::from_bytes(&bytes).to_owned()
}

#[tokio::test]
async fn non_utf8_directory_and_file_names_load_and_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join(non_utf8(b"plugins-", b""));
    std::fs::create_dir(&plugins).unwrap();
    let suffix = std::env::consts::DLL_SUFFIX.as_bytes();
    std::fs::copy(
        plugin("fixture-multi"),
        plugins.join(non_utf8(b"libgood-", suffix)),
    )
    .unwrap();
    std::fs::write(plugins.join(non_utf8(b"libjunk-", suffix)), b"junk").unwrap();

    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(&plugins)
        .build();
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let message = errors[0].to_string();
    assert!(message.contains("libjunk-\u{fffd}\u{fffd}"), "{message}");
    assert!(
        message.contains("not a loadable shared library"),
        "{message}"
    );
    let echoed = session
        .call("echo", serde_json::json!({"text": "ok"}))
        .await;
    assert_eq!(echoed.text(), "ok");

    // The command-line host takes the same path and prints it without failing.
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--plugin"])
        .arg(&plugins)
        .arg("list")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.contains("echo"), "{stdout}");
    assert!(stderr.contains("libjunk-"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

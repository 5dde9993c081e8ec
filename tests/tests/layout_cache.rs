//! The layout-check cache, on real plugin files and real processes: a plugin build that passed
//! abi_stable's layout check once is not checked again by the same host build; a changed file,
//! a corrupt, group-writable or foreign-owned cache entry, or `XCSH_NO_CACHE=1` means the full
//! check runs; a plugin whose layout does not match is refused every time, cache or not.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xcsh_integration_tests::{artifacts, plugin};

const CHECKED: &str = "layout checked";
const SKIPPED: &str = "layout check skipped";

/// `xcsh-plugins list` of `library` in process, with the cache in `cache`, logging the loader.
fn list(library: &Path, cache: &Path, extra_env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(artifacts().cli());
    command
        .args([
            "list",
            "--no-default-dirs",
            "--isolation",
            "in-process",
            "--plugin",
        ])
        .arg(library)
        .env("XCSH_CACHE_DIR", cache)
        .env("XCSH_LOG", "xcsh_loader::load=debug")
        .env("NO_COLOR", "1");
    for (key, value) in extra_env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn log(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A private copy of a plugin library, so the test may change it.
fn copy_of(package: &str, dir: &Path) -> PathBuf {
    let source = plugin(package);
    let copy = dir.join(source.file_name().unwrap());
    std::fs::copy(&source, &copy).unwrap();
    copy
}

/// The layout-check entries in `cache` (an in-process session caches its plugins' tool
/// definitions beside them).
fn entries(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cache)
        .map(|dir| {
            dir.map(|e| e.unwrap().path())
                .filter(|path| {
                    path.file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with("layout-checked"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_checked_build_is_not_checked_again_until_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let library = copy_of("batch-rename", dir.path());

    let first = list(&library, &cache, &[]);
    assert!(first.status.success(), "{}", log(&first));
    assert!(log(&first).contains(CHECKED), "{}", log(&first));
    let written = entries(&cache);
    assert_eq!(written.len(), 1, "{written:?}");
    let mode = std::fs::metadata(&written[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
        0o700
    );

    let second = list(&library, &cache, &[]);
    assert!(second.status.success(), "{}", log(&second));
    assert!(log(&second).contains(SKIPPED), "{}", log(&second));
    assert!(String::from_utf8_lossy(&second.stdout).contains("batch_rename_preview"));

    // Turned off: checked, whatever the cache holds.
    let off = list(&library, &cache, &[("XCSH_NO_CACHE", "1")]);
    assert!(log(&off).contains(CHECKED), "{}", log(&off));

    // The same bytes written again in place: a new change time, so a miss.
    let bytes = std::fs::read(&library).unwrap();
    std::fs::write(&library, &bytes).unwrap();
    let rewritten = list(&library, &cache, &[]);
    assert!(rewritten.status.success(), "{}", log(&rewritten));
    assert!(log(&rewritten).contains(CHECKED), "{}", log(&rewritten));
}

#[test]
fn an_untrustworthy_cache_entry_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let library = copy_of("batch-rename", dir.path());
    assert!(log(&list(&library, &cache, &[])).contains(CHECKED));
    let entry = entries(&cache).pop().unwrap();

    std::fs::write(&entry, b"{\"key\": 1").unwrap();
    let corrupt = list(&library, &cache, &[]);
    assert!(corrupt.status.success(), "{}", log(&corrupt));
    assert!(log(&corrupt).contains(CHECKED), "{}", log(&corrupt));
    // ... and the check's success replaced it.
    assert!(log(&list(&library, &cache, &[])).contains(SKIPPED));

    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o660)).unwrap();
    let group_writable = list(&library, &cache, &[]);
    assert!(
        log(&group_writable).contains(CHECKED),
        "{}",
        log(&group_writable)
    );

    // Owned by someone else (only root can give a file away).
    if is_root() {
        std::fs::remove_file(&entry).unwrap();
        assert!(log(&list(&library, &cache, &[])).contains(CHECKED));
        let entry = entries(&cache).pop().unwrap();
        std::os::unix::fs::chown(&entry, Some(4242), Some(4242)).unwrap();
        let foreign = list(&library, &cache, &[]);
        assert!(log(&foreign).contains(CHECKED), "{}", log(&foreign));
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|uids| uids.split_whitespace().next() == Some("0"))
}

#[test]
fn a_mismatched_layout_is_refused_with_the_cache_on() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let library = copy_of("fixture-bad-layout", dir.path());
    for _ in 0..2 {
        let output = list(&library, &cache, &[]);
        assert_eq!(output.status.code(), Some(1), "{}", log(&output));
        assert!(
            log(&output).contains("incompatible plugin ABI"),
            "{}",
            log(&output)
        );
        assert!(!log(&output).contains(SKIPPED), "{}", log(&output));
    }
    assert!(entries(&cache).is_empty(), "a failed check is never cached");
}

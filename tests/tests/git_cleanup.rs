//! The sample `git_cleanup` (issue 52) through `xcsh-plugins`, on the real library, from a
//! subdirectory of a real git repository (as in any monorepo): its preview reads the enclosing
//! repository under the default sandbox; its apply (`git branch -d`, run through the context
//! `resolve` hands the action) needs `--allow-write` for the repository in a plugin process,
//! fails naming that flag without it, and then deletes nothing; with it, or in process, it
//! deletes exactly the merged branches.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xcsh_integration_tests::{artifacts, landlock_confines, plugin, printed};

/// Run git in `dir`; its output, or a panic with what it said.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A repository on `main` with a subdirectory `sub`, two branches merged into `main` (`m1`,
/// `m2`) and one that is not (`u1`).
fn repository() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    git(&repo, &["config", "user.name", "Test"]);
    std::fs::write(repo.join("sub/file.txt"), "one\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    git(&repo, &["branch", "m1"]);
    git(&repo, &["branch", "m2"]);
    git(&repo, &["checkout", "-q", "-b", "u1"]);
    std::fs::write(repo.join("sub/file.txt"), "two\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);
    git(&repo, &["checkout", "-q", "main"]);
    (dir, repo)
}

fn branches(repo: &Path) -> Vec<String> {
    git(repo, &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `xcsh-plugins --cwd repo/sub [args]`: exit code and everything it printed.
fn cli(repo: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("git-cleanup"))
        .arg("--cwd")
        .arg(repo.join("sub"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (output.status.code().unwrap_or(-1), printed(&output))
}

/// `call git_cleanup '{}'` with `options` before it and `decision` after it.
fn cleanup(repo: &Path, options: &[&str], decision: &[&str]) -> (i32, String) {
    let args: Vec<&str> = options
        .iter()
        .copied()
        .chain(["call", "git_cleanup", "{}"])
        .chain(decision.iter().copied())
        .collect();
    cli(repo, &args)
}

/// Whether this kernel confines plugin processes (`list` says `landlock v`).
fn sandboxed(repo: &Path) -> bool {
    landlock_confines(&cli(repo, &["list"]).1)
}

const EVERY_BRANCH: [&str; 4] = ["m1", "m2", "main", "u1"];

#[test]
fn the_preview_reads_the_enclosing_repository_under_the_default_sandbox() {
    let (_dir, repo) = repository();
    let (code, text) = cleanup(&repo, &[], &["--discard"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("2 merged branches to delete: m1, m2. Call resolve to apply or discard."),
        "{text}"
    );
    assert_eq!(branches(&repo), EVERY_BRANCH, "a discard deletes nothing");
}

#[test]
fn without_allow_write_the_apply_fails_naming_the_flag_and_deletes_nothing() {
    let (_dir, repo) = repository();
    if !sandboxed(&repo) {
        return;
    }
    let (code, text) = cleanup(&repo, &[], &["--apply", "--reason", "merged"]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("--allow-write"), "{text}");
    assert!(text.contains(repo.to_str().unwrap()), "{text}");
    assert_eq!(branches(&repo), EVERY_BRANCH);
}

#[test]
fn with_allow_write_or_in_process_the_apply_deletes_exactly_the_merged_branches() {
    for in_process in [false, true] {
        let (_dir, repo) = repository();
        let allow = repo.to_str().unwrap().to_owned();
        let options: Vec<&str> = if in_process {
            vec!["--isolation", "in-process"]
        } else {
            vec!["--allow-write", &allow]
        };
        let (code, text) = cleanup(&repo, &options, &["--apply", "--reason", "merged"]);
        assert_eq!(code, 0, "in process: {in_process}: {text}");
        assert!(
            text.contains("Deleted 2 merged branches: m1, m2"),
            "in process: {in_process}: {text}"
        );
        assert_eq!(branches(&repo), ["main", "u1"], "in process: {in_process}");
    }
}

//! `xcsh-plugins call … --apply` interrupted by `SIGINT`, `SIGTERM` and `SIGHUP` while
//! `batch_rename` (in its plugin process, the default) renames 2,000 files (issue 34): at every
//! moment, mid-commit included, the tree ends all old or all new with no file besides, and the
//! exit status and message say which (130, 143 or 129 with `nothing was applied`, or with
//! `1 apply(ies) had completed before it`; 0 when the command had finished).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xcsh_integration_tests::artifacts;
use xcsh_integration_tests::cancel_tree::{rename_tree, rename_tree_preview, whole, Whole};

const FILES: usize = 2000;

/// When the test sends the signal.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// As soon as the commit's journal directory appears: mid-commit.
    JournalSeen,
    /// This long after the command showed the preview (then it resolves, and watches signals).
    AfterPreview(Duration),
}

/// Start `call batch_rename_preview - --apply` in `dir`, the arguments on stdin.
fn start(dir: &Path, names: &[String]) -> Child {
    let built = artifacts();
    let mut child = Command::new(built.cli())
        .args(["--no-default-dirs", "--plugin"])
        .arg(built.plugin("batch-rename"))
        .arg("--cwd")
        .arg(dir)
        .args([
            "call",
            "batch_rename_preview",
            "-",
            "--apply",
            "--reason",
            "test",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let arguments = rename_tree_preview(names).to_string();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(arguments.as_bytes()).unwrap();
    drop(stdin);
    child
}

/// Read the command's stdout to its end; tells `previewed` once the preview was shown.
fn watch_stdout(child: &mut Child, previewed: std::sync::mpsc::Sender<()>) {
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut previewed = Some(previewed);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("Prepared rename plan") {
                if let Some(previewed) = previewed.take() {
                    let _ = previewed.send(());
                }
            }
        }
    });
}

/// Wait for `moment` (or the command's end); whether the journal was seen.
fn wait_for(dir: &Path, moment: Moment, child: &mut Child) -> bool {
    let (previewed, shown) = std::sync::mpsc::channel();
    watch_stdout(child, previewed);
    match moment {
        Moment::AfterPreview(delay) => {
            assert!(
                shown.recv_timeout(Duration::from_secs(60)).is_ok(),
                "no preview shown"
            );
            std::thread::sleep(delay);
            false
        }
        Moment::JournalSeen => {
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                if dir.join(".xcsh").exists() {
                    return true;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            false
        }
    }
}

/// Interrupt the apply with `signal` (`INT`, `TERM`, `HUP`) at `moment`; check that the tree
/// and what the command said agree. Whether the apply was undone mid-commit.
fn interrupted(signal: &str, code: i32, moment: Moment) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let (names, old, new) = rename_tree(dir.path(), FILES);
    let mut child = start(dir.path(), &names);
    let mid_commit = wait_for(dir.path(), moment, &mut child);
    let sent = Command::new("kill")
        .args(["-s", signal, &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tree = whole(dir.path(), &old, &new);
    let context = format!(
        "SIG{signal} {moment:?}: {:?} {tree:?}\n{stderr}",
        output.status
    );
    eprintln!(
        "SIG{signal} {moment:?}: {:?}, {tree:?}",
        output.status.code()
    );
    match output.status.code() {
        Some(0) => assert_eq!(tree, Whole::New, "{context}"),
        Some(status) => {
            assert!(sent.success(), "{context}");
            assert_eq!(status, code, "{context}");
            let said = format!("interrupted by SIG{signal}: ");
            if stderr.contains(&format!("{said}nothing was applied")) {
                assert_eq!(tree, Whole::Old, "{context}");
                return mid_commit;
            }
            assert!(
                stderr.contains(&format!("{said}1 apply(ies) had completed before it")),
                "{context}"
            );
            assert_eq!(tree, Whole::New, "{context}");
        }
        None => panic!("the command was killed: {context}"),
    }
    false
}

#[test]
fn sigint_sigterm_and_sighup_during_an_apply_leave_the_tree_old_or_new_and_say_which() {
    let mut undone_mid_commit = 0;
    for (signal, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        for moment in [
            Moment::JournalSeen,
            Moment::AfterPreview(Duration::ZERO),
            Moment::AfterPreview(Duration::from_millis(60)),
            Moment::AfterPreview(Duration::from_millis(1000)),
        ] {
            undone_mid_commit += usize::from(interrupted(signal, code, moment));
        }
    }
    assert!(
        undone_mid_commit > 0,
        "no signal came while the commit ran and undid it"
    );
}

//! A plugin's question on the terminal (issue 43): `xcsh-plugins call` run in a real
//! pseudo-terminal (a `tmux` session), the sample plugin asking before it plans 21 renames.
//! Answered no: nothing planned, exit 0; `Ctrl-C` on the open question: the call is cancelled
//! and the command exits 130, nothing planned or renamed; `--no-input`: nothing is asked; a
//! form, field by field, with its choices shown by their titles; a preview's view drawn, in
//! colour and under `NO_COLOR`.
//! Skipped (with a note) where `tmux` is not installed; `.ci/run` installs it.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use xcsh_integration_tests::{artifacts, listing, plugin};

/// A tmux session running one command line; killed on drop.
struct Pty {
    name: String,
}

impl Pty {
    fn start(name: &str, command: &str) -> Option<Self> {
        // The tests run in parallel, and the first `new-session` starts tmux's server: one at a
        // time, and again after a moment when one raced a server that was starting or exiting
        // (CI saw `tmux new-session failed` with four sessions starting at once).
        static STARTING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = None;
        for _attempt in 0..5 {
            let started = Command::new("tmux")
                .args([
                    "new-session",
                    "-d",
                    "-s",
                    name,
                    "-x",
                    "160",
                    "-y",
                    "40",
                    command,
                ])
                .output()
                .ok()?;
            if started.status.success() {
                return Some(Self {
                    name: name.to_owned(),
                });
            }
            last = Some(String::from_utf8_lossy(&started.stderr).into_owned());
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!(
            "tmux new-session failed 5 times: {}",
            last.unwrap_or_default()
        );
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-J", "-S", "-100", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Wait until the screen shows `text` (at most 60 s); the screen.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "waited 60 s for {text:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

fn tmux_available() -> bool {
    let found = Command::new("tmux").arg("-V").output().is_ok();
    assert!(
        found || std::env::var_os("XCSH_REQUIRE_TMUX").is_none(),
        "tmux is required (XCSH_REQUIRE_TMUX is set) but not installed"
    );
    if !found {
        eprintln!("skipped: tmux is not installed (apt-get install tmux)");
    }
    found
}

/// 21 files, and the command line that previews renaming them all, then prints its status.
fn setup(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..21).map(|i| format!("a{i}.txt")).collect();
    for file in &files {
        std::fs::write(dir.path().join(file), "x").unwrap();
    }
    let args = serde_json::json!({"files": files, "find": "a", "replace": "b"});
    let line = format!(
        "NO_COLOR=1 '{}' call --no-default-dirs --plugin '{}' --cwd '{}' {extra} \
         batch_rename_preview '{}' --discard; echo EXIT=$?; sleep 600",
        artifacts().cli().display(),
        plugin("batch-rename").display(),
        dir.path().display(),
        args
    );
    (dir, line)
}

/// The preview of 21 renames as a terminal shows it: drawn from its view (issue 55), the plan's
/// table expanded, not its text (which a pipe gets).
fn drawn_plan_of_21(screen: &str) {
    assert!(
        screen.contains("○ Batch Rename  a → b  [proposed]  · 21 files"),
        "{screen}"
    );
    assert!(screen.contains("  a20.txt  b20.txt"), "{screen}");
    assert!(!screen.contains("Prepared rename plan"), "{screen}");
}

fn session_name(test: &str) -> String {
    format!("xcsh-{test}-{}", std::process::id())
}

fn untouched(dir: &Path) {
    let names = listing(dir);
    assert_eq!(names.len(), 21, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with('a')), "{names:?}");
}

#[test]
fn the_user_says_no_on_the_terminal_and_nothing_is_planned() {
    if !tmux_available() {
        return;
    }
    let (dir, line) = setup("");
    let pty = Pty::start(&session_name("no"), &line).unwrap();
    pty.wait_for("Plan renaming 21 files");
    pty.keys(&["n", "Enter"]);
    let screen = pty.wait_for("EXIT=");
    assert!(
        screen.contains("The user declined renaming 21 files; nothing was planned."),
        "{screen}"
    );
    assert!(screen.contains("EXIT=0"), "{screen}");
    untouched(dir.path());
}

#[test]
fn ctrl_c_on_the_question_withdraws_it_and_cancels_the_call() {
    if !tmux_available() {
        return;
    }
    let (dir, line) = setup("");
    let pty = Pty::start(&session_name("ctrl-c"), &line).unwrap();
    pty.wait_for("Plan renaming 21 files");
    pty.keys(&["C-c"]);
    let screen = pty.wait_for("EXIT=");
    assert!(screen.contains("EXIT=130"), "{screen}");
    assert!(
        screen.contains("Tool \"batch_rename_preview\" was cancelled"),
        "{screen}"
    );
    assert!(screen.contains("interrupted by SIGINT"), "{screen}");
    assert!(!screen.contains("Prepared rename plan"), "{screen}");
    untouched(dir.path());
}

#[test]
fn no_input_asks_nothing_and_plans_as_always() {
    if !tmux_available() {
        return;
    }
    let (dir, line) = setup("--no-input");
    let pty = Pty::start(&session_name("no-input"), &line).unwrap();
    let screen = pty.wait_for("EXIT=");
    drawn_plan_of_21(&screen);
    assert!(!screen.contains("Plan renaming"), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    untouched(dir.path());
}

#[test]
fn no_input_on_a_terminal_does_not_prompt_for_a_decision_either() {
    if !tmux_available() {
        return;
    }
    let (dir, line) = setup("--no-input");
    // Without --discard: on a terminal `call` would ask "Apply ...?"; --no-input asks nothing.
    let line = line.replace(" --discard;", ";");
    let pty = Pty::start(&session_name("no-input-decision"), &line).unwrap();
    let screen = pty.wait_for("EXIT=");
    drawn_plan_of_21(&screen);
    assert!(!screen.contains("[a]pply / [d]iscard"), "{screen}");
    assert!(
        screen.contains("no decision given (non-interactive); nothing applied"),
        "{screen}"
    );
    untouched(dir.path());
}

/// A form on the terminal (the conformance fixture's choices): each field asked by its title,
/// a choice's options by theirs (`oneOf` titles, the older `enumNames`), multiple choices with
/// the space bar, then "Submit?"; the answer holds the options' values. The same field list
/// (`xcsh_plugin_api::host::form_fields`) drives the Node runtime's dialogs
/// (bindings/node/test/host-services.test.js).
#[test]
fn a_form_is_asked_field_by_field_with_its_choices_titles() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "NO_COLOR=1 '{}' call --no-default-dirs --plugin '{}' --cwd '{}' \
         test_elicitation_sep1330_enums '{{}}'; echo EXIT=$?; sleep 600",
        artifacts().cli().display(),
        plugin("fixture-conformance").display(),
        dir.path().display(),
    );
    let pty = Pty::start(&session_name("form"), &line).unwrap();
    pty.wait_for("option3");
    pty.keys(&["Down", "Enter"]);
    pty.wait_for("Third Option");
    pty.keys(&["Down", "Down", "Enter"]);
    pty.wait_for("Option Three");
    pty.keys(&["Down", "Enter"]);
    pty.wait_for("Select multiple options");
    pty.keys(&["Space", "Down", "Down", "Space", "Enter"]);
    pty.wait_for("Third Choice");
    pty.keys(&["Down", "Space", "Enter"]);
    pty.wait_for("Submit?");
    pty.keys(&["Enter"]);
    let screen = pty.wait_for("EXIT=");
    // The fields in the form's order (the plugin's struct), each answer an option's value.
    let expected = r#"content={"untitledSingle":"option2","titledSingle":"value3","legacyEnum":"opt2","untitledMulti":["option1","option3"],"titledMulti":["value2"]}"#;
    assert!(
        screen.contains(&format!("Elicitation completed: action=accept, {expected}")),
        "{screen}"
    );
    assert!(
        screen.contains("? Select one option with titles Third Option"),
        "{screen}"
    );
    assert!(screen.contains("EXIT=0"), "{screen}");
}

/// A preview's view on a real terminal (issue 55): drawn in the theme's colours, and the same
/// lines without any escape sequence under `NO_COLOR`; a pipe gets the text (`cli.rs`).
#[test]
fn a_preview_s_view_is_drawn_in_colour_and_plain_under_no_color() {
    if !tmux_available() {
        return;
    }
    for (name, no_color) in [("view-colour", false), ("view-no-color", true)] {
        let (dir, line) = setup("--no-input");
        let line = if no_color {
            line
        } else {
            line.replacen("NO_COLOR=1 ", "", 1)
        };
        let pty = Pty::start(&session_name(name), &line).unwrap();
        pty.wait_for("EXIT=");
        let out = Command::new("tmux")
            .args([
                "capture-pane",
                "-p",
                "-e",
                "-J",
                "-S",
                "-100",
                "-t",
                &pty.name,
            ])
            .output()
            .unwrap();
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        let status = screen
            .lines()
            .find(|line| line.contains("Batch Rename"))
            .unwrap_or_else(|| panic!("{screen}"));
        if no_color {
            assert_eq!(
                status.trim_end(),
                "○ Batch Rename  a → b  [proposed]  · 21 files",
                "{screen}"
            );
            assert!(!screen.contains('\x1b'), "{screen:?}");
        } else {
            // The badge in the warning role (yellow), the title bold, the meta muted.
            assert!(status.contains("\x1b[33m[proposed]"), "{status:?}");
            assert!(status.contains("\x1b[1mBatch Rename"), "{status:?}");
            assert!(status.contains("\x1b[2m· 21 files"), "{status:?}");
        }
        untouched(dir.path());
    }
}

/// The built-in ast_edit's preview on a real terminal, drawn from its view: the status line
/// with the pattern and counts, each file's changes (sections expanded), added lines green;
/// under `NO_COLOR` the same lines plain.
#[test]
fn the_ast_edit_preview_is_drawn_on_a_terminal_in_colour_and_plain() {
    if !tmux_available() {
        return;
    }
    for (name, no_color) in [("ast-colour", false), ("ast-no-color", true)] {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [
            ("src/a.rs", "fn a() { foo(1); }\n"),
            ("src/b.rs", "fn b() { foo(2); foo(3); }\n"),
            ("c.rs", "fn c() { foo(4); }\n"),
        ] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let line = format!(
            "{}'{}' call --no-default-dirs --cwd '{}' --no-input ast_edit \
             '{{\"ops\": [{{\"pat\": \"foo($A)\", \"out\": \"bar($A)\"}}]}}' --discard; \
             echo EXIT=$?; sleep 600",
            if no_color { "NO_COLOR=1 " } else { "" },
            artifacts().cli().display(),
            dir.path().display(),
        );
        let pty = Pty::start(&session_name(name), &line).unwrap();
        pty.wait_for("EXIT=");
        let out = Command::new("tmux")
            .args([
                "capture-pane",
                "-p",
                "-e",
                "-J",
                "-S",
                "-100",
                "-t",
                &pty.name,
            ])
            .output()
            .unwrap();
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        if no_color {
            assert!(!screen.contains('\x1b'), "{screen:?}");
            let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
            let at = lines
                .iter()
                .position(|line| line.starts_with("✔ AST Edit"))
                .unwrap_or_else(|| panic!("{screen}"));
            assert_eq!(
                lines[at..at + 8],
                [
                    "✔ AST Edit  foo($A)  [proposed]  · 4 replacements  · 3 files  · in .  · searched 3",
                    "  c.rs",
                    "  - 1:10 foo(4)",
                    "  + 1:10 bar(4)",
                    "  src/a.rs",
                    "  - 1:10 foo(1)",
                    "  + 1:10 bar(1)",
                    "  src/b.rs",
                ],
                "{screen}"
            );
        } else {
            assert!(screen.contains("\x1b[32m+ 1:10 bar(4)"), "{screen:?}");
            assert!(screen.contains("\x1b[31m- 1:10 foo(4)"), "{screen:?}");
        }
        assert!(screen.contains("EXIT=0"), "{screen}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c.rs")).unwrap(),
            "fn c() { foo(4); }\n",
            "discarded: nothing written"
        );
    }
}

//! Output conventions shared by the commands: colour only on a terminal and without
//! `NO_COLOR`, and the terminal width for the renderer.

use std::io::IsTerminal;

fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether stdout gets colour.
pub fn stdout_color() -> bool {
    color_allowed() && std::io::stdout().is_terminal()
}

/// Whether stderr gets colour.
pub fn stderr_color() -> bool {
    color_allowed() && std::io::stderr().is_terminal()
}

/// The width to render to: `$COLUMNS` when set, else 100.
pub fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 20)
        .unwrap_or(100)
}

/// Print a JSON document to stdout.
pub fn print_json(value: &serde_json::Value) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("error: cannot encode output: {error}"),
    }
}

/// A tool's hints as `list --json` and `check --json` report them: `null` when the tool gives
/// none (always, for a plugin built before xcsh-plugin-api 0.3).
pub fn hints_json(hints: &xcsh_loader::ToolHints) -> serde_json::Value {
    serde_json::json!({
        "readOnly": hints.read_only,
        "destructive": hints.destructive,
        "idempotent": hints.idempotent,
        "openWorld": hints.open_world,
    })
}

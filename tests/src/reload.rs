//! Support for the reload tests: "rebuilding" a plugin over a path the way cargo does, and
//! reading the answers of the `fixture-reload-v*` plugins.

#![allow(clippy::unwrap_used)] // Test support: fails loudly on unexpected errors.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::plugin;

/// Put `package`'s built library at `file` the way cargo does: a new file (mode 0755) renamed
/// over the old one, so a process still mapping the old file keeps its bytes.
pub fn rebuild(package: &str, file: &Path) {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let temp = file.with_extension("new");
    std::fs::copy(plugin(package), &temp).unwrap();
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&temp, file).unwrap();
}

/// `reload_version`'s answer, "v1 (pid 123)", as (1, 123). Only the first line counts (over
/// MCP the resolve reminder follows while something is pending).
pub fn version_and_pid(text: &str) -> (u32, u32) {
    let first_line = text.lines().next().unwrap_or_default();
    let (version, pid) = first_line
        .strip_prefix('v')
        .and_then(|rest| rest.split_once(" (pid "))
        .unwrap_or_else(|| panic!("unexpected answer {text:?}"));
    (
        version.parse().unwrap(),
        pid.trim_end_matches(')').parse().unwrap(),
    )
}

//! Process isolation: each plugin library runs in a child process of its own
//! (`xcsh-plugin-host`), so that a segfault, an `abort`, an `exit`, a stack overflow or a
//! hang in plugin code ends or stops that child, never the host.
//!
//! - [`Isolation`]: the modes, and the platform default;
//! - `protocol`: the framed messages over the socketpair (`LengthDelimitedCodec` + JSON);
//! - `connection`: the host's side of one child: spawn, handshake, reaper, kill;
//! - `reader`: the thread that reads one child's answers and routes them;
//! - `plugin`: one isolated library in a session: its tools, crash record, respawn;
//! - `idle`: the stop policy for idle plugin processes;
//! - `proxy`: the store's stand-ins for pending actions that live in a child;
//! - what runs inside `xcsh-plugin-host` is the crate `xcsh-loader-process`.
//!
//! The contract, with its exact strings, is in `docs/isolation.md`.

mod connection;
pub(crate) mod idle;
pub(crate) mod plugin;
pub(crate) mod probe;
#[doc(hidden)]
pub mod protocol;
mod proxy;
mod reader;

use std::path::PathBuf;

/// The environment variable naming the `xcsh-plugin-host` executable.
pub const PLUGIN_HOST_ENV: &str = "XCSH_PLUGIN_HOST";

/// The name of the child executable (shipped beside `xcsh-plugins`, by the `xcsh-plugins`
/// package).
pub const PLUGIN_HOST_BIN: &str = "xcsh-plugin-host";

/// Where a session runs plugin code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Each plugin library in a child process of its own, which the host can kill. The
    /// default.
    #[default]
    Process,
    /// In the host's own process: panics are contained, but not an `exit`, an `abort` or a
    /// segfault. For an embedder who trusts its plugins.
    InProcess,
}

impl Isolation {
    /// Whether this platform can run plugins in processes of their own: always, on every
    /// system the loader builds for (Linux, macOS and Windows; `build.rs` refuses others).
    pub const PROCESS_AVAILABLE: bool = true;

    /// The mode a session really uses when `self` is asked for: `self`, on every system the
    /// loader builds for (kept for embedders written when other systems fell back to
    /// `InProcess`).
    pub fn effective(self) -> Isolation {
        self
    }

    /// `process` or `in-process`, as the command line spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Process => "process",
            Isolation::InProcess => "in-process",
        }
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "process" => Ok(Isolation::Process),
            "in-process" => Ok(Isolation::InProcess),
            other => Err(format!(
                "unknown isolation mode {other:?}; use \"process\" or \"in-process\""
            )),
        }
    }
}

/// Find `xcsh-plugin-host`: `explicit` (a builder setting), then `$XCSH_PLUGIN_HOST`, then
/// next to the running executable (and one directory up, where cargo puts test binaries'
/// siblings). The error says how to provide it.
pub(crate) fn find_plugin_host(explicit: Option<&PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = explicit {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os(PLUGIN_HOST_ENV) {
        return Ok(PathBuf::from(path));
    }
    let name = format!("{PLUGIN_HOST_BIN}{}", std::env::consts::EXE_SUFFIX);
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            let candidate = dir.join(&name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "{PLUGIN_HOST_BIN} was not found next to the running executable; install it there, \
         set {PLUGIN_HOST_ENV}=/path/to/{PLUGIN_HOST_BIN}, call SessionBuilder::plugin_host, \
         or use in-process isolation (--isolation in-process)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_the_command_line_spells_them() {
        assert_eq!("process".parse(), Ok(Isolation::Process));
        assert_eq!("in-process".parse(), Ok(Isolation::InProcess));
        assert!("sideways".parse::<Isolation>().is_err());
        assert_eq!(Isolation::InProcess.to_string(), "in-process");
        assert_eq!(Isolation::InProcess.effective(), Isolation::InProcess);
        assert_eq!(Isolation::default(), Isolation::Process);
    }

    #[test]
    fn an_explicit_plugin_host_wins_and_a_missing_one_says_how_to_provide_it() {
        let explicit = PathBuf::from("/opt/xcsh/xcsh-plugin-host");
        assert_eq!(find_plugin_host(Some(&explicit)), Ok(explicit));
    }

    #[cfg(unix)]
    #[test]
    fn exits_are_described_by_signal_name_or_status() {
        use std::os::unix::process::ExitStatusExt;
        use std::process::ExitStatus;
        let describe = crate::sys::spawn::describe_exit;
        assert_eq!(describe(ExitStatus::from_raw(11)), "killed by SIGSEGV");
        assert_eq!(describe(ExitStatus::from_raw(6)), "killed by SIGABRT");
        assert_eq!(
            describe(ExitStatus::from_raw(7 << 8)),
            "exited with status 7"
        );
        assert_eq!(describe(ExitStatus::from_raw(33)), "killed by signal 33");
    }

    #[cfg(windows)]
    #[test]
    fn windows_exits_are_described_by_crash_or_status() {
        use std::os::windows::process::ExitStatusExt;
        use std::process::ExitStatus;
        let describe = crate::sys::spawn::describe_exit;
        assert_eq!(
            describe(ExitStatus::from_raw(0xC000_0005)),
            "crashed: access violation (0xC0000005)"
        );
        assert_eq!(
            describe(ExitStatus::from_raw(0xC000_00FD)),
            "crashed: stack overflow (0xC00000FD)"
        );
        assert_eq!(describe(ExitStatus::from_raw(3)), "aborted (exit status 3)");
        assert_eq!(describe(ExitStatus::from_raw(7)), "exited with status 7");
    }
}

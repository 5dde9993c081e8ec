//! [`LoadError`]: everything that can go wrong while finding and loading one plugin file.
//!
//! An error is the file it is about plus a [`LoadErrorKind`]. The kind enum is
//! `#[non_exhaustive]`, so a later release can report a new problem without breaking
//! embedders that match on it. The loader collects errors and carries on with the next file,
//! so one broken plugin never hides the others.

use std::path::{Path, PathBuf};

use crate::loading::safety::shell_quote;
use crate::messages;

/// A problem with one plugin file. Loading continues with the next file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct LoadError {
    /// The file (or path given by the user) the problem is about.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: LoadErrorKind,
}

/// What went wrong with a plugin file. See [`LoadError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// A path given by the user does not exist or cannot be read.
    #[error("cannot read plugin path: {cause}")]
    Unreadable {
        /// Why.
        cause: String,
    },
    /// The file is not a loadable shared library.
    #[error("not a loadable shared library: {cause}")]
    NotALibrary {
        /// The dynamic loader's (or the header check's) complaint.
        cause: String,
    },
    /// Built for another operating system or architecture than this host's, as its headers
    /// say. Found before it is loaded: nothing of it ran.
    #[error("{} {built_for} library{}; this host is {host}", article(built_for), format.as_ref().map(|f| format!(" ({f})")).unwrap_or_default())]
    ForeignPlatform {
        /// What it was built for: `aarch64 Linux`, `macOS arm64`, `universal (macOS x86_64,
        /// macOS arm64)`.
        built_for: String,
        /// Its file format when this host's dynamic loader reads another (`Mach-O`, `PE`).
        format: Option<String>,
        /// What this host is: `x86_64 Linux`.
        host: String,
    },
    /// A Linux library that needs a newer glibc than the one this process runs with. Found
    /// before it is loaded: nothing of it ran.
    #[error("needs glibc {needs}; this system has glibc {has}")]
    NewerGlibc {
        /// The newest `GLIBC_` version it needs (`2.39`).
        needs: String,
        /// The running glibc's version (`2.36`).
        has: String,
    },
    /// A multi-platform plugin folder (`*.xcsh-plugin`) with no library for this host's
    /// target triple.
    #[error("no library for this host ({host}) in this plugin folder; {}", if available.is_empty() { "it has no library for any platform".to_owned() } else { format!("it has: {}", available.join(", ")) })]
    NoLibraryForHost {
        /// This host's target triple: the subfolder that was looked for.
        host: String,
        /// The target triples the folder has a library for.
        available: Vec<String>,
    },
    /// A multi-platform plugin folder laid out so that which library to load is unclear.
    #[error("invalid plugin folder: {cause}")]
    PluginFolder {
        /// What is wrong, and the fix.
        cause: String,
    },
    /// The library loads but exports no xcsh plugin root module.
    #[error("no xcsh plugin root module (build it with `xcsh_plugin_api::export_plugin!`)")]
    NoRootModule,
    /// Built against an `xcsh-plugin-api` version this host does not support, or without the
    /// version marker (0.1). Found in the file before it is loaded: nothing of it ran.
    #[error("{}", messages::incompatible_api_cause(found, oldest, host))]
    IncompatibleVersion {
        /// The version the plugin was built against (for a library without a marker, a
        /// description of that).
        found: String,
        /// The oldest version this host supports.
        oldest: String,
        /// The host's own version.
        host: String,
    },
    /// The root module's layout or the abi_stable version differs.
    #[error("incompatible plugin ABI: {cause}")]
    IncompatibleAbi {
        /// What differs.
        cause: String,
    },
    /// The plugin's factory returned an error or panicked.
    #[error("plugin factory failed: {message}")]
    Factory {
        /// The factory's error or panic message.
        message: String,
    },
    /// A tool's name, label or description is unusable.
    #[error("tool \"{tool}\" is invalid: {cause}")]
    InvalidTool {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        cause: String,
    },
    /// A tool's parameter schema is not a valid JSON Schema with an object root.
    #[error("tool \"{tool}\" has an invalid parameter schema: {cause}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        cause: String,
    },
    /// The file or a directory above it fails the ownership and permission checks made before
    /// anything is loaded; the cause says what is wrong and how to fix it.
    #[error("refusing to load: {cause}")]
    Unsafe {
        /// What is wrong, and the fix.
        cause: String,
    },
    /// A project-local plugin (`<cwd>/.xcsh/tools/`) the user has not trusted, or whose
    /// content changed since it was trusted. It was not loaded.
    #[error("{}", if *changed { "project plugin changed since it was trusted" } else { "project plugin is not trusted" })]
    Untrusted {
        /// Whether it was trusted with other content.
        changed: bool,
    },
    /// The file changed while it was being loaded, after it was checked. What the dynamic
    /// loader mapped may not be what was checked, so none of it is used.
    #[error("the file changed while it was being loaded; nothing of it is used, try again")]
    ChangedWhileLoading,
    /// The file's content differs from the copy this process already loaded from that path.
    /// The earlier copy stays in use by the sessions that have it; the new content is not
    /// loaded until the host restarts.
    #[error("the file changed since it was loaded in this process; the copy loaded earlier stays in use until the host restarts")]
    ChangedSinceLoaded,
    /// The plugin's process (`xcsh-plugin-host`, process isolation) could not be started, or
    /// it ended before reporting its tools.
    #[error("cannot run the plugin in its own process: {cause}")]
    PluginProcess {
        /// What went wrong, and how to fix it.
        cause: String,
    },
    /// Loaded first in a throwaway process (the probe before loading in process), the file
    /// took that process down or hung it: it is damaged, or its code crashes while loading.
    /// Nothing of it was loaded in the host.
    #[error("loading it in a throwaway process first, that process {cause}; it was not loaded here (a damaged file, or code that crashes while loading)")]
    ProbeFailed {
        /// How the throwaway process ended (`ended: killed by SIGSEGV`, `did not finish within
        /// 20s`).
        cause: String,
    },
    /// A sandbox is required (`--require-sandbox`) and this plugin's code cannot run in one:
    /// the kernel has no Landlock, or the session runs plugins in-process.
    #[error("{}", if *in_process { messages::SANDBOX_REQUIRED_IN_PROCESS } else { messages::SANDBOX_REQUIRED_NO_LANDLOCK })]
    SandboxRequired {
        /// Whether the session runs plugins in-process (else: no Landlock).
        in_process: bool,
    },
    /// Two tools share a name; the later one is skipped.
    #[error("{}", messages::name_conflict(name))]
    NameConflict {
        /// The clashing name.
        name: String,
        /// Where the tool that keeps the name comes from (`<builtin>` for a built-in), when
        /// known; `None` for the name `resolve`, which the session reserves.
        existing: Option<PathBuf>,
    },
}

impl LoadError {
    /// An error about `path`.
    pub fn new(path: impl Into<PathBuf>, kind: LoadErrorKind) -> Self {
        Self {
            path: path.into(),
            kind,
        }
    }

    /// The file this error is about.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong.
    pub fn kind(&self) -> &LoadErrorKind {
        &self.kind
    }

    /// The message without the leading path (for reports that already show the file).
    pub fn cause(&self) -> String {
        match &self.kind {
            LoadErrorKind::IncompatibleVersion { .. } => format!("refusing to load: {}", self.kind),
            LoadErrorKind::SandboxRequired { .. } => format!("refusing to run: {}", self.kind),
            LoadErrorKind::ForeignPlatform { .. } => format!("this is {}", self.kind),
            LoadErrorKind::NewerGlibc { .. } => format!("it {}", self.kind),
            LoadErrorKind::Untrusted { .. } => format!(
                "{}; review it, then trust it with: {}",
                self.kind,
                trust_command(&self.path)
            ),
            kind => kind.to_string(),
        }
    }

    fn render(&self) -> String {
        match &self.kind {
            LoadErrorKind::Unsafe { cause } => {
                format!("refusing to load {}: {cause}", self.path.display())
            }
            LoadErrorKind::IncompatibleVersion {
                found,
                oldest,
                host,
            } => messages::incompatible_api(&self.path, found, oldest, host),
            LoadErrorKind::SandboxRequired { .. } => {
                format!("refusing to run {}: {}", self.path.display(), self.kind)
            }
            LoadErrorKind::ForeignPlatform { .. } => {
                format!("{} is {}", self.path.display(), self.kind)
            }
            LoadErrorKind::NewerGlibc { .. } => format!("{} {}", self.path.display(), self.kind),
            _ => format!("{}: {}", self.path.display(), self.cause()),
        }
    }
}

/// "a" or "an" before `word`, as it is read aloud (`an x86_64`, `an aarch64`, `a macOS`).
fn article(word: &str) -> &'static str {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'x' | 'A' | 'E' | 'I' | 'O' | 'U') => "an",
        _ => "a",
    }
}

/// The command that trusts `path` (quoted for a shell). For this host's library in a
/// multi-platform plugin folder, the folder: trusting it pins every platform's library.
pub fn trust_command(path: &Path) -> String {
    let folder = path
        .parent()
        .and_then(Path::parent)
        .filter(|folder| crate::loading::plugin_folder::is_plugin_folder(folder));
    format!("xcsh-plugins trust {}", shell_quote(folder.unwrap_or(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_first_or_refuse_it() {
        let conflict = LoadError::new(
            "/p/liba.so",
            LoadErrorKind::NameConflict {
                name: "greet".into(),
                existing: Some("/p/libb.so".into()),
            },
        );
        assert_eq!(
            conflict.to_string(),
            "/p/liba.so: Tool name \"greet\" conflicts with existing tool"
        );
        assert_eq!(
            conflict.cause(),
            "Tool name \"greet\" conflicts with existing tool"
        );
        let unsafe_file = LoadError::new(
            "/p/liba.so",
            LoadErrorKind::Unsafe {
                cause: "/p is writable by others (chmod o-w /p)".into(),
            },
        );
        assert_eq!(
            unsafe_file.to_string(),
            "refusing to load /p/liba.so: /p is writable by others (chmod o-w /p)"
        );
        let version = LoadError::new(
            "/p/liba.so",
            LoadErrorKind::IncompatibleVersion {
                found: "0.9.0".into(),
                oldest: "0.2.0".into(),
                host: "0.3.0".into(),
            },
        );
        let foreign = LoadError::new(
            "/p/libfoo.so",
            LoadErrorKind::ForeignPlatform {
                built_for: "macOS arm64".into(),
                format: Some("Mach-O".into()),
                host: "x86_64 Linux".into(),
            },
        );
        assert_eq!(
            foreign.to_string(),
            "/p/libfoo.so is a macOS arm64 library (Mach-O); this host is x86_64 Linux"
        );
        let elf = LoadError::new(
            "/p/libfoo.so",
            LoadErrorKind::ForeignPlatform {
                built_for: "aarch64 Linux".into(),
                format: None,
                host: "x86_64 Linux".into(),
            },
        );
        assert_eq!(
            elf.to_string(),
            "/p/libfoo.so is an aarch64 Linux library; this host is x86_64 Linux"
        );
        let glibc = LoadError::new(
            "/p/libfoo.so",
            LoadErrorKind::NewerGlibc {
                needs: "2.39".into(),
                has: "2.36".into(),
            },
        );
        assert_eq!(
            glibc.to_string(),
            "/p/libfoo.so needs glibc 2.39; this system has glibc 2.36"
        );
        assert_eq!(
            glibc.cause(),
            "it needs glibc 2.39; this system has glibc 2.36"
        );
        assert_eq!(
            version.to_string(),
            "refusing to load /p/liba.so: built against xcsh-plugin-api 0.9.0, this host supports 0.2.0 to 0.3.0"
        );
    }
}

//! [`LoadError`]: everything that can go wrong while finding and loading plugins.
//!
//! Each error names the file and the cause; the loader collects them and carries on with the
//! next file, so one broken plugin never hides the others.

use std::path::PathBuf;

/// A problem with one plugin file. Loading continues with the next file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// A path given by the user does not exist or cannot be read.
    #[error("{}: cannot read plugin path: {cause}", path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// Why.
        cause: String,
    },
    /// The file is not a loadable shared library.
    #[error("{}: not a loadable shared library: {cause}", path.display())]
    NotALibrary {
        /// The file.
        path: PathBuf,
        /// The dynamic loader's complaint.
        cause: String,
    },
    /// The library loads but exports no xcsh plugin root module.
    #[error(
        "{}: no xcsh plugin root module (build it with `xcsh_plugin_api::export_plugin!`)",
        path.display()
    )]
    NoRootModule {
        /// The file.
        path: PathBuf,
    },
    /// Built against an `xcsh-plugin-api` this host does not support (SPEC 3), or without
    /// the version marker (0.1). Found in the file before it is loaded: nothing of it ran.
    #[error(
        "refusing to load {}: built against xcsh-plugin-api {found}, this host supports {oldest} to {host}",
        path.display()
    )]
    IncompatibleVersion {
        /// The file.
        path: PathBuf,
        /// The plugin's version (for a library without a marker, a description of that).
        found: String,
        /// The oldest version this host supports.
        oldest: String,
        /// The host's own version.
        host: String,
    },
    /// The root module's layout or the abi_stable version differs.
    #[error("{}: incompatible plugin ABI: {cause}", path.display())]
    IncompatibleAbi {
        /// The file.
        path: PathBuf,
        /// What differs.
        cause: String,
    },
    /// The plugin's factory returned an error or panicked.
    #[error("{}: plugin factory failed: {message}", path.display())]
    Factory {
        /// The file.
        path: PathBuf,
        /// The factory's error or panic message.
        message: String,
    },
    /// A tool's name, label or description is unusable.
    #[error("{}: tool \"{tool}\" is invalid: {cause}", path.display())]
    InvalidTool {
        /// The file.
        path: PathBuf,
        /// The tool's name.
        tool: String,
        /// What is wrong.
        cause: String,
    },
    /// A tool's parameter schema is not a valid JSON Schema with an object root.
    #[error("{}: tool \"{tool}\" has an invalid parameter schema: {cause}", path.display())]
    InvalidSchema {
        /// The file.
        path: PathBuf,
        /// The tool's name.
        tool: String,
        /// What is wrong.
        cause: String,
    },
    /// The file or a directory above it fails the ownership and permission checks made before
    /// anything is loaded; the cause says what is wrong and how to fix it.
    #[error("refusing to load {}: {cause}", path.display())]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong, and the fix.
        cause: String,
    },
    /// A project-local plugin (`<cwd>/.xcsh/tools/`) the user has not trusted, or whose
    /// content changed since it was trusted. It was not loaded.
    #[error(
        "{}: {}; review it, then trust it with: {}",
        path.display(),
        if *changed { "project plugin changed since it was trusted" } else { "project plugin is not trusted" },
        crate::trust::trust_command(path)
    )]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Whether it was trusted with other content.
        changed: bool,
    },
    /// The file's content differs from the copy this process already loaded from that path.
    /// The earlier copy stays in use by the sessions that have it; the new content is not
    /// loaded until the host restarts.
    #[error(
        "{}: the file changed since it was loaded in this process; the copy loaded earlier stays in use until the host restarts",
        path.display()
    )]
    ChangedSinceLoaded {
        /// The file.
        path: PathBuf,
    },
    /// Two tools share a name; the later one is skipped.
    #[error("{}: Tool name \"{name}\" conflicts with existing tool", path.display())]
    NameConflict {
        /// The file of the skipped tool.
        path: PathBuf,
        /// The clashing name.
        name: String,
    },
}

impl LoadError {
    /// The file this error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            LoadError::Unreadable { path, .. }
            | LoadError::NotALibrary { path, .. }
            | LoadError::NoRootModule { path }
            | LoadError::IncompatibleVersion { path, .. }
            | LoadError::IncompatibleAbi { path, .. }
            | LoadError::Factory { path, .. }
            | LoadError::InvalidTool { path, .. }
            | LoadError::InvalidSchema { path, .. }
            | LoadError::NameConflict { path, .. }
            | LoadError::Unsafe { path, .. }
            | LoadError::Untrusted { path, .. }
            | LoadError::ChangedSinceLoaded { path } => path,
        }
    }

    /// The message without the leading path (for reports that already show the file).
    pub fn cause(&self) -> String {
        match self {
            LoadError::Unsafe { cause, .. } => return format!("refusing to load: {cause}"),
            LoadError::IncompatibleVersion {
                found,
                oldest,
                host,
                ..
            } => {
                return format!(
                    "refusing to load: built against xcsh-plugin-api {found}, this host supports {oldest} to {host}"
                )
            }
            _ => {}
        }
        let full = self.to_string();
        let prefix = format!("{}: ", self.path().display());
        full.strip_prefix(&prefix).unwrap_or(&full).to_owned()
    }
}

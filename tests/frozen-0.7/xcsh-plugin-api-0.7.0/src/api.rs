//! [`CustomToolApi`]: what the host offers a plugin (the TypeScript `pi` object).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ffi::{FfiLogLevel, HostApiBox};
use crate::{CustomToolPendingAction, PluginError};

/// The host's services, handed to the plugin's factory.
///
/// Clone it into each tool that needs it; clones share the same session.
#[derive(Clone)]
pub struct CustomToolApi {
    host: Arc<HostApiBox>,
    cwd: PathBuf,
}

impl std::fmt::Debug for CustomToolApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomToolApi")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl CustomToolApi {
    pub(crate) fn new(host: HostApiBox) -> Self {
        let cwd = PathBuf::from(host.cwd().into_string());
        Self {
            host: Arc::new(host),
            cwd,
        }
    }

    /// The session's working directory; resolve relative paths from the model against it.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolve `path` against [`CustomToolApi::cwd`] (absolute paths are kept).
    pub fn resolve_path(&self, path: impl AsRef<Path>) -> PathBuf {
        self.cwd.join(path)
    }

    /// Push a pending action onto the session's store; the model resolves it with `resolve`.
    ///
    /// # Errors
    /// Fails with `Pending action store unavailable for custom tools in this runtime.` when the
    /// host runs without a store, and when the label is empty.
    pub fn push_pending_action(&self, action: CustomToolPendingAction) -> Result<(), PluginError> {
        if action.label().trim().is_empty() {
            return Err(PluginError::new("pending action label must not be empty"));
        }
        self.host
            .push_pending_action(action.into_ffi(self.clone()))
            .into_result()
            .map_err(|message| PluginError::new(message.into_string()))
    }

    /// Keep this plugin's process running while it is idle (`true`), or let the host stop
    /// it again (`false`, the default).
    ///
    /// Under process isolation a host stops a plugin process that has had no running call
    /// and no pending action for a while (30 seconds by default), and starts it again at the
    /// next call of one of its tools: everything the plugin held in memory is then gone.
    /// Call this with `true` while the plugin holds state a restart would lose (an open
    /// connection, a warm index), from the factory or from a tool, and with `false` once it
    /// no longer does. It changes nothing in-process (nothing is stopped there). Since
    /// `xcsh-plugin-api` 0.5.
    pub fn keep_alive(&self, keep: bool) {
        self.host.keep_alive(keep);
    }

    /// A logger whose lines reach the host's log.
    pub fn logger(&self) -> Logger {
        Logger {
            host: Arc::clone(&self.host),
        }
    }
}

/// Writes lines to the host's log (not to the model).
#[derive(Clone)]
pub struct Logger {
    host: Arc<HostApiBox>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger").finish_non_exhaustive()
    }
}

impl Logger {
    fn log(&self, level: FfiLogLevel, message: impl Into<String>) {
        self.host.log(level, message.into().into());
    }

    /// Log fine-grained diagnostics.
    pub fn debug(&self, message: impl Into<String>) {
        self.log(FfiLogLevel::DEBUG, message);
    }

    /// Log normal progress.
    pub fn info(&self, message: impl Into<String>) {
        self.log(FfiLogLevel::INFO, message);
    }

    /// Log something that looks wrong.
    pub fn warn(&self, message: impl Into<String>) {
        self.log(FfiLogLevel::WARN, message);
    }

    /// Log a failure.
    pub fn error(&self, message: impl Into<String>) {
        self.log(FfiLogLevel::ERROR, message);
    }
}

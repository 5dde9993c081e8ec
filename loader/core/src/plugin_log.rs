//! Where plugins' log lines go: what a plugin logs (`api.logger()`, `ctx.logger()`) and, under
//! process isolation, what its process prints. By default the host's `tracing` (target
//! `xcsh_plugin`); a session may send them to a sink of its own instead
//! ([`crate::SessionBuilder::plugin_log`]), as the Node-API binding does to `pi.logger`.

use std::path::Path;
use std::sync::Arc;

/// How loud a plugin's log line is (also on the wire between a plugin process and its host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginLogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something worth a look (and whatever a plugin process prints).
    Warn,
    /// A failure.
    Error,
}

impl PluginLogLevel {
    /// `debug`, `info`, `warn` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginLogLevel::Debug => "debug",
            PluginLogLevel::Info => "info",
            PluginLogLevel::Warn => "warn",
            PluginLogLevel::Error => "error",
        }
    }
}

impl From<xcsh_plugin_api::ffi::FfiLogLevel> for PluginLogLevel {
    fn from(level: xcsh_plugin_api::ffi::FfiLogLevel) -> Self {
        use xcsh_plugin_api::ffi::FfiLogLevel;
        match level {
            FfiLogLevel::DEBUG => PluginLogLevel::Debug,
            FfiLogLevel::INFO => PluginLogLevel::Info,
            FfiLogLevel::WARN => PluginLogLevel::Warn,
            // Errors, and a level from a newer plugin: logged loudly rather than lost.
            _ => PluginLogLevel::Error,
        }
    }
}

/// A session's own destination for plugin log lines: `(plugin file, level, line)`.
pub type PluginLogSink = Arc<dyn Fn(&Path, PluginLogLevel, &str) + Send + Sync>;

/// Log `message` of `plugin` to `sink`, or to `tracing` without one.
pub fn plugin_log(
    sink: Option<&PluginLogSink>,
    plugin: &Path,
    level: PluginLogLevel,
    message: &str,
) {
    if let Some(sink) = sink {
        sink(plugin, level, message);
        return;
    }
    let plugin = plugin.display();
    match level {
        PluginLogLevel::Debug => tracing::debug!(target: "xcsh_plugin", %plugin, "{message}"),
        PluginLogLevel::Info => tracing::info!(target: "xcsh_plugin", %plugin, "{message}"),
        PluginLogLevel::Warn => tracing::warn!(target: "xcsh_plugin", %plugin, "{message}"),
        PluginLogLevel::Error => tracing::error!(target: "xcsh_plugin", %plugin, "{message}"),
    }
}

//! Plugin log lines to the MCP client: what a plugin logs (`api.logger()`, `ctx.logger()`, in
//! process or under process isolation) goes to the client as `notifications/message`, with
//! its level and the plugin's name as `logger`, filtered by the client's `logging/setLevel`.
//! Each line also goes where it went without a client: the host's `tracing` (target
//! `xcsh_plugin`, on stderr when `XCSH_LOG` asks for it).
//!
//! Lines logged before the MCP handshake began (while plugins load) go to stderr only; later
//! ones wait for the handshake's end and then go out in order. A call's
//! result goes out after what its plugin logged during the call ([`PluginLogs::flush`]).

use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::service::{Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

#[allow(deprecated)] // MCP logging: SEP-2577 deprecates it; clients still use it.
use super::{log_rank, LogLevel};
use xcsh_loader_core::plugin_log::{plugin_log, PluginLogLevel, PluginLogSink};

/// One item on its way to the client.
enum Item {
    Line {
        logger: String,
        level: PluginLogLevel,
        message: String,
    },
    /// Answered once every line before it went out.
    Flush(oneshot::Sender<()>),
}

/// The relay between a session's plugin log lines and the MCP client. Create it before the
/// session, give [`PluginLogs::sink`] to
/// [`SessionBuilder::plugin_log`](xcsh_loader_core::SessionBuilder::plugin_log), and the relay to
/// [`serve_with_plugin_logs`](super::serve_with_plugin_logs).
pub struct PluginLogs {
    sender: mpsc::UnboundedSender<Item>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Item>>>,
}

impl std::fmt::Debug for PluginLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLogs").finish_non_exhaustive()
    }
}

impl Default for PluginLogs {
    fn default() -> Self {
        Self::new()
    }
}

impl PluginLogs {
    /// A relay with nothing connected yet.
    pub fn new() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            sender,
            receiver: Mutex::new(Some(receiver)),
        }
    }

    /// The session's plugin log sink: each line to `tracing` (as without a sink) and on to
    /// the client.
    pub fn sink(&self) -> PluginLogSink {
        let sender = self.sender.clone();
        Arc::new(move |plugin: &Path, level, message: &str| {
            plugin_log(None, plugin, level, message);
            let _ = sender.send(Item::Line {
                logger: plugin_name(plugin),
                level,
                message: message.to_owned(),
            });
        })
    }

    /// Drop the lines logged so far (while the plugins loaded, before any client: they went
    /// to `tracing`). Called before the handshake, so that nothing a call logs is dropped:
    /// a client's first call may run before [`PluginLogs::start`] does.
    pub(super) fn discard_earlier(&self) {
        let mut receiver = xcsh_plugin_api::__private::lock(&self.receiver);
        let Some(receiver) = receiver.as_mut() else {
            return;
        };
        while let Ok(item) = receiver.try_recv() {
            if let Item::Flush(done) = item {
                let _ = done.send(());
            }
        }
    }

    /// Forward lines to `peer` from now on (the client is initialised), with those logged
    /// since [`PluginLogs::discard_earlier`]. Returns the forwarding task.
    pub(super) fn start(
        &self,
        peer: Peer<RoleServer>,
        log_level: Arc<AtomicU8>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let mut receiver = xcsh_plugin_api::__private::lock(&self.receiver).take()?;
        Some(tokio::spawn(async move {
            while let Some(item) = receiver.recv().await {
                match item {
                    Item::Flush(done) => {
                        let _ = done.send(());
                    }
                    Item::Line {
                        logger,
                        level,
                        message,
                    } => send(&peer, &log_level, logger, level, message).await,
                }
            }
        }))
    }

    /// Wait until every line logged so far went to the client (at once when nothing forwards).
    pub(super) async fn flush(&self) {
        let (done, sent) = oneshot::channel();
        if self.sender.send(Item::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), sent).await;
        }
    }
}

#[allow(deprecated)] // MCP logging: SEP-2577 deprecates it; clients still use it.
async fn send(
    peer: &Peer<RoleServer>,
    log_level: &AtomicU8,
    logger: String,
    level: PluginLogLevel,
    message: String,
) {
    let level = match level {
        PluginLogLevel::Debug => LogLevel::Debug,
        PluginLogLevel::Info => LogLevel::Info,
        PluginLogLevel::Warn => LogLevel::Warning,
        PluginLogLevel::Error => LogLevel::Error,
    };
    if log_rank(level) < log_level.load(Ordering::Relaxed) {
        return;
    }
    let param = rmcp::model::LoggingMessageNotificationParam::new(level, message.into())
        .with_logger(logger);
    if let Err(error) = peer.notify_logging_message(param).await {
        tracing::debug!(%error, "cannot send a plugin's log line to the client");
    }
}

/// A plugin's name from its file: `…/libbatch_rename.so` → `batch_rename`.
fn plugin_name(plugin: &Path) -> String {
    let stem = plugin
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| plugin.display().to_string());
    match stem.strip_prefix("lib") {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => stem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_is_named_after_its_library() {
        assert_eq!(
            plugin_name(Path::new("/p/libfixture_conformance.so")),
            "fixture_conformance"
        );
        assert_eq!(plugin_name(Path::new("C:/p/tools.dll")), "tools");
    }
}

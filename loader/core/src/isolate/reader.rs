//! The reading end of one plugin child's socket: a thread of its own, blocking on the
//! socket, that takes the handshake, then routes every answer (results, partial updates,
//! pushes, log lines) to whoever waits for it, until the child closes the socket or sends
//! something malformed (then the child is killed and counts as crashed).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::sync::{mpsc, oneshot};

use super::connection::{CallEnd, Connection, Hello, SessionLinks, Shared, Stop};
use super::protocol::{ChildMessage, FrameReader, HostMessage, ReadError};
use crate::loading::LoadErrorKind;
use crate::plugin_log::plugin_log;
use xcsh_plugin_api::__private::lock;

/// The reading end of one child's socket, on a thread of its own (blocking reads): routes
/// results, updates, pushes and log lines until the child closes the socket or sends
/// something malformed.
pub(super) struct Reader {
    pub(super) frames: FrameReader<crate::sys::spawn::HostRead>,
    pub(super) connection: Weak<Connection>,
    pub(super) shared: Arc<Shared>,
    pub(super) links: SessionLinks,
    pub(super) path: PathBuf,
    pub(super) stop: mpsc::UnboundedSender<Stop>,
}

/// What the handshake gives: the tools, or the load error the child reported.
pub(super) type Handshake = Result<Hello, LoadErrorKind>;

impl Reader {
    pub(super) fn run(mut self, hello: oneshot::Sender<Handshake>) {
        let mut hello = Some(hello);
        loop {
            let message = match self.frames.next::<ChildMessage>() {
                Ok(message) => message,
                Err(ReadError::Closed) => break,
                Err(ReadError::Malformed(error)) => {
                    self.violation(&format!("sent a malformed or oversized message ({error})"));
                    break;
                }
            };
            match (message, hello.take()) {
                (ChildMessage::Log { level, message }, waiting) => {
                    plugin_log(self.links.log.as_ref(), &self.path, level, &message);
                    hello = waiting;
                }
                (
                    ChildMessage::Hello {
                        api_version,
                        tools,
                        confinement,
                    },
                    Some(sender),
                ) => {
                    let _ = sender.send(Ok(Hello {
                        api_version,
                        tools,
                        confinement,
                    }));
                }
                (ChildMessage::LoadFailed { kind }, Some(sender)) => {
                    let _ = sender.send(Err(kind));
                }
                (_, Some(_))
                | (
                    ChildMessage::Hello { .. }
                    | ChildMessage::LoadFailed { .. }
                    | ChildMessage::Probing
                    | ChildMessage::Probed { .. },
                    None,
                ) => {
                    self.violation("broke the handshake");
                    break;
                }
                (message, None) => self.route(message),
            }
        }
        self.shared.reader_done.cancel();
    }

    fn violation(&self, why: &str) {
        tracing::warn!(plugin = %self.path.display(), "plugin process {why}; killing it");
        self.shared.violated_protocol.store(true, Ordering::SeqCst);
        lock(&self.shared.stopped_by_host).get_or_insert_with(|| why.to_owned());
        let _ = self.stop.send(Stop::Kill);
    }

    /// Answer a host-services request of call `call` with the call's services, on the
    /// isolation runtime (a question may wait for its user for long).
    fn serve(&self, call: u64, request: u64, body: xcsh_plugin_api::host::HostRequest) {
        let Some(connection) = self.connection.upgrade() else {
            return;
        };
        let services = lock(&self.shared.calls)
            .get(&call)
            .map(|slot| slot.services.clone())
            .or_else(|| {
                lock(&self.shared.settling)
                    .get(&call)
                    .map(|ctx| ctx.services.clone())
            });
        let Some(services) = services else {
            connection.send(HostMessage::ServiceReply {
                request,
                reply: Err("the call already ended".to_owned()),
            });
            return;
        };
        let runtime = match super::connection::background() {
            Ok(runtime) => runtime,
            Err(error) => {
                tracing::warn!("cannot answer a plugin's host request: {error}");
                return;
            }
        };
        // A notification is shown here, in the order the plugin sent it: before its result.
        // In the runtime's context, as an answer spawned on it would be: a host may hand the
        // notification on with a task of its own (the MCP server sends it to its client so).
        let _context = runtime.enter();
        if let Some(reply) = services.notification(&body) {
            connection.send(HostMessage::ServiceReply { request, reply });
            return;
        }
        drop(runtime.spawn(async move {
            let reply = services.request(body).await;
            connection.send(HostMessage::ServiceReply { request, reply });
        }));
    }

    fn route(&self, message: ChildMessage) {
        let shared = &self.shared;
        match message {
            ChildMessage::Done { call, outcome } => {
                if let Some(slot) = lock(&shared.calls).remove(&call) {
                    let _ = slot.end.send(CallEnd::Done(outcome));
                    slot.finished.cancel();
                }
            }
            ChildMessage::Heard { call } => {
                // Wakes the host's `on_session`.
                shared.hearing.answer(call, ());
            }
            ChildMessage::Update { call, result } => {
                let updates = lock(&shared.calls)
                    .get(&call)
                    .map(|slot| slot.updates.clone())
                    .or_else(|| {
                        lock(&shared.settling)
                            .get(&call)
                            .map(|ctx| ctx.updates.clone())
                    })
                    .flatten();
                if let Some(updates) = updates {
                    updates(result);
                }
            }
            ChildMessage::Resolved {
                request,
                resolution,
            } => {
                shared.requests.answer(request, Ok(resolution));
            }
            ChildMessage::Push {
                action,
                label,
                source_tool_name,
                details,
                has_reject,
            } => {
                // The child only sends pushes when the session has a store; it waits for the
                // answer, which is sent only once the store took the action (or refused it),
                // so a call's pushes reach the store before its `Done` is read.
                let Some(connection) = self.connection.upgrade() else {
                    return;
                };
                let refused = match &self.links.store {
                    Some(store) => store
                        .push_action(super::proxy::proxy_action(
                            Arc::clone(&connection),
                            action,
                            label,
                            source_tool_name,
                            details,
                            has_reject,
                        ))
                        .err()
                        .map(|error| error.message().to_owned()),
                    None => Some(crate::messages::STORE_UNAVAILABLE.to_owned()),
                };
                connection.send(HostMessage::PushAnswered { action, refused });
            }
            ChildMessage::Log { level, message } => {
                plugin_log(self.links.log.as_ref(), &self.path, level, &message)
            }
            ChildMessage::Service {
                call,
                request,
                body,
            } => self.serve(call, request, body),
            ChildMessage::KeepAlive { keep } => {
                shared.keep_alive.store(keep, Ordering::SeqCst);
                // Let go: the idle time counts from now.
                if let Some(connection) = self.connection.upgrade() {
                    connection.touch();
                }
            }
            ChildMessage::Hello { .. }
            | ChildMessage::LoadFailed { .. }
            | ChildMessage::Probing
            | ChildMessage::Probed { .. } => {}
        }
    }
}

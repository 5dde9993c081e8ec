//! Inside the plugin child: the host services of a call, forwarded to the host over the
//! socket ([`ChildMessage::Service`]) and answered by it ([`HostMessage::ServiceReply`]). The
//! host applies the rules (defaults without a user, one question at a time, answers checked
//! against their question); this side only carries requests and replies, so the plugin's
//! sandbox stays as it is: the child never opens a terminal or a connection of its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use xcsh_plugin_api::host::{
    CompletionRequest, HostFacts, HostReply, HostRequest, ModelInfo, NotifyLevel,
};

use super::super::protocol::ChildMessage;
use super::Outgoing;
use crate::services::HostServices;
use crate::store::BoxFuture;
use crate::sync::lock;
use crate::tool::ToolError;

/// The requests sent to the host and not yet answered, by number.
#[derive(Default)]
pub(super) struct Requests {
    waiting: Mutex<HashMap<u64, oneshot::Sender<Result<HostReply, String>>>>,
    next: AtomicU64,
}

impl Requests {
    /// The host answered `request`.
    pub(super) fn answered(&self, request: u64, reply: Result<HostReply, String>) {
        if let Some(waiting) = lock(&self.waiting).remove(&request) {
            let _ = waiting.send(reply);
        }
    }
}

/// The host's services as one call in the child sees them.
pub(super) struct RemoteHost {
    pub(super) call: u64,
    pub(super) facts: HostFacts,
    pub(super) outgoing: Outgoing,
    pub(super) requests: Arc<Requests>,
}

/// Takes a request off the waiting list when its caller stops waiting.
struct Forget<'a>(&'a Requests, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.0.waiting).remove(&self.1);
    }
}

impl RemoteHost {
    /// Send `body` to the host and wait for its reply.
    fn send(&self, body: HostRequest) -> BoxFuture<Result<HostReply, ToolError>> {
        let request = self.requests.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (sender, reply) = oneshot::channel();
        lock(&self.requests.waiting).insert(request, sender);
        let sent = self.outgoing.send(&ChildMessage::Service {
            call: self.call,
            request,
            body,
        });
        let requests = Arc::clone(&self.requests);
        Box::pin(async move {
            let _forget = Forget(&requests, request);
            if !sent {
                return Err(ToolError::new("the host is gone"));
            }
            match reply.await {
                Ok(reply) => reply.map_err(ToolError::new),
                Err(_) => Err(ToolError::new("the host is gone")),
            }
        })
    }

    /// Send `body` and let its acknowledgement go.
    fn tell(&self, body: HostRequest) {
        drop(self.send(body));
    }
}

impl HostServices for RemoteHost {
    fn has_ui(&self) -> bool {
        self.facts.has_ui
    }

    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, ToolError>> {
        self.send(question)
    }

    fn notify(&self, message: &str, level: NotifyLevel) {
        self.tell(HostRequest::Notify {
            message: message.to_owned(),
            level,
        });
    }

    fn set_status(&self, key: &str, text: Option<&str>) {
        self.tell(HostRequest::SetStatus {
            key: key.to_owned(),
            text: text.map(str::to_owned),
        });
    }

    fn model(&self) -> Option<ModelInfo> {
        self.facts.model.clone()
    }

    fn can_complete(&self) -> bool {
        self.facts.can_complete
    }

    fn complete(&self, request: CompletionRequest) -> BoxFuture<Result<String, ToolError>> {
        let reply = self.send(HostRequest::Complete { request });
        Box::pin(async move {
            match reply.await? {
                HostReply::Completion { text, .. } => Ok(text),
                other => Err(ToolError::new(format!(
                    "the host answered a completion with {other:?}"
                ))),
            }
        })
    }
}

//! Inside the plugin child: the host services of a call, forwarded to the host over the
//! socket ([`ChildMessage::Service`]) and answered by it ([`HostMessage::ServiceReply`]). The
//! host applies the rules (defaults without a user, one question at a time, answers checked
//! against their question); this side only carries requests and replies
//! ([`crate::forward::ForwardedHost`] over the socket), so the plugin's sandbox stays as it
//! is: the child never opens a terminal or a connection of its own.
//!
//! [`HostMessage::ServiceReply`]: super::super::protocol::HostMessage::ServiceReply

use xcsh_plugin_api::host::HostRequest;

use super::super::protocol::{ChildMessage, FrameWriter};
use super::ChildWrite;
use crate::forward::HostLink;

impl HostLink for FrameWriter<ChildWrite> {
    const PEER: &'static str = "the host";

    fn send(&self, call: u64, request: u64, body: HostRequest) -> Result<(), String> {
        let sent = FrameWriter::send(
            self,
            &ChildMessage::Service {
                call,
                request,
                body,
            },
        );
        if sent {
            Ok(())
        } else {
            Err(format!("{} is gone", Self::PEER))
        }
    }
}

//! The calls an MCP server is running, so that a client that goes away never has an apply cut
//! short by the server's exit: when the client closes its input, every call still running is
//! cancelled at once (an apply undoes what it had done), and the server waits, for a bounded
//! time, until each has ended before it ends the session and exits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use xcsh_loader_core::CancelToken;
use xcsh_plugin_api::__private::lock;

/// The running calls, each with its cancellation.
#[derive(Default)]
pub(super) struct InFlight {
    calls: Mutex<HashMap<u64, CancelToken>>,
    next: AtomicU64,
    /// Set once the client is gone: a call that starts later is cancelled at once.
    closing: AtomicBool,
    /// Notified whenever a call ends.
    ended: Notify,
}

/// One running call; it leaves [`InFlight`] when dropped (its handler ended or was dropped).
pub(super) struct Running {
    in_flight: Arc<InFlight>,
    number: u64,
    /// The call's cancellation, fired by the client's `notifications/cancelled` or by
    /// [`InFlight::cancel_all`].
    pub(super) cancel: CancelToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.in_flight.calls).remove(&self.number);
        self.in_flight.ended.notify_waiters();
    }
}

impl InFlight {
    /// Register a call that starts now.
    pub(super) fn start(self: &Arc<Self>) -> Running {
        self.start_with(CancelToken::new())
    }

    /// Register a call that starts now, cancelled by `cancel` (and by `cancel_all`).
    pub(super) fn start_with(self: &Arc<Self>, cancel: CancelToken) -> Running {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).insert(number, cancel.clone());
        // Checked after the insert: `cancel_all` sets the flag before it cancels what it finds.
        if self.closing.load(Ordering::SeqCst) {
            cancel.cancel();
        }
        Running {
            in_flight: Arc::clone(self),
            number,
            cancel,
        }
    }

    /// The client is gone: cancel every running call, and any that starts from now on.
    pub(super) fn cancel_all(&self) {
        self.closing.store(true, Ordering::SeqCst);
        for cancel in lock(&self.calls).values() {
            cancel.cancel();
        }
    }

    /// Whether [`InFlight::cancel_all`] ran.
    pub(super) fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Wait until no call runs, for at most `limit`; whether none does.
    pub(super) async fn all_ended(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, async {
            loop {
                // Created before the check: it gets any `notify_waiters` from then on.
                let ended = self.ended.notified();
                if lock(&self.calls).is_empty() {
                    return;
                }
                ended.await;
            }
        })
        .await
        .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn closing_cancels_running_and_later_calls_and_waits_until_they_ended() {
        let in_flight = Arc::new(InFlight::default());
        let first = in_flight.start();
        assert!(!first.cancel.is_cancelled());
        assert!(!in_flight.all_ended(Duration::from_millis(10)).await);
        in_flight.cancel_all();
        assert!(first.cancel.is_cancelled());
        let later = in_flight.start();
        assert!(later.cancel.is_cancelled());
        let waiter = tokio::spawn({
            let in_flight = Arc::clone(&in_flight);
            async move { in_flight.all_ended(Duration::from_secs(10)).await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one call still runs");
        drop(later);
        assert!(waiter.await.unwrap_or(false));
    }
}

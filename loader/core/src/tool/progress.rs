//! Holding a chatty tool's partial results (`ctx.update`) to a pace a person or a client can
//! follow: the command line's `progress:` lines and the MCP server's
//! `notifications/progress` and the Node-API binding's `onUpdate` all go through one
//! [`ProgressThrottle`]; the MCP server and the binding run it on a task of its own
//! ([`PacedUpdates`]).

use std::time::{Duration, Instant};

use xcsh_plugin_api::AgentToolResult;

use super::UpdateSink;

/// The shortest time between two partial results shown for one call.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// At most one partial result per [`PROGRESS_INTERVAL`]: one that comes sooner is held back,
/// and a later one replaces it (only the newest matters). The held one is due once the
/// interval has passed ([`Self::due_at`], [`Self::take_due`]), and is given at the end of the
/// call in any case ([`Self::finish`]).
///
/// ```
/// use std::time::{Duration, Instant};
/// use xcsh_loader_core::tool::{ProgressThrottle, PROGRESS_INTERVAL};
///
/// let start = Instant::now();
/// let mut throttle: ProgressThrottle = ProgressThrottle::default();
/// assert_eq!(throttle.offer("1%".into(), start), Some("1%".into()));
/// assert_eq!(throttle.offer("2%".into(), start + Duration::from_millis(10)), None);
/// assert_eq!(throttle.offer("3%".into(), start + Duration::from_millis(20)), None);
/// assert_eq!(throttle.due_at(), Some(start + PROGRESS_INTERVAL));
/// assert_eq!(throttle.take_due(start + PROGRESS_INTERVAL), Some("3%".into()));
/// assert_eq!(throttle.finish(), None);
/// ```
#[derive(Debug)]
pub struct ProgressThrottle<T = String> {
    /// When the next partial result may be shown; `None` before the first.
    next_allowed: Option<Instant>,
    held: Option<T>,
}

impl<T> Default for ProgressThrottle<T> {
    fn default() -> Self {
        Self {
            next_allowed: None,
            held: None,
        }
    }
}

impl<T> ProgressThrottle<T> {
    /// A partial result arrived at `now`: what to show now, or `None` when it is held back.
    pub fn offer(&mut self, text: T, now: Instant) -> Option<T> {
        if self.next_allowed.is_some_and(|allowed| now < allowed) {
            self.held = Some(text);
            None
        } else {
            self.shown_at(now);
            Some(text)
        }
    }

    /// When the held partial result is due; `None` when nothing is held.
    pub fn due_at(&self) -> Option<Instant> {
        self.held.as_ref().and(self.next_allowed)
    }

    /// The held partial result, if it is due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Option<T> {
        if self.due_at().is_some_and(|due| now >= due) {
            let held = self.held.take();
            self.shown_at(now);
            held
        } else {
            None
        }
    }

    /// The call ended: the partial result still held back, if any.
    pub fn finish(&mut self) -> Option<T> {
        self.held.take()
    }

    fn shown_at(&mut self, now: Instant) {
        self.next_allowed = Some(now + PROGRESS_INTERVAL);
        self.held = None;
    }
}

/// One call's partial results, paced by a [`ProgressThrottle`] on a task of its own and handed
/// to `send` with their number (from 1): the newest held back goes out when it is due, or
/// when the call ends ([`PacedUpdates::finish`]). Start it inside a tokio runtime.
pub struct PacedUpdates {
    updates: tokio::sync::mpsc::UnboundedSender<Option<AgentToolResult>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for PacedUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacedUpdates").finish_non_exhaustive()
    }
}

impl PacedUpdates {
    /// Start pacing; `send` gets each partial result that is to be shown.
    pub fn start<F, Fut>(mut send: F) -> Self
    where
        F: FnMut(u32, AgentToolResult) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (updates, mut received) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut sent = 0u32;
            let mut throttle = ProgressThrottle::default();
            loop {
                let update = match throttle.due_at() {
                    Some(due) => tokio::select! {
                        update = received.recv() => update,
                        () = tokio::time::sleep_until(due.into()) => {
                            if let Some(partial) = throttle.take_due(Instant::now()) {
                                sent += 1;
                                send(sent, partial).await;
                            }
                            continue;
                        }
                    },
                    None => received.recv().await,
                };
                // `None`: the call is over (`finish`); a closed channel: the same.
                let Some(Some(partial)) = update else { break };
                if let Some(partial) = throttle.offer(partial, Instant::now()) {
                    sent += 1;
                    send(sent, partial).await;
                }
            }
            if let Some(partial) = throttle.finish() {
                send(sent + 1, partial).await;
            }
        });
        Self { updates, task }
    }

    /// What the session calls with each partial result.
    pub fn sink(&self) -> UpdateSink {
        let updates = self.updates.clone();
        std::sync::Arc::new(move |partial: AgentToolResult| {
            let _ = updates.send(Some(partial));
        })
    }

    /// The call is over: send what is held back, then stop. Updates a plugin sends later
    /// (from a task that outlived its call) go nowhere.
    pub async fn finish(self) {
        let _ = self.updates.send(None);
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn the_first_update_shows_and_the_next_within_the_interval_is_held_until_due() {
        let start = Instant::now();
        let mut throttle = ProgressThrottle::<String>::default();
        assert_eq!(throttle.due_at(), None, "nothing held");
        assert_eq!(throttle.offer("a".into(), start).as_deref(), Some("a"));
        assert_eq!(throttle.offer("b".into(), at(start, 50)), None);
        assert_eq!(throttle.take_due(at(start, 99)), None, "not yet due");
        assert_eq!(throttle.take_due(at(start, 100)).as_deref(), Some("b"));
        // Showing the held one starts a new interval.
        assert_eq!(throttle.offer("c".into(), at(start, 150)), None);
        assert_eq!(throttle.due_at(), Some(at(start, 200)));
        assert_eq!(throttle.finish().as_deref(), Some("c"));
        assert_eq!(throttle.finish(), None);
    }

    #[test]
    fn an_update_after_the_interval_shows_at_once_and_drops_what_was_held() {
        let start = Instant::now();
        let mut throttle = ProgressThrottle::<String>::default();
        throttle.offer("a".into(), start);
        assert_eq!(throttle.offer("b".into(), at(start, 10)), None);
        assert_eq!(
            throttle.offer("c".into(), at(start, 120)).as_deref(),
            Some("c")
        );
        assert_eq!(throttle.due_at(), None);
        assert_eq!(throttle.finish(), None, "b was superseded by c");
    }
}

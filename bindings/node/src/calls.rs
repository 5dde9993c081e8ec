//! Tool calls without a promise or a runtime hop of their own: the JS thread hands the call to
//! a worker thread ([`Workers`]) and returns; the worker runs it, polling the plugin's future on
//! itself; the answer comes back through one session-wide thread-safe function
//! ([`SettleFunction`]), which `index.js` turns into the settlement of the call's promise.
//!
//! Why: a napi-rs `async fn` per call costs a promise with its own thread-safe function and two
//! hops through napi-rs's tokio runtime, plus, in-process, a third to the loader's blocking
//! pool; on a 2-core machine each hop is a futex wake and a context switch of several µs, and
//! the hops were most of a call (BENCHMARKS.md, "Where the time goes"). Here a call is two
//! hand-offs: JS → worker, worker → JS.
//!
//! Under process isolation a call does not even need a worker: [`InlineTask`] polls the call on
//! the JS thread until it waits for the plugin process (validation, then writing the call's
//! frame to the socket), and then on whichever thread wakes it, the host's reader thread that
//! read the answer, which settles the promise. What remains is the socket round trip. (What
//! the loader does before a call also runs on the JS thread then: a `stat` of the plugin file,
//! and, only when the file changed since, the checks that restart its process.)
//!
//! A plugin that blocks holds only its worker (another call gets another worker), and a call
//! is answered exactly once ([`CallState::answer`]) by whoever comes first: the worker with the
//! loader's outcome, the watchdog when the session's timeout passes (a blocked plugin cannot be
//! interrupted on its own thread), or `cancel`/`close` from the JS thread. An answered call
//! still running is abandoned: its outcome is dropped when it ends.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use xcsh_loader_core::tool::CancelToken;

use crate::store::lock;

/// `(call, ok, json or message) => void`: settles call `call`'s promise in `index.js`. Weak:
/// `index.js` keeps the event loop alive while calls run.
pub(crate) type SettleFunction = ThreadsafeFunction<
    FnArgs<(u32, bool, String)>,
    (),
    FnArgs<(u32, bool, String)>,
    Status,
    false,
    true,
>;

/// One running call, as its worker, the watchdog and `cancel` see it.
pub(crate) struct CallState {
    call: u32,
    tool: String,
    answered: AtomicBool,
    pub(crate) cancel: CancelToken,
}

impl CallState {
    pub(crate) fn new(call: u32, tool: String) -> Self {
        Self {
            call,
            tool,
            answered: AtomicBool::new(false),
            cancel: CancelToken::new(),
        }
    }

    /// Settle the call's promise, unless it was settled already; `true` when this did.
    pub(crate) fn answer(&self, settle: &SettleFunction, ok: bool, text: String) -> bool {
        if self.answered.swap(true, Ordering::SeqCst) {
            return false;
        }
        settle.call(
            (self.call, ok, text).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
        true
    }

    /// Claim the answer for the JS thread (`cancel`): the message to reject with, or `None`
    /// when the call was answered already.
    pub(crate) fn claim_cancelled(&self) -> Option<String> {
        self.cancel.cancel();
        (!self.answered.swap(true, Ordering::SeqCst))
            .then(|| format!("Tool \"{}\" was cancelled", self.tool))
    }

    /// Settle the promise of a call whose answer [`CallState::claim_cancelled`] claimed.
    pub(crate) fn answer_claimed(&self, settle: &SettleFunction, message: String) {
        settle.call(
            (self.call, false, message).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }

    /// What the watchdog answers when `limit` passed: the loader's timeout text, and that the
    /// call (still blocking its worker) was abandoned.
    pub(crate) fn timed_out(&self, limit: Duration) -> String {
        format!(
            "Tool \"{}\" timed out after {}s; {}",
            self.tool,
            limit.as_secs_f64(),
            xcsh_loader_core::messages::CALL_ABANDONED
        )
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// How long an idle worker waits for a job before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// The threads calls run on: an idle one takes the next job, a new one starts when none is
/// idle (a blocked plugin keeps its thread, never another call's).
pub(crate) struct Workers {
    queue: Arc<Queue>,
}

struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

struct QueueState {
    jobs: VecDeque<Job>,
    idle: usize,
    closed: bool,
}

impl Workers {
    pub(crate) fn new() -> Self {
        Self {
            queue: Arc::new(Queue {
                state: Mutex::new(QueueState {
                    jobs: VecDeque::new(),
                    idle: 0,
                    closed: false,
                }),
                ready: Condvar::new(),
            }),
        }
    }

    /// Run `job` on a worker. `Err` when the thread for it could not be started.
    pub(crate) fn submit(&self, job: Job) -> std::io::Result<()> {
        let spawn = {
            let mut state = lock(&self.queue.state);
            state.jobs.push_back(job);
            // More jobs waiting than idle workers to take them: start one more.
            state.jobs.len() > state.idle
        };
        if spawn {
            let queue = Arc::clone(&self.queue);
            let started = std::thread::Builder::new()
                .name("xcsh-call".to_owned())
                .spawn(move || work(&queue));
            if let Err(error) = started {
                // Nobody will take it: hand the job back to the caller as an error.
                lock(&self.queue.state).jobs.pop_back();
                return Err(error);
            }
        } else {
            self.queue.ready.notify_one();
        }
        Ok(())
    }

    /// Let idle workers end; running ones end after their job.
    pub(crate) fn close(&self) {
        lock(&self.queue.state).closed = true;
        self.queue.ready.notify_all();
    }
}

fn work(queue: &Queue) {
    loop {
        let job = {
            let mut state = lock(&queue.state);
            loop {
                if let Some(job) = state.jobs.pop_front() {
                    break job;
                }
                if state.closed {
                    return;
                }
                state.idle += 1;
                let (guard, waited) = queue
                    .ready
                    .wait_timeout(state, IDLE_EXIT)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                state = guard;
                state.idle -= 1;
                if waited.timed_out() && state.jobs.is_empty() {
                    return;
                }
            }
        };
        // A job never unwinds (it catches what the loader might throw); a panic here would only
        // end this worker, and the next submit starts another.
        job();
    }
}

/// A future polled on the thread that wakes it, with no executor: first by [`InlineTask::run`]'s
/// caller, then by whoever calls its waker (for an isolated call, the host's reader thread when
/// the plugin process answered). Only for futures that never block: waiting on a plugin
/// process, the loader's bookkeeping, sending to JS.
pub(crate) struct InlineTask {
    future: Mutex<Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>>,
    /// Answers the call when polling its future panicked (the future is dropped then).
    on_panic: Box<dyn Fn(String) + Send + Sync>,
    /// Woken while another thread was polling it: that thread polls again.
    woken: AtomicBool,
    /// The runtime whose context the future's timers and tasks need.
    runtime: tokio::runtime::Handle,
}

impl InlineTask {
    pub(crate) fn spawn(
        runtime: tokio::runtime::Handle,
        future: impl std::future::Future<Output = ()> + Send + 'static,
        on_panic: impl Fn(String) + Send + Sync + 'static,
    ) {
        let task = Arc::new(Self {
            future: Mutex::new(Some(Box::pin(future))),
            on_panic: Box::new(on_panic),
            woken: AtomicBool::new(false),
            runtime,
        });
        task.run();
    }

    fn run(self: &Arc<Self>) {
        loop {
            // Someone else is polling: tell them to poll once more, and leave it to them.
            let Ok(mut slot) = self.future.try_lock() else {
                self.woken.store(true, Ordering::SeqCst);
                if self.future.try_lock().is_ok() {
                    // They finished in between and may not have seen the flag: poll here.
                    continue;
                }
                return;
            };
            self.woken.store(false, Ordering::SeqCst);
            let Some(future) = slot.as_mut() else {
                return;
            };
            let waker = std::task::Waker::from(Arc::clone(self));
            let _context = self.runtime.enter();
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                future
                    .as_mut()
                    .poll(&mut std::task::Context::from_waker(&waker))
            }));
            match polled {
                Ok(std::task::Poll::Pending) => {}
                Ok(std::task::Poll::Ready(())) => {
                    *slot = None;
                    return;
                }
                Err(payload) => {
                    *slot = None;
                    drop(slot);
                    (self.on_panic)(crate::panic_text(&*payload));
                    return;
                }
            }
            drop(slot);
            if !self.woken.swap(false, Ordering::SeqCst) {
                return;
            }
        }
    }
}

impl std::task::Wake for InlineTask {
    fn wake(self: Arc<Self>) {
        self.run();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.run();
    }
}

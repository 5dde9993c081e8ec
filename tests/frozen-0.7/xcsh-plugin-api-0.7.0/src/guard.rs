//! Running plugin code safely behind the ABI: panics become errors, tokio just works.
//!
//! Two facts shape this module:
//! - a panic that unwinds out of an abi_stable method aborts the host, and a panic inside an
//!   `async-ffi` future reaches the host as an opaque "FFI future panicked"; so every call into
//!   author code is wrapped in `catch_unwind`, including every `poll` and the future's `Drop`;
//! - a cdylib has its own copy of tokio's thread-locals, so the host's runtime is invisible to
//!   plugin code. Each plugin library therefore starts a small tokio runtime of its own on first
//!   use, and every poll of author code runs inside it: timers, `tokio::fs` and processes work
//!   without the author knowing. Polling still happens on the host's thread, so a call costs no
//!   thread hop.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use abi_stable::std_types::{RResult, RString};
use async_ffi::{FfiFuture, FutureExt as _};

use crate::PluginError;

/// The plugin library's own tokio runtime, or why it could not start.
fn runtime() -> Result<&'static tokio::runtime::Runtime, PluginError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("xcsh-plugin-rt")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the plugin's tokio runtime: {e}"))
        })
        .as_ref()
        .map_err(|message| PluginError::new(message.clone()))
}

thread_local! {
    /// Where the last panic on this thread happened, recorded by [`install_panic_hook`].
    static LAST_PANIC_LOCATION: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// Replace the default panic output of this plugin library (a cdylib has its own copy of std,
/// so this hook sees only the plugin's panics). Instead of printing a message and backtrace
/// to the host's stderr, remember where the panic happened: the caught panic becomes an error
/// result that carries the message and the location.
///
/// With `keep_previous` (the in-process test harness, where the hook is the test binary's
/// own), the previous hook still runs after recording, so a failing assertion in a test
/// prints as usual.
pub(crate) fn install_panic_hook(keep_previous: bool) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = keep_previous.then(std::panic::take_hook);
        std::panic::set_hook(Box::new(move |info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            LAST_PANIC_LOCATION.with(|last| *last.borrow_mut() = location);
            if let Some(previous) = &previous {
                previous(info);
            }
        }));
    });
}

/// The text of a caught panic: its message (what `panic!` was given), or "a panic without a
/// message" for a payload that is neither a `&str` nor a `String`.
///
/// For a plugin that joins threads of its own and wants to report their panics; the plugin's
/// tool calls need nothing like it (their panics already come back as errors). The loader, the
/// built-in tools and the Node binding use this one too.
///
/// ```
/// let caught = std::panic::catch_unwind(|| panic!("disk on fire")).unwrap_err();
/// assert_eq!(xcsh_plugin_api::panic_text(&*caught), "disk on fire");
/// ```
pub fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The message of a caught panic, with its location when the hook recorded one.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = panic_text(payload);
    match LAST_PANIC_LOCATION.with(|last| last.borrow_mut().take()) {
        Some(location) => format!("plugin panicked at {location}: {text}"),
        None => format!("plugin panicked: {text}"),
    }
}

/// Run `f`, turning a panic into a [`PluginError`].
pub(crate) fn catch<T>(f: impl FnOnce() -> Result<T, PluginError>) -> Result<T, PluginError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => Err(PluginError::new(panic_message(&*payload))),
    }
}

/// Drop `value`, swallowing (and logging to stderr) a panic from its destructor: the host may
/// drop plugin objects from inside a vtable call, where an unwinding panic would abort it.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        eprintln!(
            "xcsh plugin: {} (while dropping plugin state)",
            panic_message(&*payload)
        );
    }
}

/// A future that polls author code inside the plugin runtime and never unwinds.
struct Guarded<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F, T> Future for Guarded<F>
where
    F: Future<Output = Result<T, PluginError>>,
{
    type Output = Result<T, PluginError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let runtime = match runtime() {
            Ok(runtime) => runtime,
            Err(error) => return Poll::Ready(Err(error)),
        };
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(Err(PluginError::new("future polled after completion")));
        };
        let _context = runtime.enter();
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                if let Some(done) = self.inner.take() {
                    drop_quietly(done);
                }
                Poll::Ready(output)
            }
            Err(payload) => {
                if let Some(broken) = self.inner.take() {
                    drop_quietly(broken);
                }
                Poll::Ready(Err(PluginError::new(panic_message(&*payload))))
            }
        }
    }
}

impl<F> Drop for Guarded<F> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // Dropping may release tokio resources (timers, files): do it inside the runtime.
            match runtime() {
                Ok(runtime) => {
                    let _context = runtime.enter();
                    drop_quietly(inner);
                }
                Err(_) => drop_quietly(inner),
            }
        }
    }
}

/// Wrap author code as an FFI future that never panics across the boundary.
pub(crate) fn guard<F, T, U>(future: F, convert: fn(T) -> U) -> FfiFuture<RResult<U, RString>>
where
    F: Future<Output = Result<T, PluginError>> + Send + 'static,
    T: 'static,
    U: 'static,
{
    let guarded = Guarded {
        inner: Some(Box::pin(future)),
    };
    async move {
        match guarded.await {
            Ok(value) => RResult::ROk(convert(value)),
            Err(error) => RResult::RErr(RString::from(error.message())),
        }
    }
    .into_ffi()
}

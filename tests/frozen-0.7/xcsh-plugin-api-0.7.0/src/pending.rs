//! [`CustomToolPendingAction`]: a previewed change waiting for the model's `resolve`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RStr, RString};
use async_ffi::FfiFuture;
use serde_json::Value;

use crate::ffi::ToolContextBox;
use crate::ffi::{
    FfiOutcome, FfiPendingAction, FfiRejectOutcome, FfiToolResult, PendingActionFfi,
    PendingActionFfi_TO,
};
use crate::guard::{drop_quietly, guard};
use crate::sync::lock;
use crate::tool::ContextEnd;
use crate::{AgentToolResult, CustomToolApi, PluginError, ToolContext};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type ApplyFuture = BoxFuture<Result<AgentToolResult, PluginError>>;
type ApplyOnceFn = Box<dyn FnOnce(String, ToolContext) -> ApplyFuture + Send>;
type ApplyAgainFn = Arc<dyn Fn(String, ToolContext) -> ApplyFuture + Send + Sync>;
type RejectFn = Box<
    dyn FnOnce(String, ToolContext) -> BoxFuture<Result<Option<AgentToolResult>, PluginError>>
        + Send,
>;

/// An action's `apply`: run at most once ([`CustomToolPendingAction::new`]), or run again
/// after a failure ([`CustomToolPendingAction::retryable`]).
enum ApplyFn {
    Once(ApplyOnceFn),
    Retryable(ApplyAgainFn),
}

/// The `source_tool_name` of an action that does not set one.
pub const DEFAULT_SOURCE_TOOL_NAME: &str = "custom_tool";

/// A pending action: a label, an `apply(reason)` that commits the previewed change, and
/// optionally a `reject(reason)` that cleans up when the change is discarded.
///
/// Push it with [`crate::CustomToolApi::push_pending_action`]; the model then calls `resolve`,
/// and the host runs the callbacks. The action is *settled* by a successful `apply` or by
/// `reject`; after that neither runs again. A failed `apply` settles nothing: the `reject` is
/// kept, so a runtime that keeps a failed preview pending (xcsh's TypeScript runtime does) can
/// still discard it, and an apply made with [`CustomToolPendingAction::retryable`] may be run
/// again. The command-line host and the MCP server consume the action whatever happens (the
/// design note's `resolve`: pop, then apply or discard once).
///
/// ```
/// use xcsh_plugin_api::{AgentToolResult, CustomToolPendingAction};
///
/// let action = CustomToolPendingAction::new("Batch rename: 2 files", |reason| async move {
///     Ok(AgentToolResult::text(format!("Applied batch rename. Reason: {reason}")))
/// })
/// .with_reject(|reason| async move {
///     Ok(Some(AgentToolResult::text(format!("Discarded batch rename. Reason: {reason}"))))
/// })
/// .with_source_tool_name("batch_rename_preview");
/// assert_eq!(action.label(), "Batch rename: 2 files");
/// ```
pub struct CustomToolPendingAction {
    label: String,
    apply: ApplyFn,
    reject: Option<RejectFn>,
    details: Option<Value>,
    source_tool_name: String,
}

impl std::fmt::Debug for CustomToolPendingAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomToolPendingAction")
            .field("label", &self.label)
            .field("has_reject", &self.reject.is_some())
            .field("details", &self.details)
            .field("source_tool_name", &self.source_tool_name)
            .finish()
    }
}

impl CustomToolPendingAction {
    /// An action with a label and its `apply` callback. `reason` is informative only.
    pub fn new<F, Fut>(label: impl Into<String>, apply: F) -> Self
    where
        F: FnOnce(String) -> Fut + Send + 'static,
        Fut: Future<Output = Result<AgentToolResult, PluginError>> + Send + 'static,
    {
        Self::new_in_context(label, move |reason, _ctx| apply(reason))
    }

    /// An action whose `apply(reason, ctx)` gets the host's services, as `execute` does: ask
    /// the user (`ctx.ui()`), run a program (`ctx.exec(..)`), notify, report progress, see
    /// cancellation. `ctx` is the context of the `resolve` call that applies the action (an
    /// MCP client's, the CLI's terminal, xcsh's runtime), in every host and in a plugin
    /// process alike; it is valid while the apply runs. Since `xcsh-plugin-api` 0.7.
    ///
    /// ```
    /// use xcsh_plugin_api::{AgentToolResult, CustomToolPendingAction, ExecOptions, PluginError};
    ///
    /// let branches = vec!["old-feature".to_owned()];
    /// let action = CustomToolPendingAction::new_in_context(
    ///     "Git cleanup: delete 1 merged branch",
    ///     move |_reason, ctx| async move {
    ///         for branch in &branches {
    ///             let out = ctx.exec("git", ["branch", "-d", branch], ExecOptions::new()).await?;
    ///             if !out.success() {
    ///                 return Err(PluginError::new(out.stderr_text()));
    ///             }
    ///         }
    ///         Ok(AgentToolResult::text(format!("Deleted {} branches", branches.len())))
    ///     },
    /// );
    /// assert_eq!(action.label(), "Git cleanup: delete 1 merged branch");
    /// ```
    pub fn new_in_context<F, Fut>(label: impl Into<String>, apply: F) -> Self
    where
        F: FnOnce(String, ToolContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<AgentToolResult, PluginError>> + Send + 'static,
    {
        Self::with_apply(
            label,
            ApplyFn::Once(Box::new(move |reason, ctx| Box::pin(apply(reason, ctx)))),
        )
    }

    /// An action whose `apply` may run again after it failed: a runtime that keeps a failed
    /// preview pending lets the model fix the cause (a file restored, a lock released) and
    /// apply again. Use it when `apply` re-checks what it changes before changing anything,
    /// so that running it after a failure is safe; otherwise use [`CustomToolPendingAction::new`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use xcsh_plugin_api::{AgentToolResult, CustomToolPendingAction, PluginError};
    ///
    /// let target = Arc::new(std::path::PathBuf::from("notes.md"));
    /// let action = CustomToolPendingAction::retryable("Touch: notes.md", move |_reason| {
    ///     let target = Arc::clone(&target);
    ///     async move {
    ///         std::fs::write(&*target, "")?;
    ///         Ok::<_, PluginError>(AgentToolResult::text("touched"))
    ///     }
    /// });
    /// assert!(action.is_retryable());
    /// ```
    pub fn retryable<F, Fut>(label: impl Into<String>, apply: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, PluginError>> + Send + 'static,
    {
        Self::retryable_in_context(label, move |reason, _ctx| apply(reason))
    }

    /// [`CustomToolPendingAction::retryable`], with the host's services in each apply (see
    /// [`CustomToolPendingAction::new_in_context`]). Since `xcsh-plugin-api` 0.7.
    pub fn retryable_in_context<F, Fut>(label: impl Into<String>, apply: F) -> Self
    where
        F: Fn(String, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentToolResult, PluginError>> + Send + 'static,
    {
        Self::with_apply(
            label,
            ApplyFn::Retryable(Arc::new(move |reason, ctx| Box::pin(apply(reason, ctx)))),
        )
    }

    fn with_apply(label: impl Into<String>, apply: ApplyFn) -> Self {
        Self {
            label: label.into(),
            apply,
            reject: None,
            details: None,
            source_tool_name: DEFAULT_SOURCE_TOOL_NAME.to_owned(),
        }
    }

    /// Add a `reject` callback, run on discard; a returned result replaces the default
    /// `Discarded: {label}. Reason: {reason}` text.
    #[must_use]
    pub fn with_reject<F, Fut>(self, reject: F) -> Self
    where
        F: FnOnce(String) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Option<AgentToolResult>, PluginError>> + Send + 'static,
    {
        self.with_reject_in_context(move |reason, _ctx| reject(reason))
    }

    /// [`CustomToolPendingAction::with_reject`], with the host's services in the reject (see
    /// [`CustomToolPendingAction::new_in_context`]): say what was discarded with
    /// `ctx.ui().notify(..)`, or clean up with `ctx.exec(..)`. Since `xcsh-plugin-api` 0.7.
    #[must_use]
    pub fn with_reject_in_context<F, Fut>(mut self, reject: F) -> Self
    where
        F: FnOnce(String, ToolContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Option<AgentToolResult>, PluginError>> + Send + 'static,
    {
        self.reject = Some(Box::new(move |reason, ctx| Box::pin(reject(reason, ctx))));
        self
    }

    /// Attach arbitrary JSON details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Name the tool that produced the action (default [`DEFAULT_SOURCE_TOOL_NAME`]).
    #[must_use]
    pub fn with_source_tool_name(mut self, name: impl Into<String>) -> Self {
        self.source_tool_name = name.into();
        self
    }

    /// The label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The source tool name.
    pub fn source_tool_name(&self) -> &str {
        &self.source_tool_name
    }

    /// Whether its `apply` may run again after a failure ([`CustomToolPendingAction::retryable`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self.apply, ApplyFn::Retryable(_))
    }

    pub(crate) fn into_ffi(self, api: CustomToolApi) -> FfiPendingAction {
        let callbacks = Callbacks {
            api,
            label: self.label,
            details_json: self.details.map(|details| details.to_string()),
            source_tool_name: self.source_tool_name,
            apply: Arc::new(Mutex::new(Some(self.apply))),
            reject: Arc::new(Mutex::new(self.reject)),
        };
        PendingActionFfi_TO::from_value(callbacks, TD_Opaque)
    }
}

/// The plugin-side half of a pending action's vtable: its description and callbacks.
///
/// A slot is emptied when its callback can no longer run: `apply` when a one-shot apply
/// started, both when the action settled (a successful apply, or a reject).
struct Callbacks {
    /// The host's services, handed to each callback's [`ToolContext`].
    api: CustomToolApi,
    label: String,
    details_json: Option<String>,
    source_tool_name: String,
    /// Both slots are shared with a running apply, which empties them when it succeeds.
    apply: Arc<Mutex<Option<ApplyFn>>>,
    reject: Arc<Mutex<Option<RejectFn>>>,
}

impl Drop for Callbacks {
    fn drop(&mut self) {
        // Unresolved callbacks (a cleared store, an ended session) are dropped by the host;
        // what they captured must not unwind into it.
        drop_quietly(take(&self.apply));
        drop_quietly(take(&self.reject));
    }
}

/// Take the callback out of its slot, so it runs at most once even if a host misbehaves.
fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    lock(slot).take()
}

fn already_resolved<T: 'static>() -> FfiFuture<abi_stable::std_types::RResult<T, RString>> {
    guard(
        async { Err::<T, _>(PluginError::new("pending action was already resolved")) },
        |v| v,
    )
}

impl PendingActionFfi for Callbacks {
    fn label(&self) -> RStr<'_> {
        self.label.as_str().into()
    }

    fn details_json(&self) -> ROption<RString> {
        self.details_json.as_deref().map(RString::from).into()
    }

    fn source_tool_name(&self) -> RStr<'_> {
        self.source_tool_name.as_str().into()
    }

    fn apply(&self, reason: RString) -> FfiFuture<FfiOutcome> {
        let (ctx, end) = ToolContext::without_host(self.api.clone(), self.owner("apply"));
        self.run_apply(reason, ctx, end)
    }

    fn apply_in(&self, reason: RString, ctx: ToolContextBox) -> FfiFuture<FfiOutcome> {
        let (ctx, end) = ToolContext::new(ctx, self.api.clone(), self.owner("apply"));
        self.run_apply(reason, ctx, end)
    }

    fn has_reject(&self) -> bool {
        lock(&self.reject).is_some()
    }

    fn reject(&self, reason: RString) -> FfiFuture<FfiRejectOutcome> {
        let (ctx, end) = ToolContext::without_host(self.api.clone(), self.owner("reject"));
        self.run_reject(reason, ctx, end)
    }

    fn reject_in(&self, reason: RString, ctx: ToolContextBox) -> FfiFuture<FfiRejectOutcome> {
        let (ctx, end) = ToolContext::new(ctx, self.api.clone(), self.owner("reject"));
        self.run_reject(reason, ctx, end)
    }

    fn can_apply(&self) -> bool {
        lock(&self.apply).is_some()
    }
}

impl Callbacks {
    /// What a callback's context belongs to, for the error of a context used after it.
    fn owner(&self, callback: &str) -> String {
        format!("the {callback} of \"{}\"", self.label)
    }

    /// Run the apply with `ctx`, which `end` ends when the apply returns or is dropped.
    fn run_apply(
        &self,
        reason: RString,
        ctx: ToolContext,
        end: ContextEnd,
    ) -> FfiFuture<FfiOutcome> {
        let future = {
            let mut slot = lock(&self.apply);
            match slot.take() {
                None => return already_resolved(),
                Some(ApplyFn::Once(apply)) => apply(reason.into_string(), ctx),
                Some(ApplyFn::Retryable(apply)) => {
                    let future = apply(reason.into_string(), ctx);
                    *slot = Some(ApplyFn::Retryable(apply));
                    future
                }
            }
        };
        let (apply, reject) = (Arc::clone(&self.apply), Arc::clone(&self.reject));
        guard(
            async move {
                let _end = end;
                let result = future.await;
                if result.is_ok() {
                    // Settled: neither callback may run again.
                    drop_quietly(take(&apply));
                    drop_quietly(take(&reject));
                }
                result
            },
            FfiToolResult::from,
        )
    }

    /// Run the reject with `ctx`, which `end` ends when the reject returns or is dropped.
    fn run_reject(
        &self,
        reason: RString,
        ctx: ToolContext,
        end: ContextEnd,
    ) -> FfiFuture<FfiRejectOutcome> {
        drop_quietly(take(&self.apply));
        let Some(reject) = take(&self.reject) else {
            return guard(async { Ok(None) }, |_: Option<AgentToolResult>| {
                ROption::RNone
            });
        };
        guard(
            async move {
                let _end = end;
                reject(reason.into_string(), ctx).await
            },
            |result| ROption::from(result.map(FfiToolResult::from)),
        )
    }
}

//! [`CustomToolPendingAction`]: a previewed change waiting for the model's `resolve`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RStr, RString};
use async_ffi::FfiFuture;
use serde_json::Value;

use crate::ffi::{
    FfiOutcome, FfiPendingAction, FfiRejectOutcome, FfiToolResult, PendingActionFfi,
    PendingActionFfi_TO,
};
use crate::guard::{drop_quietly, guard};
use crate::{AgentToolResult, PluginError};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type ApplyFn = Box<dyn FnOnce(String) -> BoxFuture<Result<AgentToolResult, PluginError>> + Send>;
type RejectFn =
    Box<dyn FnOnce(String) -> BoxFuture<Result<Option<AgentToolResult>, PluginError>> + Send>;

/// The `source_tool_name` of an action that does not set one.
pub const DEFAULT_SOURCE_TOOL_NAME: &str = "custom_tool";

/// A pending action: a label, an `apply(reason)` that commits the previewed change, and
/// optionally a `reject(reason)` that cleans up when the change is discarded.
///
/// Push it with [`crate::CustomToolApi::push_pending_action`]; the model then calls `resolve`,
/// and the host runs exactly one of the two callbacks, once.
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
        Self {
            label: label.into(),
            apply: Box::new(move |reason| Box::pin(apply(reason))),
            reject: None,
            details: None,
            source_tool_name: DEFAULT_SOURCE_TOOL_NAME.to_owned(),
        }
    }

    /// Add a `reject` callback, run on discard; a returned result replaces the default
    /// `Discarded: {label}. Reason: {reason}` text.
    #[must_use]
    pub fn with_reject<F, Fut>(mut self, reject: F) -> Self
    where
        F: FnOnce(String) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Option<AgentToolResult>, PluginError>> + Send + 'static,
    {
        self.reject = Some(Box::new(move |reason| Box::pin(reject(reason))));
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

    pub(crate) fn into_ffi(self) -> FfiPendingAction {
        let callbacks = Callbacks {
            label: self.label,
            details_json: self.details.map(|details| details.to_string()),
            source_tool_name: self.source_tool_name,
            apply: Mutex::new(Some(self.apply)),
            reject: Mutex::new(self.reject),
        };
        PendingActionFfi_TO::from_value(callbacks, TD_Opaque)
    }
}

/// The plugin-side half of a pending action's vtable: its description and callbacks.
struct Callbacks {
    label: String,
    details_json: Option<String>,
    source_tool_name: String,
    apply: Mutex<Option<ApplyFn>>,
    reject: Mutex<Option<RejectFn>>,
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
    match slot.lock() {
        Ok(mut guard) => guard.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    }
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
        let Some(apply) = take(&self.apply) else {
            return already_resolved();
        };
        take(&self.reject);
        guard(
            async move { apply(reason.into_string()).await },
            FfiToolResult::from,
        )
    }

    fn has_reject(&self) -> bool {
        match self.reject.lock() {
            Ok(guard) => guard.is_some(),
            Err(poisoned) => poisoned.into_inner().is_some(),
        }
    }

    fn reject(&self, reason: RString) -> FfiFuture<FfiRejectOutcome> {
        take(&self.apply);
        let Some(reject) = take(&self.reject) else {
            return guard(async { Ok(None) }, |_: Option<AgentToolResult>| {
                ROption::RNone
            });
        };
        guard(
            async move { reject(reason.into_string()).await },
            |result| ROption::from(result.map(FfiToolResult::from)),
        )
    }
}

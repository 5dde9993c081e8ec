//! The typed front of the host services (docs/guide/src/ask.md): [`Ui`] asks the user, and
//! [`ToolContext::model`] / [`ToolContext::complete`] reach the session's model. Each becomes
//! one [`HostRequest`] through the call's context; where no one can answer, the TypeScript
//! runtime's defaults hold (`confirm` false, `select`/`input` none, a form cancelled) without
//! asking the host at all.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::host::{
    CompletionRequest, FormAction, HostFacts, HostReply, HostRequest, ModelInfo, NotifyLevel,
    NO_MODEL,
};
use crate::{PluginError, ToolContext};

/// Asks the call's user: `ctx.ui()`.
///
/// ```
/// use xcsh_plugin_api::*;
///
/// #[derive(Default)]
/// struct Clean;
///
/// impl CustomTool for Clean {
///     type Params = Value;
///     fn name(&self) -> &str { "clean" }
///     fn label(&self) -> &str { "Clean" }
///     fn description(&self) -> &str { "Deletes the build directory" }
///     fn parameters_schema(&self) -> Value { json!({"type": "object"}) }
///     async fn execute(&self, _: String, _: Value, ctx: ToolContext)
///         -> Result<AgentToolResult, PluginError> {
///         if !ctx.ui().confirm("Clean", "Delete target/?").await? {
///             return Ok(AgentToolResult::text("Left target/ as it is."));
///         }
///         Ok(AgentToolResult::text("Deleted target/."))
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Ui<'a> {
    ctx: &'a ToolContext,
}

/// How a user answered a [`Ui::form`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormAnswer<T> {
    /// The user submitted these values.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the form, or no one can answer.
    Cancel,
}

impl<'a> Ui<'a> {
    pub(crate) fn new(ctx: &'a ToolContext) -> Self {
        Self { ctx }
    }

    /// Whether someone can answer questions now. `false`: every question answers its default
    /// at once.
    pub fn has_ui(&self) -> bool {
        self.ctx.facts().has_ui
    }

    /// Ask a yes/no question; `false` when no one can answer.
    ///
    /// # Errors
    /// The call was cancelled (the question is withdrawn), or the host failed to ask.
    pub async fn confirm(
        &self,
        title: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<bool, PluginError> {
        self.ctx.check_live()?;
        if !self.has_ui() {
            return Ok(false);
        }
        let request = HostRequest::Confirm {
            title: title.into(),
            message: message.into(),
        };
        match self.ctx.host_request(request).await? {
            HostReply::Confirmed { yes } => Ok(yes),
            other => Err(unexpected("confirm", &other)),
        }
    }

    /// Ask for one of `options`; `None` when the user dismissed it or no one can answer.
    ///
    /// # Errors
    /// No options, or the same option twice; the call was cancelled; the host failed.
    pub async fn select<S: AsRef<str>>(
        &self,
        title: impl Into<String>,
        options: &[S],
    ) -> Result<Option<String>, PluginError> {
        let options: Vec<String> = options.iter().map(|o| o.as_ref().to_owned()).collect();
        if options.is_empty() {
            return Err(PluginError::new("select needs at least one option"));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = options.iter().find(|o| !seen.insert(o.as_str())) {
            return Err(PluginError::new(format!(
                "select was given the option \"{twice}\" twice"
            )));
        }
        self.ctx.check_live()?;
        if !self.has_ui() {
            return Ok(None);
        }
        let request = HostRequest::Select {
            title: title.into(),
            options,
        };
        match self.ctx.host_request(request).await? {
            HostReply::Chosen { value } => Ok(value),
            other => Err(unexpected("select", &other)),
        }
    }

    /// Ask for a line of text; `None` when the user dismissed it or no one can answer.
    ///
    /// # Errors
    /// The call was cancelled, or the host failed.
    pub async fn input(
        &self,
        title: impl Into<String>,
        placeholder: Option<&str>,
    ) -> Result<Option<String>, PluginError> {
        self.ctx.check_live()?;
        if !self.has_ui() {
            return Ok(None);
        }
        let request = HostRequest::Input {
            title: title.into(),
            placeholder: placeholder.map(str::to_owned),
        };
        match self.ctx.host_request(request).await? {
            HostReply::Chosen { value } => Ok(value),
            other => Err(unexpected("input", &other)),
        }
    }

    /// Ask for a whole struct in one go (see [`form_schema`](crate::form_schema) for the
    /// fields a form can hold). [`FormAnswer::Cancel`] when no one can answer.
    ///
    /// # Errors
    /// `T` has a field a form cannot ask (named in the message), checked before anything is
    /// asked; the call was cancelled; the host failed or sent values `T` refuses.
    pub async fn form<T: DeserializeOwned + JsonSchema>(
        &self,
        message: impl Into<String>,
    ) -> Result<FormAnswer<T>, PluginError> {
        let schema = crate::form::form_schema::<T>()?;
        self.ctx.check_live()?;
        if !self.has_ui() {
            return Ok(FormAnswer::Cancel);
        }
        let request = HostRequest::Form {
            message: message.into(),
            schema,
            order: crate::form::field_order::<T>(),
        };
        match self.ctx.host_request(request).await? {
            HostReply::Form {
                action: FormAction::Accept,
                content,
            } => {
                let content = content.unwrap_or(serde_json::Value::Null);
                serde_json::from_value(content)
                    .map(FormAnswer::Accept)
                    .map_err(|e| PluginError::new(format!("the form's answer does not fit: {e}")))
            }
            HostReply::Form {
                action: FormAction::Decline,
                ..
            } => Ok(FormAnswer::Decline),
            HostReply::Form { .. } => Ok(FormAnswer::Cancel),
            other => Err(unexpected("form", &other)),
        }
    }

    /// Tell the user something (the host's log where no one is watching).
    ///
    /// # Errors
    /// The call was cancelled, or the host failed.
    pub async fn notify(
        &self,
        message: impl Into<String>,
        level: NotifyLevel,
    ) -> Result<(), PluginError> {
        let request = HostRequest::Notify {
            message: message.into(),
            level,
        };
        self.ctx.host_request(request).await.map(drop)
    }

    /// Show `text` in the status line `key`, or clear it (`None`).
    ///
    /// # Errors
    /// The call was cancelled, or the host failed.
    pub async fn set_status(
        &self,
        key: impl Into<String>,
        text: Option<&str>,
    ) -> Result<(), PluginError> {
        let request = HostRequest::SetStatus {
            key: key.into(),
            text: text.map(str::to_owned),
        };
        self.ctx.host_request(request).await.map(drop)
    }
}

impl ToolContext {
    /// Ask the user (see [`Ui`]).
    pub fn ui(&self) -> Ui<'_> {
        Ui::new(self)
    }

    /// The session's model, when the host knows it.
    pub fn model(&self) -> Option<ModelInfo> {
        self.facts().model.clone()
    }

    /// Ask the session's model; its text.
    ///
    /// # Errors
    /// `No model available to plugins in this host.` where there is none; the call was
    /// cancelled; the model failed.
    pub async fn complete(
        &self,
        request: impl Into<CompletionRequest>,
    ) -> Result<String, PluginError> {
        let request = request.into();
        if request.messages.is_empty() {
            return Err(PluginError::new("a completion needs at least one message"));
        }
        if !self.facts().can_complete {
            return Err(PluginError::new(NO_MODEL));
        }
        match self.host_request(HostRequest::Complete { request }).await? {
            HostReply::Completion { text, .. } => Ok(text),
            other => Err(unexpected("complete", &other)),
        }
    }

    /// What the host can do for this call (read once).
    pub(crate) fn facts(&self) -> &HostFacts {
        self.facts.get_or_init(|| {
            self.host
                .host_facts()
                .into_option()
                .and_then(|json| serde_json::from_str(json.as_str()).ok())
                .unwrap_or_default()
        })
    }

    /// One request to the host, its reply.
    pub(crate) async fn host_request(
        &self,
        request: HostRequest,
    ) -> Result<HostReply, PluginError> {
        self.check_live()?;
        if self.is_cancelled() {
            return Err(PluginError::new(format!(
                "the call was cancelled; its {} was not sent",
                request.service()
            )));
        }
        let json = serde_json::to_string(&request)
            .map_err(|e| PluginError::new(format!("could not encode the request: {e}")))?;
        let reply = self
            .host
            .host_request(json.into())
            .await
            .into_result()
            .map_err(|message| PluginError::new(message.into_string()))?;
        serde_json::from_str(reply.as_str())
            .map_err(|e| PluginError::new(format!("the host's reply is not understood: {e}")))
    }
}

fn unexpected(service: &str, reply: &HostReply) -> PluginError {
    PluginError::new(format!(
        "the host answered a {service} with {reply:?}, not its answer"
    ))
}

//! Scripted host services for [`PluginTest`](super::PluginTest): the answers a test gives to
//! its tools' questions and completions, in order, and a record of everything they asked.
//! Answers are checked against their question as a host checks them
//! ([`check_reply`](crate::checks::check_reply)), so a test cannot hand a tool what no host
//! would.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

use crate::host::{FormAction, HostFacts, HostReply, HostRequest, ModelInfo};

/// One scripted answer, consumed by the next question (or completion) a tool sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Answer a `confirm`.
    Confirm(bool),
    /// Answer a `select` or an `input` (`None`: dismissed).
    Choose(Option<String>),
    /// Accept a form with these values.
    FormAccept(Value),
    /// Decline a form.
    FormDecline,
    /// Cancel a form.
    FormCancel,
    /// Answer a `complete` with this text.
    Completion(String),
}

impl Answer {
    /// `Choose(Some(value))`.
    pub fn choose(value: impl Into<String>) -> Self {
        Self::Choose(Some(value.into()))
    }

    fn into_reply(self) -> HostReply {
        match self {
            Answer::Confirm(yes) => HostReply::Confirmed { yes },
            Answer::Choose(value) => HostReply::Chosen { value },
            Answer::FormAccept(content) => HostReply::Form {
                action: FormAction::Accept,
                content: Some(content),
            },
            Answer::FormDecline => HostReply::Form {
                action: FormAction::Decline,
                content: None,
            },
            Answer::FormCancel => HostReply::Form {
                action: FormAction::Cancel,
                content: None,
            },
            Answer::Completion(text) => HostReply::Completion { text, model: None },
        }
    }
}

/// What the harness's host offers: a user (when answers were scripted), a model (when one
/// was given), and the record of requests.
#[derive(Default)]
pub(super) struct ScriptedHost {
    pub(super) has_ui: bool,
    pub(super) model: Option<ModelInfo>,
    /// What programs answer, when the test scripted them (`with_programs`).
    pub(super) programs: Option<Box<ProgramScript>>,
    answers: Mutex<VecDeque<Answer>>,
    asked: Mutex<Vec<HostRequest>>,
}

/// A test's stand-in for the programs its tools run: what each `exec` gets back, or the error
/// it fails with.
pub(super) type ProgramScript =
    dyn Fn(&crate::ExecRequest) -> Result<crate::ExecOutput, String> + Send + Sync;

impl std::fmt::Debug for ScriptedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedHost")
            .field("has_ui", &self.has_ui)
            .field("model", &self.model)
            .field("programs", &self.programs.is_some())
            .finish_non_exhaustive()
    }
}

impl ScriptedHost {
    pub(super) fn script(&mut self, answers: impl IntoIterator<Item = Answer>) {
        super::lock(&self.answers).extend(answers);
    }

    pub(super) fn facts(&self) -> HostFacts {
        HostFacts {
            has_ui: self.has_ui,
            model: self.model.clone(),
            can_complete: self.model.is_some(),
            writable: None,
            runs_programs: self.programs.is_some(),
        }
    }

    pub(super) fn asked(&self) -> Vec<HostRequest> {
        super::lock(&self.asked).clone()
    }

    /// Answer one request, as a host would: notifications are taken, questions get the next
    /// scripted answer (checked against the question), and a host without a user or model
    /// refuses what needs one.
    pub(super) fn answer(&self, request_json: &str) -> Result<HostReply, String> {
        let request: HostRequest = serde_json::from_str(request_json)
            .map_err(|e| format!("PluginTest: unreadable request: {e}"))?;
        super::lock(&self.asked).push(request.clone());
        match &request {
            HostRequest::Exec { request } => {
                let Some(script) = &self.programs else {
                    return Err("PluginTest: an exec reached the host without with_programs".into());
                };
                return script(request).map(|output| HostReply::Exec { output });
            }
            HostRequest::Notify { .. } | HostRequest::SetStatus { .. } => {
                return Ok(HostReply::Done)
            }
            HostRequest::Complete { .. } if self.model.is_none() => {
                return Err(crate::NO_MODEL.to_owned())
            }
            _ if request.is_question() && !self.has_ui => {
                return Err(format!(
                    "PluginTest: the tool asked a {} although has_ui() is false",
                    request.service()
                ))
            }
            _ => {}
        }
        let Some(answer) = super::lock(&self.answers).pop_front() else {
            return Err(format!(
                "PluginTest: the tool sent {:?} and no scripted answer is left (script one with with_ui or with_model)",
                request
            ));
        };
        let mut reply = answer.into_reply();
        if let (HostReply::Completion { model, .. }, Some(info)) = (&mut reply, &self.model) {
            *model = Some(info.id.clone());
        }
        crate::checks::check_reply(&request, &reply)?;
        Ok(reply)
    }
}

//! The terminal as a plugin's user (docs/guide/src/ask.md): `call` and `demo` answer a plugin's
//! questions on the terminal, through the `inquire` crate (prompts that say how they ended: a key's
//! answer, `Esc`, or `Ctrl-C`, each as its own outcome, which is what a withdrawn question and a
//! cancelled call need; the other well-kept crate, `dialoguer`, reports `Ctrl-C` as an I/O error,
//! or not at all).
//!
//! - `Esc` dismisses a question: its default answer (`confirm` no, `select`/`input` none, a
//!   form cancelled);
//! - `Ctrl-C` withdraws the question and cancels the call, as `SIGINT` does when no question
//!   is open (the prompt holds the terminal in raw mode, so `Ctrl-C` reaches it as a key);
//! - a form is asked one field at a time (a confirm for a boolean, a choice for an enum,
//!   several for a list of them, text or a number otherwise, each with its default), then
//!   "Submit?": no declines it;
//! - notifications and status lines go to stderr.
//!
//! Used only when stdin and stderr are terminals and `--no-input` was not given; otherwise no
//! one can answer and the plugins' questions get their defaults.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use inquire::InquireError;
use serde_json::{Map, Value};
use xcsh_loader::render::sanitize;
use xcsh_loader::services::{
    form_fields, FieldInput, FieldOption, FormAction, FormField, HostReply, HostRequest,
    HostServices, NotifyLevel,
};
use xcsh_loader::store::BoxFuture;
use xcsh_loader::PluginError;

/// Called when the user presses `Ctrl-C` at a question: cancels the call, as `SIGINT` would.
pub type OnInterrupt = Arc<dyn Fn() + Send + Sync>;

/// The terminal's answers to plugins' questions.
pub struct TerminalUi {
    on_interrupt: OnInterrupt,
    /// Prompts still on screen (a question whose call gave up keeps its thread until a key).
    open: Arc<AtomicUsize>,
}

impl TerminalUi {
    /// The terminal's user, when there is one to ask: stdin and stderr are terminals and
    /// `no_input` is false.
    pub fn if_interactive(no_input: bool, on_interrupt: OnInterrupt) -> Option<Arc<Self>> {
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        (interactive && !no_input).then(|| {
            Arc::new(Self {
                on_interrupt,
                open: Arc::default(),
            })
        })
    }

    /// Put the terminal back as it was if a prompt was abandoned on screen (its call ended
    /// while it waited for a key): the process is about to exit.
    pub fn restore_terminal(&self) {
        if self.open.load(Ordering::SeqCst) > 0 {
            let _ = crossterm::terminal::disable_raw_mode();
            eprintln!();
        }
    }
}

/// How one prompt ended.
enum Asked<T> {
    Answer(T),
    /// `Esc`.
    Dismissed,
}

/// One prompt's outcome, `Ctrl-C` as an error of its own.
fn asked<T>(result: Result<T, InquireError>) -> Result<Asked<T>, Interrupted> {
    match result {
        Ok(answer) => Ok(Asked::Answer(answer)),
        Err(InquireError::OperationInterrupted) => Err(Interrupted::ByUser),
        Err(InquireError::OperationCanceled) => Ok(Asked::Dismissed),
        Err(other) => Err(Interrupted::Failed(other.to_string())),
    }
}

enum Interrupted {
    ByUser,
    Failed(String),
}

/// Ask `question` on the terminal (blocking).
fn ask_blocking(question: &HostRequest) -> Result<HostReply, Interrupted> {
    Ok(match question {
        HostRequest::Confirm { title, message } => {
            let prompt = format!("{}: {}", sanitize(title), sanitize(message));
            let yes = inquire::Confirm::new(&prompt).with_default(false).prompt();
            match asked(yes)? {
                Asked::Answer(yes) => HostReply::Confirmed { yes },
                Asked::Dismissed => HostReply::Confirmed { yes: false },
            }
        }
        HostRequest::Select { title, options } => {
            let shown: Vec<String> = options.iter().map(|o| sanitize(o)).collect();
            let chosen = inquire::Select::new(&sanitize(title), shown.clone()).raw_prompt();
            match asked(chosen)? {
                Asked::Answer(chosen) => HostReply::Chosen {
                    value: options.get(chosen.index).cloned(),
                },
                Asked::Dismissed => HostReply::Chosen { value: None },
            }
        }
        HostRequest::Input { title, placeholder } => {
            let title = sanitize(title);
            let placeholder = placeholder.as_deref().map(sanitize);
            let mut text = inquire::Text::new(&title);
            if let Some(placeholder) = &placeholder {
                text = text.with_placeholder(placeholder);
            }
            match asked(text.prompt())? {
                Asked::Answer(value) => HostReply::Chosen { value: Some(value) },
                Asked::Dismissed => HostReply::Chosen { value: None },
            }
        }
        HostRequest::Form {
            message,
            schema,
            order,
        } => ask_form(message, schema, order)?,
        _ => return Err(Interrupted::Failed("not a question".to_owned())),
    })
}

/// A form, one field at a time, then "Submit?".
fn ask_form(message: &str, schema: &Value, order: &[String]) -> Result<HostReply, Interrupted> {
    eprintln!("{}", sanitize(message));
    let cancelled = HostReply::Form {
        action: FormAction::Cancel,
        content: None,
    };
    let mut values = Map::new();
    for field in form_fields(schema, order) {
        match ask_field(&field)? {
            Asked::Answer(Some(value)) => {
                values.insert(field.name, value);
            }
            Asked::Answer(None) => {}
            Asked::Dismissed => return Ok(cancelled),
        }
    }
    let submit = inquire::Confirm::new("Submit?").with_default(true).prompt();
    Ok(match asked(submit)? {
        Asked::Answer(true) => HostReply::Form {
            action: FormAction::Accept,
            content: Some(Value::Object(values)),
        },
        Asked::Answer(false) => HostReply::Form {
            action: FormAction::Decline,
            content: None,
        },
        Asked::Dismissed => cancelled,
    })
}

/// One form field's answer (`None`: left empty).
fn ask_field(field: &FormField) -> Result<Asked<Option<Value>>, Interrupted> {
    let label = sanitize(&field.label);
    let default = field.default.as_ref();
    let shown = |options: &[FieldOption]| -> Vec<String> {
        options
            .iter()
            .map(|option| sanitize(&option.label))
            .collect()
    };
    let value_of = |options: &[FieldOption], index: usize| {
        options
            .get(index)
            .map(|option| Value::String(option.value.clone()))
    };
    Ok(match &field.input {
        FieldInput::Choices { options } => {
            let chosen = inquire::MultiSelect::new(&label, shown(options)).raw_prompt();
            match asked(chosen)? {
                Asked::Answer(chosen) => Asked::Answer(Some(Value::Array(
                    chosen
                        .iter()
                        .filter_map(|c| value_of(options, c.index))
                        .collect(),
                ))),
                Asked::Dismissed => Asked::Dismissed,
            }
        }
        FieldInput::Choice { options } => {
            let start = default
                .and_then(Value::as_str)
                .and_then(|d| options.iter().position(|option| option.value == d))
                .unwrap_or(0);
            let chosen = inquire::Select::new(&label, shown(options))
                .with_starting_cursor(start)
                .raw_prompt();
            match asked(chosen)? {
                Asked::Answer(c) => Asked::Answer(value_of(options, c.index)),
                Asked::Dismissed => Asked::Dismissed,
            }
        }
        FieldInput::YesNo => {
            let start = default.and_then(Value::as_bool).unwrap_or(false);
            match asked(inquire::Confirm::new(&label).with_default(start).prompt())? {
                Asked::Answer(yes) => Asked::Answer(Some(Value::Bool(yes))),
                Asked::Dismissed => Asked::Dismissed,
            }
        }
        FieldInput::Integer => {
            let mut prompt = inquire::CustomType::<i64>::new(&label);
            if let Some(d) = default.and_then(Value::as_i64) {
                prompt = prompt.with_default(d);
            }
            match asked(prompt.prompt())? {
                Asked::Answer(n) => Asked::Answer(Some(Value::from(n))),
                Asked::Dismissed => Asked::Dismissed,
            }
        }
        FieldInput::Number => {
            let mut prompt = inquire::CustomType::<f64>::new(&label);
            if let Some(d) = default.and_then(Value::as_f64) {
                prompt = prompt.with_default(d);
            }
            match asked(prompt.prompt())? {
                Asked::Answer(n) => Asked::Answer(Some(Value::from(n))),
                Asked::Dismissed => Asked::Dismissed,
            }
        }
        FieldInput::Text => {
            let start = default.and_then(Value::as_str).map(sanitize);
            let mut prompt = inquire::Text::new(&label);
            if let Some(start) = &start {
                prompt = prompt.with_default(start);
            }
            match asked(prompt.prompt())? {
                Asked::Answer(text) if text.is_empty() && start.is_none() => Asked::Answer(None),
                Asked::Answer(text) => Asked::Answer(Some(Value::String(text))),
                Asked::Dismissed => Asked::Dismissed,
            }
        }
    })
}

impl HostServices for TerminalUi {
    fn has_ui(&self) -> bool {
        true
    }

    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        let on_interrupt = Arc::clone(&self.on_interrupt);
        let open = Arc::clone(&self.open);
        Box::pin(async move {
            open.fetch_add(1, Ordering::SeqCst);
            let asking = tokio::task::spawn_blocking(move || {
                let answer = ask_blocking(&question);
                open.fetch_sub(1, Ordering::SeqCst);
                answer
            });
            match asking.await {
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(Interrupted::ByUser)) => {
                    on_interrupt();
                    Err(PluginError::new(
                        "the user interrupted the question (Ctrl-C)",
                    ))
                }
                Ok(Err(Interrupted::Failed(cause))) => Err(PluginError::new(format!(
                    "cannot ask on the terminal: {cause}"
                ))),
                Err(error) => Err(PluginError::new(format!("the question was lost: {error}"))),
            }
        })
    }

    fn notify(&self, message: &str, level: NotifyLevel) {
        let level = match level {
            NotifyLevel::Info => "note",
            NotifyLevel::Warning => "warning",
            NotifyLevel::Error => "error",
        };
        eprintln!("{level}: {}", sanitize(message));
    }

    fn set_status(&self, key: &str, text: Option<&str>) {
        match text {
            Some(text) => eprintln!("status {}: {}", sanitize(key), sanitize(text)),
            None => eprintln!("status {}: (cleared)", sanitize(key)),
        }
    }
}

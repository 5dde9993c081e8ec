//! How `call` decides what to do with each pending action: `--apply` / `--discard` when given,
//! otherwise the user's answer on a terminal, otherwise discard. Nothing is applied without a
//! decision.

use std::io::{BufRead, IsTerminal};

use xcsh_loader::render::sanitize;

use crate::error::CliError;
use crate::output::Output;

/// What to do with one pending action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Apply,
    Discard,
}

impl Decision {
    /// The `action` argument of `resolve`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Apply => "apply",
            Decision::Discard => "discard",
        }
    }
}

/// What the command line says about pending actions: `--apply` or `--discard`, and `--reason`.
#[derive(Debug, Clone, Copy)]
pub struct DecisionFlags<'a> {
    pub decided: Option<Decision>,
    pub reason: Option<&'a str>,
    /// `--no-input`: no prompt, even on a terminal.
    pub no_input: bool,
}

/// The decision and reason for the pending action labelled `label`.
pub fn decide(
    flags: DecisionFlags<'_>,
    label: &str,
    output: &mut Output,
) -> Result<(Decision, String), CliError> {
    if let Some(decision) = flags.decided {
        return Ok((decision, flags.reason.unwrap_or_default().to_owned()));
    }
    if flags.no_input || !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        let reason = flags
            .reason
            .unwrap_or("no decision given (non-interactive); nothing applied");
        return Ok((Decision::Discard, reason.to_owned()));
    }
    loop {
        output.prompt(&format!(
            "Apply \"{}\"? [a]pply / [d]iscard: ",
            sanitize(label)
        ))?;
        let Some(answer) = read_answer()? else {
            return Ok((
                Decision::Discard,
                "input closed; nothing applied".to_owned(),
            ));
        };
        let decision = match answer.to_ascii_lowercase().as_str() {
            "a" | "apply" | "y" | "yes" => Decision::Apply,
            "d" | "discard" | "n" | "no" => Decision::Discard,
            _ => continue,
        };
        let reason = match flags.reason {
            Some(reason) => reason.to_owned(),
            None => {
                output.prompt("Reason (optional): ")?;
                read_answer()?.unwrap_or_default()
            }
        };
        return Ok((decision, reason));
    }
}

/// One trimmed line from stdin, or `None` once stdin is closed.
fn read_answer() -> Result<Option<String>, CliError> {
    let mut line = String::new();
    let read = std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::Failure(format!("cannot read the answer from stdin: {e}")))?;
    Ok((read > 0).then(|| line.trim().to_owned()))
}

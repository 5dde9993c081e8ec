//! How `call` decides what to do with each pending action: `--apply` / `--discard` when given,
//! otherwise the user's answer on a terminal, otherwise discard. Nothing is applied without a
//! decision.

use std::io::{BufRead, IsTerminal};

use xcsh_loader::messages::{DISCARD_FLAG_REASON, INPUT_CLOSED_REASON, NO_DECISION_REASON};
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
        return Ok((decision, flag_reason(decision, flags.reason)));
    }
    if flags.no_input || !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        let reason = flags.reason.unwrap_or(NO_DECISION_REASON);
        return Ok((Decision::Discard, reason.to_owned()));
    }
    loop {
        output.prompt(&format!(
            "Apply \"{}\"? [a]pply / [d]iscard: ",
            sanitize(label)
        ))?;
        let Some(answer) = read_answer()? else {
            return Ok((Decision::Discard, INPUT_CLOSED_REASON.to_owned()));
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

/// The reason of a decision given by flag: `--reason`, or for `--discard` without it
/// [`DISCARD_FLAG_REASON`] (a discard always says why: the action's `reject` receives it).
/// `--apply` without `--reason` passes an empty reason: an apply's reason is informative only
/// (docs/guide/src/pending.md), and the resolve block shows `No reason provided`.
fn flag_reason(decision: Decision, reason: Option<&str>) -> String {
    match (decision, reason) {
        (_, Some(reason)) => reason.to_owned(),
        (Decision::Discard, None) => DISCARD_FLAG_REASON.to_owned(),
        (Decision::Apply, None) => String::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_decision_without_reason_gets_the_documented_one() {
        assert_eq!(flag_reason(Decision::Discard, None), DISCARD_FLAG_REASON);
        assert_eq!(flag_reason(Decision::Discard, Some("no")), "no");
        assert_eq!(flag_reason(Decision::Apply, None), "");
        assert_eq!(flag_reason(Decision::Apply, Some("ok")), "ok");
    }
}

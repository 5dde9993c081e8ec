//! `xcsh-plugins call TOOL [JSON]`: run one tool in a fresh session, then finish every pending
//! action it left, newest first, with an explicit decision (see `decide`). Without one (no
//! `--apply`, no `--discard`, no terminal to ask on) pending actions are discarded: nothing is
//! applied without a decision.
//!
//! As text the call is shown as it happens, so a user asked to decide has seen the preview;
//! with `--json` the whole [`CallReport`] comes at the end.

use std::io::Read;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use xcsh_loader::{CallOptions, Session, RESOLVE_TOOL_NAME};

use crate::decide::{decide, Decision, DecisionFlags};
use crate::error::CliError;
use crate::output::Output;
use crate::report::{CallPreview, CallReport, LoadWarnings, Outcome};
use crate::HostOptions;

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to run.
    tool: String,
    /// Arguments as a JSON object, or `-` to read them from stdin (default `{}`).
    #[arg(value_name = "JSON")]
    arguments: Option<String>,
    /// Apply every pending action the call leaves.
    #[arg(long, conflicts_with = "discard")]
    apply: bool,
    /// Discard every pending action the call leaves.
    #[arg(long)]
    discard: bool,
    /// The reason passed to `resolve`.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Run without a pending-action store (pushes fail).
    #[arg(long)]
    no_store: bool,
    /// Abandon the call (and each resolve) after this many seconds.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
}

impl CallArgs {
    fn decision_flags(&self) -> DecisionFlags<'_> {
        let decided = if self.apply {
            Some(Decision::Apply)
        } else if self.discard {
            Some(Decision::Discard)
        } else {
            None
        };
        DecisionFlags {
            decided,
            reason: self.reason.as_deref(),
        }
    }
}

/// The arguments as JSON: from the command line, from stdin for `-`, or `{}`.
fn read_arguments(args: &CallArgs) -> Result<Value, CliError> {
    let text = match args.arguments.as_deref() {
        None => return Ok(json!({})),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::Failure(format!("cannot read arguments from stdin: {e}")))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "arguments for {} are not valid JSON: {e}",
            args.tool
        ))
    })
}

fn read_timeout(seconds: Option<f64>) -> Result<Option<Duration>, CliError> {
    match seconds {
        Some(secs) if secs.is_finite() && secs > 0.0 => Ok(Some(Duration::from_secs_f64(secs))),
        Some(secs) => Err(CliError::Usage(format!(
            "--timeout must be a positive number of seconds, got {secs}"
        ))),
        None => Ok(None),
    }
}

/// Refuse a tool the session does not have, before anything runs.
fn ensure_known(session: &Session, tool: &str) -> Result<(), CliError> {
    if session.tools().iter().any(|spec| spec.name == tool) {
        return Ok(());
    }
    let message = match session.load_errors().len() {
        0 => format!(
            "unknown tool \"{tool}\": no loaded tool has that name; \
             `xcsh-plugins list` shows the tools"
        ),
        failed => format!(
            "unknown tool \"{tool}\": no loaded tool has that name, and {failed} plugin \
             file(s) failed to load; `xcsh-plugins list` shows the tools and the load errors"
        ),
    };
    Err(CliError::Usage(message))
}

fn options(timeout: Option<Duration>) -> CallOptions {
    CallOptions {
        timeout,
        ..CallOptions::default()
    }
}

/// Run the call and resolve what it left pending; the report is already shown when this
/// returns.
pub async fn run(
    host: &HostOptions,
    args: CallArgs,
    output: &mut Output,
) -> Result<CallReport, CliError> {
    let arguments = read_arguments(&args)?;
    let timeout = read_timeout(args.timeout)?;
    let mut builder = host.session();
    if args.no_store {
        builder = builder.without_store();
    }
    let session = builder.build();
    let load_errors: Vec<String> = session
        .load_errors()
        .iter()
        .map(ToString::to_string)
        .collect();
    output.step(&LoadWarnings(load_errors.clone()))?;
    ensure_known(&session, &args.tool)?;
    let outcome = Outcome(
        session
            .call_with(&args.tool, arguments, options(timeout))
            .await,
    );
    let pending: Vec<String> = session
        .store()
        .map(|s| s.summaries().into_iter().map(|p| p.label).collect())
        .unwrap_or_default();
    output.step(&CallPreview {
        outcome: &outcome,
        pending: &pending,
    })?;
    let mut resolutions = Vec::new();
    while let Some(top) = session.store().and_then(|s| s.peek()) {
        let (decision, reason) = decide(args.decision_flags(), &top.label, output)?;
        let arguments = json!({"action": decision.as_str(), "reason": reason});
        let resolution = Outcome(
            session
                .call_with(RESOLVE_TOOL_NAME, arguments, options(timeout))
                .await,
        );
        output.step(&resolution)?;
        resolutions.push(resolution);
    }
    let report = CallReport {
        tool: args.tool,
        outcome,
        pending,
        resolutions,
        load_errors,
    };
    output.finish(&report)?;
    Ok(report)
}

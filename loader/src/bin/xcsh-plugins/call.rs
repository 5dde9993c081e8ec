//! `xcsh-plugins call TOOL [JSON]`: run one tool in a fresh session, then finish every pending
//! action it left, newest first, with an explicit decision. Without one (no `--apply`, no
//! `--discard`, no terminal to ask on) pending actions are discarded: nothing is applied
//! without a decision.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use xcsh_loader::render::sanitize;
use xcsh_loader::{render_resolve, CallOptions, RenderStyle, Session, ToolOutcome};

use crate::output::{print_json, stdout_color, width};
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Apply,
    Discard,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Apply => "apply",
            Decision::Discard => "discard",
        }
    }
}

fn read_arguments(args: &CallArgs) -> Result<Value, String> {
    let text = match args.arguments.as_deref() {
        None => return Ok(json!({})),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    serde_json::from_str(&text)
        .map_err(|e| format!("arguments for {} are not valid JSON: {e}", args.tool))
}

fn options(timeout: Option<Duration>) -> CallOptions {
    CallOptions {
        timeout,
        ..CallOptions::default()
    }
}

pub async fn run(host: &HostOptions, args: CallArgs) -> Result<ExitCode, String> {
    let arguments = read_arguments(&args)?;
    let timeout = match args.timeout {
        Some(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(secs) => {
            return Err(format!(
                "--timeout must be a positive number of seconds, got {secs}"
            ))
        }
        None => None,
    };
    let mut builder = host.session();
    if args.no_store {
        builder = builder.without_store();
    }
    let session = builder.build();
    if !host.json {
        for error in session.load_errors() {
            eprintln!("warning: {}", sanitize(&error.to_string()));
        }
    }
    let outcome = session
        .call_with(&args.tool, arguments, options(timeout))
        .await;
    let pending: Vec<String> = session
        .store()
        .map(|s| s.summaries().into_iter().map(|p| p.label).collect())
        .unwrap_or_default();
    if !host.json {
        print_outcome(&outcome);
        if !pending.is_empty() {
            println!("\nPending actions (newest first):");
            for (i, label) in pending.iter().enumerate() {
                println!("  {}. {}", i + 1, sanitize(label));
            }
        }
    }
    let resolutions = resolve_pending(&session, &args, host.json, timeout).await?;
    let failed = outcome.is_error || resolutions.iter().any(|r| r.is_error);
    if host.json {
        let load_errors: Vec<String> = session
            .load_errors()
            .iter()
            .map(ToString::to_string)
            .collect();
        print_json(&json!({
            "tool": args.tool,
            "isError": outcome.is_error,
            "result": outcome.result,
            "pending": pending,
            "resolutions": resolutions.iter().map(|r| json!({"isError": r.is_error, "result": r.result})).collect::<Vec<_>>(),
            "loadErrors": load_errors,
        }));
    }
    // Plugin processes end and their last output reaches the log before this process exits.
    session.close().await;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_outcome(outcome: &ToolOutcome) {
    let text = sanitize_block(&outcome.text());
    if outcome.is_error {
        eprintln!("error: {text}");
    } else if !text.is_empty() {
        println!("{text}");
    }
}

/// Sanitise each line of a multi-line text, keeping the line breaks.
fn sanitize_block(text: &str) -> String {
    text.lines().map(sanitize).collect::<Vec<_>>().join("\n")
}

async fn resolve_pending(
    session: &Session,
    args: &CallArgs,
    json_output: bool,
    timeout: Option<Duration>,
) -> Result<Vec<ToolOutcome>, String> {
    let mut resolutions = Vec::new();
    let style = RenderStyle {
        width: width(),
        color: stdout_color() && !json_output,
    };
    while let Some(top) = session.store().and_then(|s| s.peek()) {
        let (decision, reason) = decide(args, &top.label)?;
        let outcome = session
            .call_with(
                xcsh_loader::RESOLVE_TOOL_NAME,
                json!({"action": decision.as_str(), "reason": reason}),
                options(timeout),
            )
            .await;
        if !json_output {
            print_outcome(&outcome);
            print!("{}", render_resolve(&outcome, style));
            println!();
        }
        resolutions.push(outcome);
    }
    Ok(resolutions)
}

/// The decision for one pending action: from the flags, from the user on a terminal, or
/// discard.
fn decide(args: &CallArgs, label: &str) -> Result<(Decision, String), String> {
    if args.apply || args.discard {
        let decision = if args.apply {
            Decision::Apply
        } else {
            Decision::Discard
        };
        return Ok((decision, args.reason.clone().unwrap_or_default()));
    }
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        let reason = args
            .reason
            .clone()
            .unwrap_or_else(|| "no decision given (non-interactive); nothing applied".to_owned());
        return Ok((Decision::Discard, reason));
    }
    let stdin = std::io::stdin();
    loop {
        print!("Apply \"{}\"? [a]pply / [d]iscard: ", sanitize(label));
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let mut answer = String::new();
        if stdin
            .lock()
            .read_line(&mut answer)
            .map_err(|e| e.to_string())?
            == 0
        {
            return Ok((
                Decision::Discard,
                "input closed; nothing applied".to_owned(),
            ));
        }
        let decision = match answer.trim().to_ascii_lowercase().as_str() {
            "a" | "apply" | "y" | "yes" => Decision::Apply,
            "d" | "discard" | "n" | "no" => Decision::Discard,
            _ => continue,
        };
        let reason = match &args.reason {
            Some(reason) => reason.clone(),
            None => {
                print!("Reason (optional): ");
                std::io::stdout().flush().map_err(|e| e.to_string())?;
                let mut reason = String::new();
                stdin
                    .lock()
                    .read_line(&mut reason)
                    .map_err(|e| e.to_string())?;
                reason.trim().to_owned()
            }
        };
        return Ok((decision, reason));
    }
}

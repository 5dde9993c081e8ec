//! `xcsh-plugins call TOOL [JSON]`: run one tool in a fresh session, then finish every pending
//! action it left, newest first, with an explicit decision (see `decide`). Without one (no
//! `--apply`, no `--discard`, no terminal to ask on) pending actions are discarded: nothing is
//! applied without a decision.
//!
//! As text the call is shown as it happens, so a user asked to decide has seen the preview;
//! with `--json` the whole [`CallReport`] comes at the end. The tool's partial results
//! (`ctx.update`) are shown on stderr while it runs, at most ten lines a second.
//!
//! However the command ends (done, an error, a signal), the session is closed: whatever is
//! still pending gets its `reject`, so every action gets exactly one of `apply` or `reject`.
//!
//! `SIGINT`, `SIGTERM` and `SIGHUP` cancel the call in flight rather than end the process
//! under it: an apply that commits staged file changes (`ast_edit`, `batch_rename`) then
//! undoes whatever it had done and removes its temporary files, the session rejects what is
//! still pending, and the command exits 130, 143 or 129. An apply that had already finished
//! is reported as applied; when the signal cut nothing short (it came once the call and every
//! resolve had succeeded), the command ends as it would have without it, 0. A second signal
//! ends the process at once (an apply cut short there is finished or undone by the next
//! session's recovery).

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};
use xcsh_loader::render::sanitize;
use xcsh_loader::tool::ProgressThrottle;
use xcsh_loader::{
    AgentToolResult, CallOptions, CancelToken, Session, UpdateSink, RESOLVE_TOOL_NAME,
};
use xcsh_plugin_api::__private::lock;

use crate::cli::{IdleArg, JsonArg, ReloadArg, SessionArgs};
use crate::decide::{decide, Decision, DecisionFlags};
use crate::error::CliError;
use crate::host_options::HostOptions;
use crate::output::Output;
use crate::report::{CallPreview, CallReport, LoadWarnings, Outcome, Resolution};
use crate::terminal_ui::TerminalUi;

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
    /// The reason passed to `resolve`, and so to each action's apply or reject; needs --apply
    /// or --discard (a discard without it gets the default reason `call --help` gives).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Run without a pending-action store (pushes fail).
    #[arg(long)]
    no_store: bool,
    /// Abandon the call (and each resolve) after this many seconds.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Ask nothing on the terminal: the plugins' questions get their defaults (no,
    /// nothing chosen, a form cancelled), as where no one can answer, and what is left pending
    /// is discarded unless --apply.
    #[arg(long)]
    no_input: bool,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub reload: ReloadArg,
    #[command(flatten)]
    pub idle: IdleArg,
    #[command(flatten)]
    pub output: JsonArg,
}

impl CallArgs {
    /// `--reason` says why the pending actions are applied or discarded, so it needs the
    /// decision it explains: alone it would silently become the reason of a discard.
    fn check_decision(&self) -> Result<(), CliError> {
        if self.reason.is_some() && !self.apply && !self.discard {
            return Err(CliError::Usage(
                "--reason needs --apply or --discard: add one to say what happens to the \
                 pending actions the call leaves (nothing was run)"
                    .to_owned(),
            ));
        }
        Ok(())
    }

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
            no_input: self.no_input,
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

fn options(timeout: Option<Duration>, interrupt: &Interrupt) -> CallOptions {
    CallOptions {
        timeout,
        cancel: interrupt.cancel.clone(),
        ..CallOptions::default()
    }
}

/// Partial results as `progress: ...` lines on stderr, paced by a [`ProgressThrottle`]; the
/// newest one held back is shown by [`Progress::finish`].
#[derive(Clone, Default)]
struct Progress {
    throttle: Arc<Mutex<ProgressThrottle>>,
}

impl Progress {
    fn sink(&self) -> UpdateSink {
        let throttle = Arc::clone(&self.throttle);
        Arc::new(move |partial: AgentToolResult| {
            let shown = lock(&throttle).offer(partial.joined_text(), Instant::now());
            if let Some(text) = shown {
                show_progress(&text);
            }
        })
    }

    fn finish(&self) {
        let held = lock(&self.throttle).finish();
        if let Some(text) = held {
            show_progress(&text);
        }
    }
}

fn show_progress(text: &str) {
    use std::io::Write;
    for line in text.lines() {
        // A closed stderr is no reason to stop the tool.
        let _ = writeln!(std::io::stderr(), "progress: {}", sanitize(line));
    }
}

/// Run the call and resolve what it left pending; the report is already shown when this
/// returns. The session is closed on the way out, whichever way that is.
pub async fn run(
    host: &HostOptions,
    args: CallArgs,
    output: &mut Output,
) -> Result<CallReport, CliError> {
    args.check_decision()?;
    let arguments = read_arguments(&args)?;
    let timeout = read_timeout(args.timeout)?;
    let mut builder = host.session();
    if args.no_store {
        builder = builder.without_store();
    }
    let interrupt = Interrupt::default();
    // A plugin's questions on the terminal; Ctrl-C at one cancels the call as SIGINT does.
    let terminal = TerminalUi::if_interactive(args.no_input, interrupt.on_ctrl_c());
    if let Some(terminal) = &terminal {
        builder = builder.host_services(Arc::clone(terminal) as _);
    }
    let session = builder.build();
    host.require_all_loaded(&session)?;
    let session = Arc::new(session);
    let watcher = tokio::spawn(on_signal(Arc::clone(&session), interrupt.clone()));
    let report = call_and_resolve(&session, args, arguments, timeout, output, &interrupt).await;
    watcher.abort();
    let _ = watcher.await;
    // Rejects what is still pending, then (when nothing else holds the session) waits until
    // the plugin processes have ended and their last output has reached the log.
    let rejected = match Arc::try_unwrap(session) {
        Ok(session) => session.shutdown().await,
        Err(session) => session.close().await,
    };
    for outcome in &rejected {
        tracing::info!("rejected at exit: {}", outcome.text());
    }
    if let Some(terminal) = &terminal {
        terminal.restore_terminal();
    }
    match interrupt.signal() {
        Some(signal) if cut_short(report.as_ref().ok(), rejected.len()) => {
            Err(CliError::Interrupted {
                code: signal.code(),
                message: interrupted_message(signal, report.as_ref().ok(), rejected.len()),
            })
        }
        Some(signal) => {
            eprintln!(
                "{} came once the call and its resolves had completed: nothing was undone",
                signal.name()
            );
            report
        }
        None => report,
    }
}

/// Whether the signal cut the command short: the call or a resolve failed (one the signal
/// cancelled fails), or actions were left pending (rejected on the way out). A signal that
/// came when everything had already succeeded (an apply that completed, its result being
/// shown) changed nothing, so the command ends as without it: saying 130 there would tell a
/// script that nothing was applied when everything was.
fn cut_short(report: Option<&CallReport>, rejected: usize) -> bool {
    let Some(report) = report else {
        return true;
    };
    rejected > 0
        || report.outcome.0.is_error
        || report.resolutions.iter().any(|r| r.outcome.0.is_error)
}

/// A signal that ends a command: its name and the exit status that says so (128 + number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndSignal {
    Hangup,
    Interrupt,
    Terminate,
}

impl EndSignal {
    fn code(self) -> u8 {
        match self {
            EndSignal::Hangup => 129,
            EndSignal::Interrupt => 130,
            EndSignal::Terminate => 143,
        }
    }

    fn name(self) -> &'static str {
        match self {
            EndSignal::Hangup => "SIGHUP",
            EndSignal::Interrupt => "SIGINT",
            EndSignal::Terminate => "SIGTERM",
        }
    }
}

/// The command's cancellation: the token every call gets, the signal that fired it, and
/// whether the command is waiting at a prompt (where nothing runs that could be cut short).
#[derive(Clone, Default)]
struct Interrupt {
    cancel: CancelToken,
    signal: Arc<Mutex<Option<EndSignal>>>,
    prompting: Arc<AtomicBool>,
}

impl Interrupt {
    fn signal(&self) -> Option<EndSignal> {
        *lock(&self.signal)
    }

    /// What Ctrl-C at a plugin's question does: what `SIGINT` does (the terminal is in raw
    /// mode there, so no signal comes): cancel the call, and end with status 130.
    fn on_ctrl_c(&self) -> crate::terminal_ui::OnInterrupt {
        let interrupt = self.clone();
        Arc::new(move || {
            lock(&interrupt.signal).get_or_insert(EndSignal::Interrupt);
            interrupt.cancel.cancel();
        })
    }
}

/// The next `SIGINT`, `SIGTERM` or `SIGHUP`, or on Windows the console event standing for
/// one (`None` if they cannot be watched).
async fn next_signal() -> Option<EndSignal> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return None;
        };
        tokio::select! {
            _ = interrupt.recv() => Some(EndSignal::Interrupt),
            _ = terminate.recv() => Some(EndSignal::Terminate),
            _ = hangup.recv() => Some(EndSignal::Hangup),
        }
    }
    // Windows' console events, mapped to the signals they stand for: Ctrl-C and Ctrl-Break
    // interrupt, closing the console window hangs up (Windows waits about five seconds for
    // the handler before it ends the process), a shutdown or logoff terminates.
    #[cfg(windows)]
    {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};
        let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut shutdown)) = (
            ctrl_c(),
            ctrl_break(),
            ctrl_close(),
            ctrl_logoff(),
            ctrl_shutdown(),
        ) else {
            return None;
        };
        tokio::select! {
            _ = c.recv() => Some(EndSignal::Interrupt),
            _ = brk.recv() => Some(EndSignal::Interrupt),
            _ = close.recv() => Some(EndSignal::Hangup),
            _ = logoff.recv() => Some(EndSignal::Terminate),
            _ = shutdown.recv() => Some(EndSignal::Terminate),
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        tokio::signal::ctrl_c()
            .await
            .ok()
            .map(|()| EndSignal::Interrupt)
    }
}

/// On a signal: cancel the call in flight (its apply undoes what it did) and let the command
/// end by itself with the signal's status. At a prompt nothing is running: reject what is
/// pending and exit at once. A second signal exits at once too.
async fn on_signal(session: Arc<Session>, interrupt: Interrupt) {
    // Installed before anything runs, so the first signal never kills the process.
    let Some(signal) = next_signal().await else {
        return;
    };
    *lock(&interrupt.signal) = Some(signal);
    interrupt.cancel.cancel();
    if !interrupt.prompting.load(Ordering::SeqCst) {
        eprintln!(
            "interrupted ({}): stopping the call; an apply in progress is undone",
            signal.name()
        );
        let again = next_signal().await.unwrap_or(signal);
        eprintln!(
            "interrupted again ({}): exiting now; the next session finishes or undoes an \
             interrupted apply",
            again.name()
        );
        std::process::exit(i32::from(again.code()));
    }
    let rejected = session.close().await;
    eprintln!(
        "interrupted: rejected {} pending action(s); nothing was applied without a decision ({})",
        rejected.len(),
        signal.name()
    );
    for outcome in rejected {
        eprintln!("  {}", sanitize(&outcome.text()));
    }
    std::process::exit(i32::from(signal.code()));
}

/// What an interrupted command did: the applies that completed before the signal, and that
/// nothing else was applied.
fn interrupted_message(signal: EndSignal, report: Option<&CallReport>, rejected: usize) -> String {
    let applied = report.map_or(0, |report| {
        report
            .resolutions
            .iter()
            .filter(|r| r.action == "apply" && !r.outcome.0.is_error)
            .count()
    });
    let before = if applied == 0 {
        "nothing was applied".to_owned()
    } else {
        format!("{applied} apply(ies) had completed before it; nothing else was applied")
    };
    format!(
        "interrupted by {}: {before} (any apply in progress was undone), and {rejected} pending \
         action(s) were rejected",
        signal.name()
    )
}

async fn call_and_resolve(
    session: &Session,
    args: CallArgs,
    arguments: Value,
    timeout: Option<Duration>,
    output: &mut Output,
    interrupt: &Interrupt,
) -> Result<CallReport, CliError> {
    let load_errors: Vec<String> = session
        .load_errors()
        .iter()
        .map(ToString::to_string)
        .collect();
    output.step(&LoadWarnings(load_errors.clone()))?;
    crate::host_options::ensure_known(session, &args.tool)?;
    let progress = Progress::default();
    let call_options = CallOptions {
        updates: Some(progress.sink()),
        ..options(timeout, interrupt)
    };
    let outcome = Outcome(session.call_with(&args.tool, arguments, call_options).await);
    progress.finish();
    let pending_details = session.store().map(|s| s.summaries()).unwrap_or_default();
    let pending: Vec<String> = pending_details.iter().map(|p| p.label.clone()).collect();
    // A tool of a plugin process that failed on a path its sandbox refused: say how to allow
    // it.
    let tools = session.tools();
    let confinement = session.plugins().into_iter().find_map(|plugin| {
        let serves = tools.iter().any(|spec| {
            spec.name == args.tool
                && matches!(&spec.origin, xcsh_loader::ToolOrigin::Plugin(path) if *path == plugin.path)
        });
        serves.then_some(plugin.sandbox).flatten()
    });
    let refused = outcome.0.is_error && xcsh_loader::messages::is_refused_access(&outcome.0.text());
    output.step(&CallPreview {
        outcome: &outcome,
        pending: &pending,
        hint: confinement.filter(|_| refused).map(|confinement| {
            let sockets = if confinement.network == xcsh_loader::sandbox::Enforcement::NotRequested
            {
                ""
            } else {
                xcsh_loader::messages::REFUSED_SOCKET_HINT
            };
            format!("{}{sockets}", xcsh_loader::messages::REFUSED_ACCESS_HINT)
        }),
    })?;
    let mut resolutions = Vec::new();
    while let Some(top) = session.store().and_then(|s| s.peek()) {
        if interrupt.cancel.is_cancelled() {
            break;
        }
        interrupt.prompting.store(true, Ordering::SeqCst);
        let decided = decide(args.decision_flags(), &top.label, output);
        interrupt.prompting.store(false, Ordering::SeqCst);
        let (decision, reason) = decided?;
        if interrupt.cancel.is_cancelled() {
            break;
        }
        let arguments = json!({"action": decision.as_str(), "reason": reason});
        let outcome = Outcome(
            session
                .call_with(RESOLVE_TOOL_NAME, arguments, options(timeout, interrupt))
                .await,
        );
        output.step(&outcome)?;
        resolutions.push(Resolution {
            label: top.label,
            action: decision.as_str(),
            reason,
            outcome,
        });
    }
    let report = CallReport {
        tool: args.tool,
        outcome,
        pending,
        pending_details,
        resolutions,
        load_errors,
    };
    output.finish(&report)?;
    Ok(report)
}

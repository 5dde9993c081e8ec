//! `xcsh-plugins`: the command-line host for xcsh native plugins.
//!
//! It loads plugins like an agent runtime would (explicit `--plugin` paths, then the project's
//! and the user's tool directories), lists them, and runs one tool call in a fresh session,
//! finishing any pending action it leaves with an explicit decision.
//!
//! It is a package of its own, the top layer over `xcsh-loader`, so that the compiler holds the
//! line between them (this code sees only the library's public API) and an embedder of the
//! library compiles none of the argument parsing, terminal prompts and archive formats here.
//!
//! The binary is a thin layer over the library: each command computes a plain report
//! (`report`) from `xcsh_loader`'s public API and hands it to `output`, the one place that
//! writes text or `--json`. A command that cannot produce a report returns a [`CliError`],
//! which `main` reports once. Exit codes are the guide's (docs/guide/src/cli.md): 0 success, 1 a tool error, a
//! failed resolve or a load problem, 2 bad usage.

#![deny(unsafe_code)]

use std::process::ExitCode;

mod call;
mod check;
mod cli;
mod decide;
mod demo;
mod describe;
mod error;
mod host_options;
mod list;
mod mcp_server;
mod new;
mod output;
mod package;
mod params;
mod report;
mod terminal_ui;
mod trust_commands;

use cli::Command;
use error::CliError;
use host_options::HostOptions;
use output::{Output, Text};
use report::Report;

fn main() -> ExitCode {
    let cli = cli::parse();
    init_logging();
    let command = match cli.into_command() {
        Ok(command) => command,
        Err(error) => {
            Output::new(false).error(&error);
            return error.exit_code();
        }
    };
    let mut output = Output::new(json_requested(&command));
    match run(command, &mut output) {
        Ok(code) => code,
        Err(error) => {
            output.error(&error);
            error.exit_code()
        }
    }
}

fn init_logging() {
    // Reloads are told by default: a user who rebuilt a plugin sees it was picked up.
    const DEFAULT: &str = "warn,xcsh_loader::session=info";
    let spec = std::env::var("XCSH_LOG").unwrap_or_else(|_| DEFAULT.to_owned());
    let filter = tracing_subscriber::EnvFilter::try_new(with_layer_targets(&spec))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(with_layer_targets(DEFAULT)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(output::stderr_color())
        .try_init();
}

/// `spec` (an `XCSH_LOG` filter) with each directive for a module of `xcsh_loader` also given
/// to the layer crate that module now lives in: log targets are module paths, and the loader's
/// modules moved into `xcsh-loader-core` and `xcsh-loader-mcp` (whose events are
/// `xcsh_loader_core::session::…`, `xcsh_loader_mcp::…`), while users' and the guide's filters
/// say `xcsh_loader::session=info`, `xcsh_loader::isolate=debug`. A bare `xcsh_loader`
/// already covers both crates (targets match as prefixes).
fn with_layer_targets(spec: &str) -> String {
    let mut directives = Vec::new();
    for directive in spec.split(',') {
        directives.push(directive.to_owned());
        if let Some(rest) = directive.strip_prefix("xcsh_loader::mcp") {
            directives.push(format!("xcsh_loader_mcp{rest}"));
        } else if let Some(rest) = directive.strip_prefix("xcsh_loader::") {
            directives.push(format!("xcsh_loader_core::{rest}"));
        }
    }
    directives.join(",")
}

/// Whether the command's report goes out as JSON.
fn json_requested(command: &Command) -> bool {
    match command {
        Command::List(args) => args.output.json,
        Command::Describe(args) => args.output.json,
        Command::Call(args) => args.output.json,
        Command::Check(args) => args.output.json,
        Command::Trust(args) => args.output.json,
        Command::Untrust(args) => args.output.json,
        Command::Pack(args) => args.output.json,
        Command::Install(args) => args.output.json,
        Command::Update(args) => args.output.json,
        Command::Remove(args) => args.output.json,
        Command::Mcp(_)
        | Command::New(_)
        | Command::Demo(_)
        | Command::Keygen(_)
        | Command::AcceptKey(_)
        | Command::Completions(_) => false,
        Command::Man => false,
    }
}

/// Show a command's report and give the exit code it implies.
fn show<R: Report + Text>(output: &mut Output, report: &R) -> Result<ExitCode, CliError> {
    output.emit(report)?;
    Ok(exit_code(report))
}

/// 1 for a report that describes a failure, 0 otherwise.
fn exit_code<R: Report>(report: &R) -> ExitCode {
    if report.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Run `job` on an async runtime made for it, then leave without waiting for threads still
/// busy in plugin code that was abandoned (an in-process call that timed out while blocking).
/// Only the commands that run tool calls make one: `list` and the others start no thread.
fn on_runtime<T>(job: impl std::future::Future<Output = T>) -> Result<T, CliError> {
    // Two workers: while the interactive prompt of `call` blocks one, the other still sees a
    // Ctrl-C and ends the session properly (see `call`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Failure(format!("cannot start the async runtime: {e}")))?;
    let done = runtime.block_on(job);
    runtime.shutdown_background();
    Ok(done)
}

fn run(command: Command, output: &mut Output) -> Result<ExitCode, CliError> {
    let code = match command {
        Command::List(args) if args.installed => {
            package::install::list(&args.session.cwd).and_then(|report| show(output, &report))
        }
        Command::List(args) => {
            let host = HostOptions::from_session(&args.session, false)?;
            list::run(&host).and_then(|report| show(output, &report))
        }
        Command::Describe(args) => {
            let host = HostOptions::from_session(&args.session, false)?;
            describe::run(&args, &host).and_then(|report| show(output, &report))
        }
        Command::Check(args) => {
            let host = HostOptions::place(&args.cwd, &args.sandbox)?;
            show(output, &check::run(args, &host))
        }
        Command::Call(args) => {
            let host = HostOptions::from_session(&args.session, !args.reload.no_reload)?
                .stopping_idle(&args.idle);
            let report = on_runtime(call::run(&host, args, output))??;
            Ok(exit_code(&report))
        }
        Command::Trust(args) => show(output, &trust_commands::trust(args)?),
        Command::Untrust(args) => show(output, &trust_commands::untrust(args)?),
        Command::Mcp(args) => {
            let host = HostOptions::from_session(&args.session, !args.reload.no_reload)?
                .stopping_idle(&args.idle);
            mcp_server::run(&host)
        }
        Command::Pack(args) => package::pack::run(args).and_then(|report| show(output, &report)),
        Command::Install(args) => {
            package::install::install(args).and_then(|report| show(output, &report))
        }
        Command::Update(args) => {
            package::install::update(args).and_then(|report| show(output, &report))
        }
        Command::Remove(args) => {
            package::install::remove(args).and_then(|report| show(output, &report))
        }
        Command::Keygen(args) => {
            let (secret, public, key) = package::sign::keygen(&args.dir)?;
            writeln!(
                output.stdout(),
                "wrote {} (secret: keep it private) and {}\npublisher key: {key}\nsign with: xcsh-plugins pack FOLDER --sign {}",
                secret.display(),
                public.display(),
                secret.display()
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::AcceptKey(args) => {
            let text = package::install::accept_key(&args.name, args.key.as_deref())?;
            writeln!(output.stdout(), "{}", xcsh_loader::render::sanitize(&text))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::New(args) => new::run(args, output.stdout()),
        Command::Demo(args) => on_runtime(demo::run(args, output.stdout()))?,
        Command::Completions(args) => {
            let mut command = cli::command();
            clap_complete::generate(args.shell, &mut command, "xcsh-plugins", output.stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            clap_mangen::Man::new(cli::command()).render(output.stdout())?;
            Ok(ExitCode::SUCCESS)
        }
    };
    let code = code?;
    // Anything still buffered is written now, while a failure can still be reported.
    output.flush()?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::with_layer_targets;

    #[test]
    fn a_filter_naming_a_loader_module_also_names_the_layer_crate_holding_it() {
        assert_eq!(
            with_layer_targets("warn,xcsh_loader::session=info"),
            "warn,xcsh_loader::session=info,xcsh_loader_core::session=info"
        );
        assert_eq!(
            with_layer_targets("xcsh_loader::mcp=info,xcsh_loader::isolate=debug"),
            "xcsh_loader::mcp=info,xcsh_loader_mcp=info,\
             xcsh_loader::isolate=debug,xcsh_loader_core::isolate=debug"
        );
        assert_eq!(with_layer_targets("xcsh_loader=debug"), "xcsh_loader=debug");
        assert_eq!(with_layer_targets("debug"), "debug");
    }
}

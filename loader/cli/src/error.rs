//! [`CliError`]: why a command stopped before it had a report to show, and the exit code that
//! says so.
//!
//! The exit codes of the guide's CLI reference (docs/guide/src/cli.md): 0 success, 1 a tool error, a failed resolve or a load problem, 2
//! bad usage. A command that gets as far as a report says 0 or 1 through the report itself;
//! this type covers the rest: arguments the user must change (2) and failures of the machine
//! around the command, such as an unreadable stdin or an unwritable trust file (1). `main`
//! reports it once, as one `error: ...` line on stderr.

use std::process::ExitCode;

/// A command that could not produce its report.
#[derive(Debug)]
pub enum CliError {
    /// The arguments are wrong (exit 2): not JSON, an unknown tool, a missing `--cwd`, ...
    Usage(String),
    /// Something failed while carrying out a valid request (exit 1).
    Failure(String),
    /// A signal ended the command (exit 128 + the signal's number: 129, 130, 143).
    Interrupted { code: u8, message: String },
}

impl CliError {
    /// What went wrong, naming the thing and the cause.
    pub fn message(&self) -> &str {
        match self {
            CliError::Usage(message)
            | CliError::Failure(message)
            | CliError::Interrupted { message, .. } => message,
        }
    }

    /// The exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::from(2),
            CliError::Failure(_) => ExitCode::FAILURE,
            CliError::Interrupted { code, .. } => ExitCode::from(*code),
        }
    }
}

/// Writing the output failed for another reason than a closed reader (a full disk, ...).
impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        CliError::Failure(format!("cannot write the output: {error}"))
    }
}

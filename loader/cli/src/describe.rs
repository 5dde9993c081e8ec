//! `xcsh-plugins describe TOOL`: one tool as the model sees it: its name, label, where it
//! comes from, its whole description, each parameter, and the full parameter schema.

use clap::Args;

use crate::cli::{JsonArg, SessionArgs};
use crate::error::CliError;
use crate::host_options::{ensure_known, HostOptions};
use crate::report::{DescribeReport, ListedTool};

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The tool to describe.
    tool: String,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// Load the session and describe the tool (an unknown name is a usage error with the closest
/// names).
pub fn run(args: &DescribeArgs, host: &HostOptions) -> Result<DescribeReport, CliError> {
    let session = host.session().build();
    host.require_all_loaded(&session)?;
    ensure_known(&session, &args.tool)?;
    let plugins = session.plugins();
    let tool = session
        .tools()
        .iter()
        .find(|spec| spec.name == args.tool)
        .map(|spec| ListedTool::new(spec, &plugins))
        .ok_or_else(|| CliError::Failure(format!("tool \"{}\" vanished", args.tool)))?;
    Ok(DescribeReport {
        tool,
        load_errors: session
            .load_errors()
            .iter()
            .map(ToString::to_string)
            .collect(),
    })
}

//! `xcsh-plugins list`: every tool the session would offer, every load error, and the
//! project-local plugins that were not loaded because they are not trusted (or changed since),
//! each with the command that trusts it.

use crate::error::CliError;
use crate::host_options::HostOptions;
use crate::report::{ListReport, ListedPlugin, ListedTool, LoadProblem, UntrustedPlugin};

/// Load everything the options name and report it (under `--require-all-plugins`, a load
/// error is the command's error instead).
pub fn run(host: &HostOptions) -> Result<ListReport, CliError> {
    let session = host.session().build();
    host.require_all_loaded(&session)?;
    let errors = session.load_errors();
    let plugins = session.plugins();
    Ok(ListReport {
        tools: session
            .tools()
            .iter()
            .map(|spec| ListedTool::new(spec, &plugins))
            .collect(),
        plugins: plugins.iter().map(ListedPlugin::from).collect(),
        errors: errors.iter().map(LoadProblem::from).collect(),
        untrusted: errors
            .iter()
            .filter_map(UntrustedPlugin::from_error)
            .collect(),
    })
}

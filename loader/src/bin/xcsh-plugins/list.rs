//! `xcsh-plugins list`: every tool the session would offer, every load error, and the
//! project-local plugins that were not loaded because they are not trusted (or changed since),
//! each with the command that trusts it.

use crate::report::{ListReport, ListedPlugin, ListedTool, LoadProblem, UntrustedPlugin};
use crate::HostOptions;

/// Load everything the options name and report it.
pub fn run(host: &HostOptions) -> ListReport {
    let session = host.session().build();
    let errors = session.load_errors();
    let plugins = session.plugins();
    ListReport {
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
    }
}

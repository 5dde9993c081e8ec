//! Which plugins a host built with this crate accepts, and what each plugin version can do.
//!
//! The version policy (see `ABI.md`): a host accepts a plugin built against the same major
//! version of this crate and a minor from [`OLDEST_SUPPORTED_API_VERSION`] up to its own
//! [`API_VERSION`] (for 0.x versions the minor is the compatibility axis). The host checks this
//! from the version marker in the file, before the library is loaded.
//!
//! A capability is something the ABI gained in a given version; a plugin built against that
//! version or later has it. The host reads the capability itself through the ABI as an
//! `Option` (absent for older plugins); this table only names them for reports.

use crate::ffi::ApiVersion;

/// The version of this crate a plugin was built against (written into every plugin by
/// [`crate::export_plugin!`]).
pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The oldest `xcsh-plugin-api` a host built with this crate loads. 0.1 had no version marker
/// and a layout that cannot grow.
pub const OLDEST_SUPPORTED_API_VERSION: &str = "0.2.0";

/// A capability of the plugin ABI and the `xcsh-plugin-api` version that introduced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// Its name in reports (`check --json`, `list --json`).
    pub name: &'static str,
    /// The first `xcsh-plugin-api` version with it.
    pub since: &'static str,
    /// What it gives the host.
    pub description: &'static str,
}

/// Every capability this crate knows, oldest first.
pub const CAPABILITIES: &[Capability] = &[
    Capability {
        name: "tools",
        since: "0.2.0",
        description: "tools with a name, label, description, parameter schema, hidden and deferrable flags, and execute",
    },
    Capability {
        name: "pending-actions",
        since: "0.2.0",
        description: "pending actions with label, details, source tool, apply and reject",
    },
    Capability {
        name: "tool-annotations",
        since: "0.3.0",
        description: "tool behaviour hints (read-only, destructive, idempotent, open-world), carried to MCP annotations",
    },
    Capability {
        name: "retryable-apply",
        since: "0.5.0",
        description: "a failed apply keeps the action's reject, and a retryable apply may run again, for runtimes that keep a failed preview pending",
    },
    Capability {
        name: "keep-alive",
        since: "0.5.0",
        description: "the plugin may ask the host not to stop its process while idle (CustomToolApi::keep_alive)",
    },
    Capability {
        name: "host-services",
        since: "0.6.0",
        description: "a running call may ask the user (confirm, select, input, forms), notify, set a status and ask the session's model (ToolContext::ui, ToolContext::complete)",
    },
    Capability {
        name: "session-events",
        since: "0.6.0",
        description: "tools hear the session's start, switch, branch, tree and shutdown with their own earlier results (CustomTool::on_session)",
    },
    Capability {
        name: "audio-and-resources",
        since: "0.6.0",
        description: "results may carry audio and embedded resources",
    },
    Capability {
        name: "exec",
        since: "0.6.0",
        description: "a running call may run a program in one line, ended with its call, its output capped (ToolContext::exec)",
    },
    Capability {
        name: "action-context",
        since: "0.7.0",
        description: "a pending action's apply and reject get the host's services of the resolve call that runs them (questions, notifications, programs, cancellation)",
    },
    Capability {
        name: "views",
        since: "0.8.0",
        description: "a result may say how it looks (AgentToolResult::with_view: a status line, text in theme roles, files, diffs, tables, collapsible sections), drawn by hosts that draw and left out by the others",
    },
];

/// The capabilities a plugin built against `version` has (empty for a version this crate
/// cannot parse).
pub fn capabilities_of(version: &str) -> Vec<&'static str> {
    let Some(version) = ApiVersion::parse(version) else {
        return Vec::new();
    };
    CAPABILITIES
        .iter()
        .filter(|c| ApiVersion::parse(c.since).is_some_and(|since| since <= version))
        .map(|c| c.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_parsable_and_ordered() {
        let host = ApiVersion::parse(API_VERSION).expect("API_VERSION parses");
        let oldest = ApiVersion::parse(OLDEST_SUPPORTED_API_VERSION).expect("oldest parses");
        assert!(oldest <= host);
        assert!(host.is_supported_by(oldest, host));
        for capability in CAPABILITIES {
            let since = ApiVersion::parse(capability.since).expect("since parses");
            assert!(since >= oldest && since <= host, "{capability:?}");
        }
        assert_eq!(capabilities_of(API_VERSION).len(), CAPABILITIES.len());
        assert!(capabilities_of("0.1.0").is_empty());
    }
}

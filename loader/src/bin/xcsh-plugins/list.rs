//! `xcsh-plugins list`: every tool the session would offer, every load error, and the
//! project-local plugins that were not loaded because they are not trusted (or changed since),
//! each with the command that trusts it.

use std::process::ExitCode;

use serde_json::json;
use xcsh_loader::render::sanitize;
use xcsh_loader::trust::trust_command;
use xcsh_loader::{LoadErrorKind, ToolOrigin};

use crate::output::print_json;
use crate::HostOptions;

pub fn run(host: &HostOptions) -> ExitCode {
    let session = host.session().build();
    let errors = session.load_errors();
    // Each tool's isolation mode, from its plugin (built-ins run in this process).
    let isolation_of = |origin: &ToolOrigin| match origin {
        ToolOrigin::Plugin(path) => session
            .plugins()
            .iter()
            .find(|p| &p.path == path)
            .map_or("in-process", |p| p.isolation.as_str()),
        ToolOrigin::Builtin => "in-process",
    };
    if host.json {
        let tools: Vec<_> = session
            .tools()
            .into_iter()
            .map(|spec| {
                json!({
                    "name": spec.name,
                    "label": spec.label,
                    "description": spec.description,
                    "origin": spec.origin.to_string(),
                    "hidden": spec.hidden,
                    "deferrable": spec.deferrable,
                    "isolation": isolation_of(&spec.origin),
                    "parameters": spec.parameters,
                })
            })
            .collect();
        let untrusted: Vec<_> = errors
            .iter()
            .filter_map(|e| match (&e.path, &e.kind) {
                (path, LoadErrorKind::Untrusted { changed }) => Some(json!({
                    "path": path.display().to_string(),
                    "changed": changed,
                    "trustCommand": trust_command(path),
                })),
                _ => None,
            })
            .collect();
        let errors: Vec<_> = errors
            .iter()
            .map(|e| json!({"path": e.path().display().to_string(), "message": e.cause()}))
            .collect();
        print_json(&json!({"tools": tools, "errors": errors, "untrusted": untrusted}));
    } else {
        let specs = session.tools();
        if specs.is_empty() {
            println!("No tools loaded.");
        }
        for spec in specs {
            let mut flags = Vec::new();
            if spec.hidden {
                flags.push("hidden");
            }
            if spec.deferrable {
                flags.push("deferrable");
            }
            let flags = if flags.is_empty() {
                String::new()
            } else {
                format!(" [{}]", flags.join(", "))
            };
            println!(
                "{}  {}{}\n    from {} ({})",
                sanitize(&spec.name),
                sanitize(&spec.label),
                flags,
                sanitize(&spec.origin.to_string()),
                isolation_of(&spec.origin)
            );
        }
        for error in errors {
            if let (path, LoadErrorKind::Untrusted { changed }) = (&error.path, &error.kind) {
                let why = if *changed {
                    "changed since it was trusted"
                } else {
                    "not trusted"
                };
                eprintln!(
                    "untrusted: {} ({why}, not loaded)\n    review it, then: {}",
                    sanitize(&path.display().to_string()),
                    sanitize(&trust_command(path))
                );
            } else {
                eprintln!("load error: {}", sanitize(&error.to_string()));
            }
        }
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

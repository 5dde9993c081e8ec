//! `xcsh-plugins check FILE...`: load each plugin alone and tell its author what is wrong.
//!
//! Each file gets a fresh session with nothing else loaded, so problems are the file's own:
//! the ABI and version check, the factory, every tool's name, label, description and
//! parameter schema. Exit 1 on any problem.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use xcsh_loader::library::host_api_version;
use xcsh_loader::render::sanitize;
use xcsh_loader::{Session, ToolOrigin};

use crate::output::print_json;
use crate::HostOptions;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Plugin files to check.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// What `check` found in one file.
struct Report {
    path: PathBuf,
    api_version: Option<&'static str>,
    isolation: Option<xcsh_loader::Isolation>,
    tools: Vec<serde_json::Value>,
    problems: Vec<String>,
}

fn check_file(file: PathBuf, host: &HostOptions) -> Report {
    let cwd = host.cwd.as_path();
    let path = cwd.join(&file);
    let mut report = Report {
        path: file,
        api_version: None,
        isolation: None,
        tools: Vec::new(),
        problems: Vec::new(),
    };
    if !path.is_file() {
        report.problems.push(match std::fs::metadata(&path) {
            Ok(_) => "not a regular file".to_owned(),
            Err(error) => format!("cannot read: {error}"),
        });
        return report;
    }
    let session = Session::builder(cwd)
        .default_dirs(false)
        .plugin(&path)
        .isolation(host.isolation)
        .build();
    for error in session.load_errors() {
        report.problems.push(error.cause());
    }
    report.api_version = session.plugins().first().map(|p| p.api_version);
    report.isolation = session.plugins().first().map(|p| p.isolation);
    for spec in session.tools() {
        if !matches!(spec.origin, ToolOrigin::Plugin(_)) {
            continue;
        }
        if spec.label.trim().is_empty() {
            report
                .problems
                .push(format!("tool \"{}\" has an empty label", spec.name));
        }
        if spec.description.trim().is_empty() {
            report.problems.push(format!(
                "tool \"{}\" has an empty description (the model relies on it)",
                spec.name
            ));
        }
        report.tools.push(json!({
            "name": spec.name,
            "label": spec.label,
            "hidden": spec.hidden,
            "deferrable": spec.deferrable,
        }));
    }
    if report.tools.is_empty() && report.problems.is_empty() {
        report
            .problems
            .push("the plugin's factory returned no tools".to_owned());
    }
    report
}

pub fn run(args: CheckArgs, host: &HostOptions) -> ExitCode {
    let json_output = host.json;
    let reports: Vec<Report> = args
        .files
        .into_iter()
        .map(|f| check_file(f, host))
        .collect();
    let failed = reports.iter().any(|r| !r.problems.is_empty());
    if json_output {
        let files: Vec<_> = reports
            .iter()
            .map(|r| {
                json!({
                    "path": r.path.display().to_string(),
                    "ok": r.problems.is_empty(),
                    "apiVersion": r.api_version,
                    "isolation": r.isolation.map(|i| i.as_str()),
                    "tools": r.tools,
                    "problems": r.problems,
                })
            })
            .collect();
        print_json(&json!({"hostApiVersion": host_api_version(), "files": files}));
    } else {
        for report in &reports {
            print_report(report);
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_report(report: &Report) {
    let path = sanitize(&report.path.display().to_string());
    if report.problems.is_empty() {
        let version = report.api_version.unwrap_or("?");
        let isolation = report.isolation.map_or("?", |i| i.as_str());
        println!("ok {path} (xcsh-plugin-api {version}, isolation {isolation})");
        for tool in &report.tools {
            let mut flags = Vec::new();
            if tool["hidden"] == true {
                flags.push("hidden");
            }
            if tool["deferrable"] == true {
                flags.push("deferrable");
            }
            let name = tool["name"].as_str().unwrap_or_default();
            let label = tool["label"].as_str().unwrap_or_default();
            let flags = if flags.is_empty() {
                String::new()
            } else {
                format!(" [{}]", flags.join(", "))
            };
            println!("  tool {}  {}{flags}", sanitize(name), sanitize(label));
        }
    } else {
        for problem in &report.problems {
            // One line per problem: long causes (ABI layout diffs) keep their first line.
            let first = problem.lines().next().unwrap_or_default();
            eprintln!("FAIL {path}: {}", sanitize(first));
        }
    }
}

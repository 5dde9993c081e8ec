//! The text form of each report: results on stdout, problems on stderr, one line per item.
//!
//! Everything that may come from a plugin or the file system (names, labels, paths, messages)
//! goes through [`sanitize`], so control characters never reach the terminal raw.

use std::io;

use xcsh_loader::render::sanitize;
use xcsh_loader::render_resolve;

use super::Streams;
use crate::params::{is_strict, params_of};
use crate::report::{
    CallPreview, CheckReport, DescribeReport, FileCheck, ListReport, ListedTool, LoadWarnings,
    Outcome, RepositoryReport, TrustReport, UntrustReport,
};

/// A report, or part of one, that has a text form.
pub trait Text {
    /// Write the text form.
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()>;
}

/// ` [hidden, deferrable]`, or nothing for a plain tool.
fn flags(hidden: bool, deferrable: bool) -> String {
    let names: Vec<&str> = [(hidden, "hidden"), (deferrable, "deferrable")]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" [{}]", names.join(", "))
    }
}

/// Sanitise each line of a multi-line text, keeping the line breaks.
fn sanitize_block(text: &str) -> String {
    text.lines().map(sanitize).collect::<Vec<_>>().join("\n")
}

impl Text for ListReport {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        if self.tools.is_empty() {
            writeln!(to.out, "No tools loaded.")?;
        }
        for tool in &self.tools {
            write_heading(tool, to)?;
            write_params(tool, to)?;
        }
        for plugin in &self.plugins {
            writeln!(
                to.out,
                "plugin {} ({}; sandbox: {})",
                sanitize(&plugin.path),
                plugin.isolation,
                sanitize(&plugin.sandbox)
            )?;
        }
        for error in &self.errors {
            match &error.untrusted {
                Some(plugin) => {
                    let why = if plugin.changed {
                        "changed since it was trusted"
                    } else {
                        "not trusted"
                    };
                    writeln!(
                        to.err,
                        "untrusted: {} ({why}, not loaded)\n    review it, then: {}",
                        sanitize(&plugin.path),
                        sanitize(&plugin.trust_command)
                    )?;
                }
                None => writeln!(to.err, "load error: {}", sanitize(&error.sentence))?,
            }
        }
        Ok(())
    }
}

/// `name  Label [flags]` and where the tool comes from.
fn write_heading(tool: &ListedTool, to: &mut Streams<'_>) -> io::Result<()> {
    writeln!(
        to.out,
        "{}  {}{}\n    from {} ({})",
        sanitize(&tool.name),
        sanitize(&tool.label),
        flags(tool.hidden, tool.deferrable),
        sanitize(&tool.origin),
        tool.isolation
    )
}

/// One line per parameter: `name: type (required) — description`.
fn write_params(tool: &ListedTool, to: &mut Streams<'_>) -> io::Result<()> {
    let params = params_of(&tool.parameters);
    if params.is_empty() {
        return writeln!(to.out, "    (no parameters)");
    }
    let width = params
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0);
    for param in &params {
        let required = if param.required {
            "required"
        } else {
            "optional"
        };
        let description = param
            .description
            .as_deref()
            .map(|d| format!(" — {}", sanitize(d)))
            .unwrap_or_default();
        writeln!(
            to.out,
            "    {:width$}  {} ({required}){description}",
            sanitize(&param.name),
            sanitize(&param.ty),
        )?;
    }
    Ok(())
}

impl Text for DescribeReport {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        for warning in &self.load_errors {
            writeln!(to.err, "warning: {}", sanitize(warning))?;
        }
        let tool = &self.tool;
        write_heading(tool, to)?;
        writeln!(to.out, "\n{}\n", sanitize_block(&tool.description))?;
        let strict = if is_strict(&tool.parameters) {
            "unknown arguments are refused"
        } else {
            "unknown arguments are ignored"
        };
        writeln!(to.out, "Parameters ({strict}):")?;
        write_params(tool, to)?;
        let schema = serde_json::to_string_pretty(&tool.parameters).unwrap_or_default();
        writeln!(to.out, "\nSchema:\n{}", sanitize_block(&schema))
    }
}

impl Text for CheckReport {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        self.files.iter().try_for_each(|file| file.write_text(to))
    }
}

impl Text for FileCheck {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        let path = sanitize(&self.path);
        if let (Some(built_for), true) = (&self.built_for, self.problems.is_empty()) {
            let version = self.api_version.as_deref().unwrap_or("?");
            writeln!(
                to.out,
                "ok {path} ({}, xcsh-plugin-api {version}; another platform's library: its headers were checked, it was not loaded)",
                sanitize(built_for)
            )?;
        } else if self.problems.is_empty() {
            let version = self.api_version.as_deref().unwrap_or("?");
            let isolation = self.isolation.as_deref().unwrap_or("?");
            let sandbox = self.sandbox.as_deref().unwrap_or("?");
            writeln!(
                to.out,
                "ok {path} (xcsh-plugin-api {version}, isolation {isolation}, sandbox: {sandbox})"
            )?;
            if let Some(policy) = &self.policy {
                let list = |items: &[String]| sanitize(&items.join(", "));
                writeln!(to.out, "  environment: {}", list(&policy.environment))?;
                writeln!(to.out, "  reads: {}", list(&policy.reads))?;
                writeln!(to.out, "  writes: {}", list(&policy.writes))?;
                writeln!(to.out, "  network: {}", policy.network)?;
                if let Some(repository) = &policy.repository {
                    write_repository(to, repository)?;
                }
                let contained = self
                    .confinement
                    .as_ref()
                    .is_some_and(|enforced| enforced.programs_contained);
                writeln!(
                    to.out,
                    "  programs: no terminal, empty input; {}",
                    if contained && cfg!(windows) {
                        "end with the plugin process (its Job Object)"
                    } else if contained {
                        "end with the plugin process (PID namespace)"
                    } else {
                        "only those left in its process group end with it (no PID namespace here)"
                    }
                )?;
            }
            for tool in &self.tools {
                writeln!(
                    to.out,
                    "  tool {}  {}{}",
                    sanitize(&tool.name),
                    sanitize(&tool.label),
                    flags(tool.hidden, tool.deferrable)
                )?;
            }
        }
        for problem in &self.problems {
            // One line per problem: long causes (ABI layout diffs) keep their first line, and
            // say where the rest is.
            let mut lines = problem.lines();
            let first = lines.next().unwrap_or_default().trim_end();
            let more = if lines.next().is_some() {
                " (more in `check --json`)"
            } else {
                ""
            };
            writeln!(to.err, "FAIL {path}: {}{more}", sanitize(first))?;
        }
        Ok(())
    }
}

/// `check`'s line on the repository `--cwd` is in: its top, what of it above `--cwd` is
/// read-only and how to make it writable, what is writable, or why none of it is readable.
fn write_repository(to: &mut Streams<'_>, repository: &RepositoryReport) -> io::Result<()> {
    let root = sanitize(&repository.root);
    if let Some(withheld) = &repository.withheld {
        return writeln!(
            to.out,
            "  enclosing repository: {root}, not readable: {}",
            sanitize(withheld)
        );
    }
    let mut parts = Vec::new();
    if let Some(root) = &repository.listable {
        parts.push(format!("names listable: {}", sanitize(root)));
    }
    if !repository.read_only.is_empty() {
        let grants: Vec<String> = repository
            .grant
            .iter()
            .map(|path| format!("--allow-write {}", sanitize(path)))
            .collect();
        parts.push(format!(
            "read-only: {} (writable with {})",
            sanitize(&repository.read_only.join(", ")),
            grants.join(" ")
        ));
    }
    if !repository.writable.is_empty() {
        parts.push(format!(
            "writable: {}",
            sanitize(&repository.writable.join(", "))
        ));
    }
    if parts.is_empty() {
        parts.push("nothing of it above the working directory".to_owned());
    }
    writeln!(
        to.out,
        "  enclosing repository: {root}; {}",
        parts.join("; ")
    )
}

impl Text for LoadWarnings {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        for warning in &self.0 {
            writeln!(to.err, "warning: {}", sanitize(warning))?;
        }
        Ok(())
    }
}

/// A tool's outcome: its text on stdout (audio and resources as a line naming each), or
/// `error: ...` on stderr. On a terminal, a result with a view is drawn from the view instead
/// (`super::view`); a pipe gets the text.
fn write_outcome(outcome: &Outcome, to: &mut Streams<'_>) -> io::Result<()> {
    if let (Some(view), false, true) = (&outcome.0.result.view, outcome.0.is_error, to.draws_views)
    {
        return writeln!(to.out, "{}", super::view::draw(view, to.style));
    }
    let shown = outcome.0.result.clone().with_placeholders();
    let text = sanitize_block(&shown.joined_text());
    if outcome.0.is_error {
        writeln!(to.err, "error: {text}")
    } else if text.is_empty() {
        Ok(())
    } else {
        writeln!(to.out, "{text}")
    }
}

impl Text for CallPreview<'_> {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        write_outcome(self.outcome, to)?;
        if let Some(hint) = &self.hint {
            writeln!(to.err, "hint: {hint}")?;
        }
        if !self.pending.is_empty() {
            writeln!(to.out, "\nPending actions (newest first):")?;
            for (i, label) in self.pending.iter().enumerate() {
                writeln!(to.out, "  {}. {}", i + 1, sanitize(label))?;
            }
        }
        Ok(())
    }
}

/// One resolution: `resolve`'s own text, then the rendered resolve block.
impl Text for Outcome {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        write_outcome(self, to)?;
        writeln!(to.out, "{}", render_resolve(&self.0, to.style))
    }
}

impl Text for TrustReport {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        for file in &self.trusted {
            writeln!(
                to.out,
                "trusted {}\n    sha256 {}",
                sanitize(&file.path),
                file.sha256
            )?;
        }
        if !self.trusted.is_empty() {
            writeln!(to.out, "(recorded in {})", sanitize(&self.trust_file))?;
        }
        for error in &self.errors {
            writeln!(to.err, "error: {}", sanitize(&error.message))?;
        }
        Ok(())
    }
}

impl Text for UntrustReport {
    fn write_text(&self, to: &mut Streams<'_>) -> io::Result<()> {
        for path in &self.untrusted {
            writeln!(to.out, "untrusted {}", sanitize(path))?;
        }
        for path in &self.not_trusted {
            writeln!(to.out, "{} was not trusted", sanitize(path))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ListedTool, LoadProblem};
    use xcsh_loader::{LoadError, RenderStyle};

    fn text_of(report: &dyn Text) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut streams = Streams {
            out: &mut out,
            err: &mut err,
            draws_views: false,
            style: RenderStyle {
                width: 80,
                color: false,
            },
        };
        report.write_text(&mut streams).unwrap_or_default();
        (
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn list_puts_tools_on_stdout_and_problems_on_stderr() {
        let untrusted = LoadError::new(
            "/p/liba.so",
            xcsh_loader::LoadErrorKind::Untrusted { changed: false },
        );
        let report = ListReport {
            tools: vec![ListedTool {
                name: "echo\u{1b}[31m".to_owned(),
                label: "Echo".to_owned(),
                description: String::new(),
                origin: "builtin".to_owned(),
                hidden: false,
                deferrable: true,
                isolation: "in-process",
                annotations: crate::report::Annotations::from(&xcsh_loader::ToolHints::PREVIEW),
                parameters: serde_json::json!({}),
            }],
            plugins: Vec::new(),
            errors: vec![LoadProblem::from(&untrusted)],
            untrusted: Vec::new(),
        };
        let (out, err) = text_of(&report);
        assert_eq!(
            out,
            "echo␛[31m  Echo [deferrable]\n    from builtin (in-process)\n    (no parameters)\n"
        );
        assert!(
            err.starts_with(
                "untrusted: /p/liba.so (not trusted, not loaded)\n    review it, then: "
            ),
            "{err}"
        );
    }

    #[test]
    fn flags_name_what_is_set() {
        assert_eq!(flags(false, false), "");
        assert_eq!(flags(true, false), " [hidden]");
        assert_eq!(flags(true, true), " [hidden, deferrable]");
    }
}

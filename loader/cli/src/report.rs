//! The reports the commands compute: plain data, serialisable as the JSON documents the guide's
//! CLI reference (`docs/guide/src/cli.md`) describes for `--json`, and rendered as text by
//! [`crate::output`].
//!
//! Keeping what a command found apart from how it is shown means the text and the JSON forms
//! can never disagree, and a command is tested by what it computes. Field names are the JSON
//! keys (camelCase); the few fields only the text form needs are `#[serde(skip)]`.

use serde::{Serialize, Serializer};
use xcsh_loader::sandbox::{Confinement, Enforcement};
use xcsh_loader::trust::trust_command;
use xcsh_loader::{
    LoadError, LoadErrorKind, LoadedPlugin, PendingSummary, ToolHints, ToolOrigin, ToolOutcome,
    ToolSpec,
};

/// A command's complete report: what `--json` prints, and whether the command failed (exit 1).
pub trait Report: Serialize {
    /// Whether the report describes a failure: a load problem, a tool error, a failed resolve.
    fn failed(&self) -> bool;
}

/// `list`: every tool the session offers, the plugin libraries it loaded, every load error,
/// and the untrusted project plugins.
#[derive(Debug, Serialize)]
pub struct ListReport {
    pub tools: Vec<ListedTool>,
    pub plugins: Vec<ListedPlugin>,
    pub errors: Vec<LoadProblem>,
    pub untrusted: Vec<UntrustedPlugin>,
}

/// One plugin library in `list`: the API version it was built against and what it can do.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedPlugin {
    pub path: String,
    pub api_version: String,
    pub capabilities: Vec<&'static str>,
    pub isolation: &'static str,
    /// What its process's sandbox enforces (`landlock v6, reads confined, writes confined,
    /// environment filtered`, `unavailable, environment filtered`, `none (in-process)`).
    pub sandbox: String,
    /// The same, part by part; `null` in-process.
    pub confinement: Option<Enforced>,
}

/// What a plugin process's sandbox enforced, part by part (`list --json`, `check --json`):
/// each `full`, `partial`, `none` or `not-requested`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Enforced {
    /// Only the variables the policy names (`full`).
    pub environment: Enforcement,
    /// Reads outside the readable paths refused.
    pub reads: Enforcement,
    /// Writes outside the writable paths refused.
    pub writes: Enforcement,
    /// Under `--deny-network`: `full` (every socket but a Unix stream pair refused, by
    /// seccomp), `partial` (TCP only, Landlock), `none`; otherwise `not-requested`.
    pub network: Enforcement,
    /// The Landlock ABI in force (`0`: none).
    pub landlock_abi: u32,
    /// Whether the seccomp network filter is in force.
    pub seccomp: bool,
    /// Whether every program the plugin starts ends with its process (a PID namespace).
    pub programs_contained: bool,
}

impl From<&Confinement> for Enforced {
    fn from(confinement: &Confinement) -> Self {
        Enforced {
            environment: confinement.environment,
            reads: confinement.reads,
            writes: confinement.filesystem,
            network: confinement.network,
            landlock_abi: confinement.landlock_abi,
            seccomp: confinement.seccomp,
            programs_contained: confinement.programs_contained,
        }
    }
}

/// The sandbox policy a plugin process of `check` ran under, as the options and defaults
/// make it (`TMPDIR` stands for the session's private temporary directory).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyReport {
    /// The variables of the host's environment it gets (names, or prefixes with `*`).
    pub environment: Vec<String>,
    /// Where it may read.
    pub reads: Vec<String>,
    /// Where it may write.
    pub writes: Vec<String>,
    /// `denied` under `--deny-network`, `allowed` otherwise.
    pub network: &'static str,
    /// The git repository `--cwd` is in, when it is in one (and the process is confined).
    pub repository: Option<RepositoryReport>,
}

/// What a plugin process of `check` may do with the repository its working directory is in
/// (docs/guide/src/isolation.md): read its git directory and workspace files above the working
/// directory, not write them unless `--allow-write` grants them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryReport {
    /// The top of its working tree.
    pub root: String,
    /// Where the process may list names (not read files): the top, when above the working
    /// directory.
    pub listable: Option<String>,
    /// What of it above the working directory the process may read and not write.
    pub read_only: Vec<String>,
    /// What of it above the working directory the process may write too (`--allow-write`).
    pub writable: Vec<String>,
    /// The `--allow-write` paths that would make the read-only part writable.
    pub grant: Vec<String>,
    /// Why none of it is readable (its top is the home directory or above it), if so.
    pub withheld: Option<String>,
}

impl From<&LoadedPlugin> for ListedPlugin {
    fn from(plugin: &LoadedPlugin) -> Self {
        let api_version = plugin.api_version.to_string();
        ListedPlugin {
            path: plugin.path.display().to_string(),
            capabilities: xcsh_plugin_api::capabilities_of(&api_version),
            api_version,
            isolation: plugin.isolation.as_str(),
            sandbox: xcsh_loader::messages::sandbox_summary(plugin.sandbox.as_ref()),
            confinement: plugin.sandbox.as_ref().map(Enforced::from),
        }
    }
}

/// A tool's behaviour hints as `list --json` and `check --json` report them (each `null` when
/// the tool gives none; always, for a plugin built before xcsh-plugin-api 0.3).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

impl From<&ToolHints> for Annotations {
    fn from(hints: &ToolHints) -> Self {
        Annotations {
            read_only: hints.read_only,
            destructive: hints.destructive,
            idempotent: hints.idempotent,
            open_world: hints.open_world,
        }
    }
}

/// One tool in `list`.
#[derive(Debug, Serialize)]
pub struct ListedTool {
    pub name: String,
    pub label: String,
    pub description: String,
    /// `builtin`, or the plugin file's path.
    pub origin: String,
    pub hidden: bool,
    pub deferrable: bool,
    /// Where its code runs: `process` or `in-process` (built-ins run in the host).
    pub isolation: &'static str,
    pub annotations: Annotations,
    pub parameters: serde_json::Value,
}

impl ListedTool {
    /// `spec`'s entry, with the isolation mode of its plugin among `plugins`.
    pub fn new(spec: &ToolSpec, plugins: &[LoadedPlugin]) -> Self {
        let isolation = match &spec.origin {
            ToolOrigin::Plugin(path) => plugins
                .iter()
                .find(|p| &p.path == path)
                .map_or("in-process", |p| p.isolation.as_str()),
            ToolOrigin::Builtin => "in-process",
        };
        ListedTool {
            isolation,
            name: spec.name.clone(),
            label: spec.label.clone(),
            description: spec.description.clone(),
            origin: spec.origin.to_string(),
            hidden: spec.hidden,
            deferrable: spec.deferrable,
            annotations: Annotations::from(&spec.hints),
            parameters: spec.parameters.clone(),
        }
    }
}

/// `describe`: one tool, whole, and the session's load errors (shown as warnings).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeReport {
    pub tool: ListedTool,
    pub load_errors: Vec<String>,
}

impl Report for DescribeReport {
    fn failed(&self) -> bool {
        false
    }
}

/// One load error: the file, and the cause without the path.
#[derive(Debug, Serialize)]
pub struct LoadProblem {
    pub path: String,
    pub message: String,
    /// The whole error as one sentence (what the text form prints).
    #[serde(skip)]
    pub sentence: String,
    /// Set when the file was skipped only because it is not trusted.
    #[serde(skip)]
    pub untrusted: Option<UntrustedPlugin>,
}

impl From<&LoadError> for LoadProblem {
    fn from(error: &LoadError) -> Self {
        LoadProblem {
            path: error.path().display().to_string(),
            message: error.cause(),
            sentence: error.to_string(),
            untrusted: UntrustedPlugin::from_error(error),
        }
    }
}

/// A project plugin that was not loaded because it is not trusted (or changed since).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UntrustedPlugin {
    pub path: String,
    /// Whether it was trusted with other content.
    pub changed: bool,
    /// The command that trusts it as it is now.
    pub trust_command: String,
}

impl UntrustedPlugin {
    /// The untrusted plugin `error` is about, if that is what it is about.
    pub fn from_error(error: &LoadError) -> Option<Self> {
        match &error.kind {
            LoadErrorKind::Untrusted { changed } => Some(UntrustedPlugin {
                path: error.path.display().to_string(),
                changed: *changed,
                trust_command: trust_command(&error.path),
            }),
            _ => None,
        }
    }
}

impl Report for ListReport {
    fn failed(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// `check`: one entry per file, each loaded alone.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub host_api_version: String,
    pub oldest_supported_api_version: String,
    pub files: Vec<FileCheck>,
}

/// What `check` found in one file.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCheck {
    /// The file as given on the command line.
    pub path: String,
    pub ok: bool,
    /// The `xcsh-plugin-api` version the plugin was built against, once it loaded.
    pub api_version: Option<String>,
    /// What a plugin of that version can do (see `plugin-api/ABI.md`).
    pub capabilities: Option<Vec<&'static str>>,
    /// Where its code ran: `process` or `in-process`, once it loaded.
    pub isolation: Option<String>,
    /// What its process's sandbox enforced, once it loaded (see [`ListedPlugin::sandbox`]).
    pub sandbox: Option<String>,
    /// The same, part by part (see [`ListedPlugin::confinement`]).
    pub confinement: Option<Enforced>,
    /// What its process was allowed, under process isolation.
    pub policy: Option<PolicyReport>,
    /// In a multi-platform plugin folder: the platform subfolder (target triple) it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Another platform's library of a plugin folder, checked by its headers only (never
    /// loaded here): what it was built for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub built_for: Option<String>,
    pub tools: Vec<CheckedTool>,
    pub problems: Vec<String>,
}

/// One tool of a checked file.
#[derive(Debug, Serialize)]
pub struct CheckedTool {
    pub name: String,
    pub label: String,
    pub hidden: bool,
    pub deferrable: bool,
    pub annotations: Annotations,
}

impl Report for CheckReport {
    fn failed(&self) -> bool {
        self.files.iter().any(|file| !file.ok)
    }
}

/// `call`: the tool's outcome, what it left pending, and how each pending action was resolved.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallReport {
    pub tool: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Labels of the pending actions the call left, newest first.
    pub pending: Vec<String>,
    /// The same actions, newest first, each `{label, sourceToolName, details}` (`details`
    /// left out when the action has none): what a script needs to judge an action before
    /// (or instead of) deciding, in the shape MCP's `xcsh/pendingDetails` has.
    pub pending_details: Vec<PendingSummary>,
    pub resolutions: Vec<Resolution>,
    pub load_errors: Vec<String>,
}

impl Report for CallReport {
    fn failed(&self) -> bool {
        self.outcome.0.is_error || self.resolutions.iter().any(|r| r.outcome.0.is_error)
    }
}

/// How one pending action was resolved: the decision, the reason given with it (the text
/// output shows it through `resolve`'s result), and `resolve`'s outcome.
#[derive(Debug, Serialize)]
pub struct Resolution {
    /// The action's label.
    pub label: String,
    /// `apply` or `discard`.
    pub action: &'static str,
    pub reason: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The load problems of a session about to run a call (shown first, as warnings).
#[derive(Debug)]
pub struct LoadWarnings(pub Vec<String>);

/// The first part of a call's report, shown before anything pending is resolved.
#[derive(Debug)]
pub struct CallPreview<'a> {
    pub outcome: &'a Outcome,
    pub pending: &'a [String],
    /// What to do about an error that reads like a path the sandbox refused.
    pub hint: Option<String>,
}

/// A tool's outcome, serialised as `{"isError", "result": {content, details, view}}`.
#[derive(Debug, Clone)]
pub struct Outcome(pub ToolOutcome);

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut state = serializer.serialize_struct("Outcome", 2)?;
        state.serialize_field("isError", &self.0.is_error)?;
        state.serialize_field("result", &self.0.result)?;
        state.end()
    }
}

/// `trust`: the files recorded, and the paths that could not be trusted.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustReport {
    pub trust_file: String,
    pub trusted: Vec<TrustedFile>,
    pub errors: Vec<PathProblem>,
}

/// A file `trust` recorded, with the SHA-256 of its content.
#[derive(Debug, Serialize)]
pub struct TrustedFile {
    pub path: String,
    pub sha256: String,
}

/// A path a command could not handle, and why (the message names the path).
#[derive(Debug, Serialize)]
pub struct PathProblem {
    pub path: String,
    pub message: String,
}

impl Report for TrustReport {
    fn failed(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// `untrust`: the entries removed, and the paths that had none.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UntrustReport {
    pub trust_file: String,
    pub untrusted: Vec<String>,
    pub not_trusted: Vec<String>,
}

impl Report for UntrustReport {
    fn failed(&self) -> bool {
        false
    }
}

/// A command that stopped without a report ([`crate::error::CliError`]), as `--json` shows it.
#[derive(Debug, Serialize)]
pub struct ErrorReport {
    pub errors: Vec<ErrorMessage>,
}

/// One message of an [`ErrorReport`].
#[derive(Debug, Serialize)]
pub struct ErrorMessage {
    pub message: String,
}

impl Report for ErrorReport {
    fn failed(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use xcsh_loader::AgentToolResult;

    #[test]
    fn a_call_report_has_the_documented_keys() {
        let report = CallReport {
            tool: "t".to_owned(),
            outcome: Outcome(ToolOutcome::success(AgentToolResult::text("done"))),
            pending: vec!["Batch rename: 1 file".to_owned()],
            pending_details: vec![PendingSummary {
                label: "Batch rename: 1 file".to_owned(),
                source_tool_name: "batch_rename_preview".to_owned(),
                details: Some(json!({"renames": [["a", "b"]]})),
            }],
            resolutions: vec![Resolution {
                label: "Batch rename: 1 file".to_owned(),
                action: "apply",
                reason: "ok".to_owned(),
                outcome: Outcome(ToolOutcome::error("failed")),
            }],
            load_errors: Vec::new(),
        };
        let doc = serde_json::to_value(&report).unwrap_or_default();
        assert_eq!(doc["tool"], "t");
        assert_eq!(doc["isError"], false);
        assert_eq!(doc["result"]["content"][0]["text"], "done");
        assert_eq!(doc["pending"], json!(["Batch rename: 1 file"]));
        assert_eq!(
            doc["pendingDetails"],
            json!([{"label": "Batch rename: 1 file", "sourceToolName": "batch_rename_preview",
                    "details": {"renames": [["a", "b"]]}}])
        );
        assert_eq!(doc["resolutions"][0]["isError"], true);
        assert_eq!(doc["resolutions"][0]["action"], "apply");
        assert_eq!(doc["resolutions"][0]["reason"], "ok");
        assert_eq!(doc["loadErrors"], json!([]));
        assert!(report.failed(), "a failed resolution fails the call");
    }

    #[test]
    fn text_only_fields_stay_out_of_the_json() {
        let error = LoadError::new(
            "/p/.xcsh/tools/liba.so",
            LoadErrorKind::Untrusted { changed: true },
        );
        let doc = serde_json::to_value(LoadProblem::from(&error)).unwrap_or_default();
        let keys: Vec<&String> = doc
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["message", "path"]);
        let plugin = serde_json::to_value(UntrustedPlugin::from_error(&error)).unwrap_or_default();
        assert_eq!(plugin["changed"], true);
        assert!(plugin["trustCommand"]
            .as_str()
            .is_some_and(|c| c.contains("trust")));
    }
}

//! Every exact string of the behaviour contract that this crate produces, in one place.
//!
//! Models, tests and other runtimes match these texts literally (the guide's pages,
//! `docs/guide/src/`, quote them), so they are defined once here and every other module uses these constants or
//! functions instead of spelling them again. Changing one is a breaking change.

use std::path::Path;

use crate::sys::sandbox::{Confinement, Enforcement};

/// What `push_pending_action` answers in a runtime without a pending-action store, and
/// `resolve`'s error when nothing is pending. Both are defined by the plugin API, which plugins
/// and its test harness share with every host.
pub use xcsh_plugin_api::{NO_PENDING_ACTION, STORE_UNAVAILABLE};

/// What a tool of a plugin answers when the plugin's file changed and its new content cannot
/// be used (`error`, a load error, names the file and the cause).
pub fn reload_failed(error: &impl std::fmt::Display) -> String {
    format!(
        "{error}\nThe plugin file changed while the session ran and its new content cannot be \
         used, so its tools are unavailable until the file is fixed (the version loaded before \
         is not run in its place)"
    )
}

/// The name of the hidden tool that applies or discards pending actions.
pub const RESOLVE_TOOL_NAME: &str = "resolve";

/// The label of `resolve`.
pub const RESOLVE_TOOL_LABEL: &str = "Resolve";

/// The hidden steering message queued for the model on every push.
pub const RESOLVE_REMINDER: &str = "<system-reminder>\nThis is a preview. Call the `resolve` tool to apply or discard these changes.\n</system-reminder>";

/// The tag of [`RESOLVE_REMINDER`] messages.
pub const RESOLVE_REMINDER_TAG: &str = "resolve-reminder";

/// The reason every still-pending action's `reject` gets when its session ends.
pub const SESSION_ENDED: &str = "Session ended before this action was resolved.";

/// The reason `xcsh-plugins call` gives `resolve` (and so an action's `reject`) when it
/// discards what is pending without a decision: no `--apply` or `--discard`, and no one to ask
/// (`--no-input`, or no terminal). `--reason` replaces it.
pub const NO_DECISION_REASON: &str = "no decision given (non-interactive); nothing applied";

/// The reason `xcsh-plugins call` gives when the input closes while it asks apply/discard.
pub const INPUT_CLOSED_REASON: &str = "input closed; nothing applied";

/// The reason `xcsh-plugins call --discard` gives `resolve` (and so an action's `reject`)
/// without `--reason`: a discard always says why, and where the decision came from.
pub const DISCARD_FLAG_REASON: &str = "discarded with --discard";

/// `resolve`'s text after an `apply` whose result had no text.
pub fn applied(label: &str) -> String {
    format!("Applied: {label}.")
}

/// `resolve`'s text after a discard without a `reject` result.
pub fn discarded(label: &str, reason: &str) -> String {
    format!("Discarded: {label}. Reason: {reason}")
}

/// Applying again an action whose apply failed and cannot run again (a runtime that keeps a
/// failed preview pending, such as xcsh's TypeScript runtime, may ask).
pub fn cannot_apply_again(label: &str, first_failure: &str) -> String {
    format!(
        "Pending action \"{label}\" was not applied: its apply failed ({first_failure}) and \
         its plugin does not retry it. Discard it, then preview the change again."
    )
}

/// The load error of a tool whose name is already taken (the later tool is skipped).
pub fn name_conflict(name: &str) -> String {
    format!("Tool name \"{name}\" conflicts with existing tool")
}

/// The refusal of a plugin built against an `xcsh-plugin-api` version this host does not
/// support.
pub fn incompatible_api(path: &Path, plugin: &str, oldest: &str, host: &str) -> String {
    format!(
        "refusing to load {}: {}",
        path.display(),
        incompatible_api_cause(plugin, oldest, host)
    )
}

/// [`incompatible_api`] without the leading `refusing to load {path}: `.
pub fn incompatible_api_cause(plugin: &str, oldest: &str, host: &str) -> String {
    format!("built against xcsh-plugin-api {plugin}, this host supports {oldest} to {host}")
}

/// A tool name nobody registered: `Tool "{name}" not found`, followed by the closest known
/// names when there are any (`; did you mean "my_tool"?`; see [`closest_names`]).
pub fn tool_not_found(name: &str, closest: &[&str]) -> String {
    match did_you_mean(closest) {
        Some(suggestion) => format!("Tool \"{name}\" not found; {suggestion}"),
        None => format!("Tool \"{name}\" not found"),
    }
}

/// `did you mean "a" or "b"?` for the [`closest_names`] found, `None` when there are none.
pub fn did_you_mean(closest: &[&str]) -> Option<String> {
    if closest.is_empty() {
        return None;
    }
    let quoted: Vec<String> = closest.iter().map(|n| format!("\"{n}\"")).collect();
    Some(format!("did you mean {}?", quoted.join(" or ")))
}

/// The names among `known` that look like `name`, most alike first, at most three: a name
/// within a few typos (normalised Damerau-Levenshtein similarity of 0.7 or more: `my_tol`,
/// `batch_rename_preveiw`), one that differs only in case, or one that starts with what was
/// typed (`batch_rename` for `batch_rename_preview`). Not clap's Jaro measure: tool names
/// share long suffixes (`_preview`), which Jaro rates as alike.
pub fn closest_names<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = known
        .into_iter()
        .filter(|candidate| *candidate != name)
        .filter_map(|candidate| {
            let score = if candidate.eq_ignore_ascii_case(name) {
                1.0
            } else {
                strsim::normalized_damerau_levenshtein(name, candidate)
            };
            let prefix = name.len() >= 3 && candidate.starts_with(name);
            (score >= 0.7 || prefix).then_some((score, candidate))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Appended to a timeout or cancellation of an in-process plugin call whose code did not
/// return within the grace period: it may still be running on a thread of its own.
pub const CALL_ABANDONED: &str = "the call was abandoned";

/// Appended to a timeout or cancellation of an isolated plugin call whose process had to be
/// killed after the grace period.
pub const PLUGIN_PROCESS_STOPPED: &str = "its plugin process was stopped";

/// Why a plugin process's apply failed when the host gave up on it (a cancelled or timed-out
/// `resolve`): its future was dropped, so a commit of staged file changes was undone. The
/// action stays, as after a failed apply; the host's own message says what `resolve` did.
pub const APPLY_CANCELLED: &str =
    "the apply was cancelled before it completed; nothing was changed";

/// Why a plugin process's reject failed when the host gave up on it.
pub const REJECT_CANCELLED: &str = "the reject was cancelled before it completed";

/// A tool error: the session registered `name` from the in-process definitions cache, and the
/// plugin's factory, run at its first call, no longer defines it.
pub fn tool_no_longer_defined(name: &str, path: &Path) -> String {
    format!(
        "Tool \"{name}\" is no longer defined by plugin {}: its factory defines other tools \
         than the cached definitions this session listed (a new session lists its tools as \
         they are now)",
        path.display()
    )
}

/// A tool error: the session registered `name` from the definitions cache, and the plugin's
/// process, once started, no longer offers it.
pub fn tool_withdrawn(name: &str, path: &Path) -> String {
    format!(
        "Tool \"{name}\" is no longer offered by plugin {}: its process reports other tools \
         than the session had registered (the session's tool list was updated)",
        path.display()
    )
}

/// A tool error: the plugin's process ended while it ran `tool`; `cause` is
/// `killed by SIGSEGV`, `exited with status 7`, ...
pub fn plugin_crashed(path: &Path, tool: &str, cause: &str) -> String {
    format!(
        "Plugin {} crashed while running tool \"{tool}\": its process {cause}",
        path.display()
    )
}

/// A tool error: the plugin's process could not allocate under its memory limit (`limit`
/// bytes of address space) while it ran `tool`.
pub fn plugin_out_of_memory(path: &Path, tool: &str, limit: u64) -> String {
    format!(
        "Plugin {} ran out of its memory limit ({}) while running tool \"{tool}\"",
        path.display(),
        crate::sys::sandbox::format_size(limit)
    )
}

/// How `list` and `check` describe a plugin's sandbox:
/// `landlock v6, reads confined, writes confined, environment filtered`, then under
/// `--deny-network` `, network denied` (every socket but a Unix stream pair refused),
/// `, network partly denied (TCP only)` (Landlock without seccomp) or
/// `, network not enforced`; `unavailable, environment filtered` without Landlock;
/// `None` (in-process, or a child without a sandbox) is [`NO_SANDBOX`].
pub fn sandbox_summary(confinement: Option<&Confinement>) -> String {
    let Some(confinement) = confinement else {
        return NO_SANDBOX.to_owned();
    };
    let mut parts = Vec::new();
    match confinement.filesystem {
        Enforcement::Full | Enforcement::Partial => {
            parts.push(format!("landlock v{}", confinement.landlock_abi));
            parts.push(
                match confinement.reads {
                    Enforcement::Full | Enforcement::Partial => "reads confined",
                    Enforcement::None | Enforcement::NotRequested => "reads not confined",
                }
                .to_owned(),
            );
            parts.push(
                if confinement.filesystem == Enforcement::Full {
                    "writes confined"
                } else {
                    "writes partly confined"
                }
                .to_owned(),
            );
        }
        Enforcement::None | Enforcement::NotRequested => parts.push(SANDBOX_UNAVAILABLE.to_owned()),
    }
    parts.push(
        match confinement.environment {
            Enforcement::Full | Enforcement::Partial => "environment filtered",
            Enforcement::None | Enforcement::NotRequested => "environment not filtered",
        }
        .to_owned(),
    );
    match confinement.network {
        Enforcement::Full => parts.push("network denied".to_owned()),
        Enforcement::Partial => parts.push("network partly denied (TCP only)".to_owned()),
        Enforcement::None => parts.push("network not enforced".to_owned()),
        Enforcement::NotRequested => {}
    }
    if !confinement.programs_contained {
        // No PID namespace (see `xcsh_loader_process`'s `contain`): only what stays in its process group ends
        // with the plugin process.
        parts.push("programs may outlive it".to_owned());
    }
    parts.join(", ")
}

/// The hint after a load or call that failed on a refused read or write (`Permission
/// denied`): plugin processes read only the system's directories, the working directory,
/// the plugin's own directory and their temporary directory.
pub const REFUSED_ACCESS_HINT: &str = "plugin processes may read only the system's \
     directories, the working directory, the plugin's own directory and their TMPDIR, and \
     write only the last three: if the refused path is one the plugin needs, add \
     `--allow-read PATH` (or `--allow-write PATH` to write there)";

/// What a host says when a plugin's program was refused a write in the enclosing repository
/// (defined beside the repository's policy, which words it).
pub use crate::sys::repository::read_only_in_sandbox;

/// [`REFUSED_ACCESS_HINT`]'s addition under `--deny-network`, where a refused socket reads the
/// same.
pub const REFUSED_SOCKET_HINT: &str =
    "; under --deny-network every socket but a Unix stream pair is refused too";

/// Whether a load or call error reads like the sandbox refused a path (`EACCES`).
pub fn is_refused_access(message: &str) -> bool {
    // `os error 13)`, not `os error 1359)` (a Windows code that starts the same).
    message.contains("Permission denied") || message.contains("os error 13)")
}

/// [`sandbox_summary`] where the kernel has no usable Landlock.
pub const SANDBOX_UNAVAILABLE: &str = "unavailable";

/// [`sandbox_summary`] of a plugin that runs in the host's process.
pub const NO_SANDBOX: &str = "none (in-process)";

/// The warning when a plugin process runs without a sandbox.
pub fn sandbox_unavailable_warning(path: &Path) -> String {
    format!(
        "plugin {} runs without a sandbox: {NO_SANDBOX_HERE}, so its reads and writes are not confined",
        path.display()
    )
}

/// Why plugin processes have no sandbox here: on Linux the kernel lacks Landlock; elsewhere
/// there is none for them yet (Landlock and seccomp are Linux's).
#[cfg(target_os = "linux")]
pub const NO_SANDBOX_HERE: &str = "this kernel has no usable Landlock";
/// Why plugin processes have no sandbox here: on Linux the kernel lacks Landlock; elsewhere
/// there is none for them yet (Landlock and seccomp are Linux's).
#[cfg(not(target_os = "linux"))]
pub const NO_SANDBOX_HERE: &str = "plugin processes have no sandbox on this platform";

/// Why a plugin is refused under `--require-sandbox` when its process cannot be sandboxed
/// (`LoadErrorKind::SandboxRequired`; the load error reads `refusing to run {path}: ...`).
#[cfg(target_os = "linux")]
pub const SANDBOX_REQUIRED_NO_LANDLOCK: &str =
    "a sandbox is required (--require-sandbox) and this kernel has no usable Landlock";
/// Why a plugin is refused under `--require-sandbox` when its process cannot be sandboxed
/// (`LoadErrorKind::SandboxRequired`; the load error reads `refusing to run {path}: ...`).
#[cfg(not(target_os = "linux"))]
pub const SANDBOX_REQUIRED_NO_LANDLOCK: &str =
    "a sandbox is required (--require-sandbox) and plugin processes have no sandbox on this platform";

/// Why a plugin is refused under `--require-sandbox` in in-process mode, which has no
/// sandbox.
pub const SANDBOX_REQUIRED_IN_PROCESS: &str =
    "a sandbox is required (--require-sandbox) and in-process plugins have none";

/// Appended to the crash that disables a plugin, and the error of every later call.
pub fn plugin_disabled(path: &Path) -> String {
    format!(
        "Plugin {} crashed 3 times within a minute and is disabled for this session",
        path.display()
    )
}

/// `apply`/`reject` of an isolated plugin's action whose process is gone.
pub fn action_orphaned(label: &str, path: &Path, cause: &str) -> String {
    format!(
        "The process of plugin {} that previewed \"{label}\" is gone ({cause}); nothing was applied",
        path.display()
    )
}

/// `apply` of an isolated plugin's action whose process ended while running it; `recovered`:
/// what recovery then did with the interrupted commits in the working directory, `left`:
/// whether a journal is still there (another commit running kept recovery out).
pub fn apply_cut_short(
    label: &str,
    path: &Path,
    cause: &str,
    recovered: &[xcsh_plugin_api::files::Recovered],
    left: bool,
) -> String {
    let what = if !recovered.is_empty() {
        let told: Vec<String> = recovered.iter().map(ToString::to_string).collect();
        told.join("; ")
    } else if left {
        "an apply it left interrupted is finished or undone by the next session in this \
         directory"
            .to_owned()
    } else {
        "it left no interrupted apply: nothing was applied".to_owned()
    };
    format!(
        "The process of plugin {} ended ({cause}) while applying \"{label}\"; {what}",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formatted_strings_read_as_the_contract_says() {
        assert_eq!(
            applied("Batch rename: 2 files"),
            "Applied: Batch rename: 2 files."
        );
        assert_eq!(
            discarded("AST Edit: 1 replacement in 1 file", "not now"),
            "Discarded: AST Edit: 1 replacement in 1 file. Reason: not now"
        );
        assert_eq!(
            name_conflict("greet"),
            "Tool name \"greet\" conflicts with existing tool"
        );
        assert_eq!(
            incompatible_api(Path::new("/p/libx.so"), "0.4.0", "0.2.0", "0.3.0"),
            "refusing to load /p/libx.so: built against xcsh-plugin-api 0.4.0, this host supports 0.2.0 to 0.3.0"
        );
        assert_eq!(
            plugin_out_of_memory(Path::new("/p/libx.so"), "bomb", 512 << 20),
            "Plugin /p/libx.so ran out of its memory limit (512M) while running tool \"bomb\""
        );
        let mut confined = Confinement {
            filesystem: Enforcement::Full,
            reads: Enforcement::Full,
            environment: Enforcement::Full,
            network: Enforcement::NotRequested,
            landlock_abi: 6,
            seccomp: false,
            programs_contained: true,
        };
        assert_eq!(
            sandbox_summary(Some(&confined)),
            "landlock v6, reads confined, writes confined, environment filtered"
        );
        confined.network = Enforcement::Full;
        assert!(sandbox_summary(Some(&confined)).ends_with(", network denied"));
        confined.network = Enforcement::Partial;
        assert!(sandbox_summary(Some(&confined)).ends_with(", network partly denied (TCP only)"));
        confined.filesystem = Enforcement::None;
        confined.network = Enforcement::None;
        assert_eq!(
            sandbox_summary(Some(&confined)),
            "unavailable, environment filtered, network not enforced"
        );
        assert_eq!(sandbox_summary(None), "none (in-process)");
    }

    #[test]
    fn an_unknown_tool_gets_the_closest_names() {
        let known = ["my_tool", "resolve", "ast_edit", "batch_rename_preview"];
        assert_eq!(
            tool_not_found("my_tol", &closest_names("my_tol", known)),
            "Tool \"my_tol\" not found; did you mean \"my_tool\"?"
        );
        assert_eq!(
            tool_not_found("AST_EDIT", &closest_names("AST_EDIT", known)),
            "Tool \"AST_EDIT\" not found; did you mean \"ast_edit\"?"
        );
        assert_eq!(
            tool_not_found("zzz", &closest_names("zzz", known)),
            "Tool \"zzz\" not found"
        );
        assert_eq!(
            closest_names("batch_rename", known),
            ["batch_rename_preview"]
        );
        assert_eq!(
            closest_names("batch_rename_preveiw", known),
            ["batch_rename_preview"]
        );
        assert!(closest_names("batch_rename_preview", ["stack_preview"]).is_empty());
    }
}

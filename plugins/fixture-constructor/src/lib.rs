//! Test fixture: code that runs when the library is loaded, before any xcsh call.
//!
//! The dynamic loader runs a library's constructors inside `dlopen`. This one appends a line
//! to the file named by `XCSH_FIXTURE_MARKER` (when set), so a test can tell whether the
//! library was ever loaded: an untrusted project-local plugin must leave no marker. Its
//! factory marks the file too. The tool `constructor_probe` reports whether the constructor
//! ran in this process.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, CustomTool, CustomToolApi, PluginError, ToolContext,
    Value,
};

static CONSTRUCTED: AtomicBool = AtomicBool::new(false);

/// Append `what ran in process PID` to the marker file, when one is named.
fn mark(what: &str) {
    if let Some(marker) = std::env::var_os("XCSH_FIXTURE_MARKER") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(marker)
        {
            let _ = writeln!(file, "{what} ran in process {}", host_pid());
        }
    }
}

extern "C" fn on_load() {
    CONSTRUCTED.store(true, Ordering::SeqCst);
    mark("constructor");
}

// SAFETY: the dynamic loader calls each pointer in this section once, with no arguments, when
// the library is loaded; `on_load` is an `extern "C" fn()` that takes none, returns nothing,
// never unwinds (it only touches an atomic and does fallible I/O whose errors it ignores),
// and needs nothing initialised beyond what the host process already set up.
#[cfg_attr(
    any(target_os = "linux", target_os = "android", target_os = "freebsd"),
    unsafe(link_section = ".init_array")
)]
#[cfg_attr(
    target_vendor = "apple",
    unsafe(link_section = "__DATA,__mod_init_func")
)]
#[used]
static ON_LOAD: extern "C" fn() = on_load;

struct Probe;

impl CustomTool for Probe {
    type Params = Value;
    fn name(&self) -> &str {
        "constructor_probe"
    }
    fn label(&self) -> &str {
        "Constructor Probe"
    }
    fn description(&self) -> &str {
        "Says whether the library's constructor ran"
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!(
            "constructed: {}",
            CONSTRUCTED.load(Ordering::SeqCst)
        )))
    }
}

/// Marks that it ran too, so a test can tell when a host ran the factory (in-process with
/// its definitions cached, only at the first call).
fn factory(_api: &CustomToolApi) -> Result<Probe, PluginError> {
    mark("factory");
    Ok(Probe)
}

export_plugin!(factory);

/// This process's id as the host sees it: a plugin process lives in a PID namespace of its
/// own, where `std::process::id()` is a small number; `/proc` (the host's) names it by the
/// host's number.
fn host_pid() -> u32 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse().ok())
        .unwrap_or_else(std::process::id)
}

//! Test fixture: a plugin as the next minor of `xcsh-plugin-api` would build it (0.9.0, newer
//! than any host in this workspace). It exports the version marker and an abi_stable root
//! module like a real plugin, and a library constructor that appends a line to the file named
//! by `XCSH_FIXTURE_MARKER`. The host must refuse it from the marker alone, before `dlopen`:
//! the constructor never runs and nothing of it is called.

#![allow(non_local_definitions)]

use std::io::Write;

use abi_stable::{
    declare_root_module_statics, export_root_module,
    library::RootModule,
    prefix_type::PrefixTypeTrait,
    sabi_types::VersionStrings,
    std_types::{RResult, RString},
    StableAbi,
};
use xcsh_plugin_api::ffi::{version_marker, VersionMarker};

/// The version this fixture claims to be built against.
pub const CLAIMED_API_VERSION: &str = "0.9.0";

/// The marker `export_plugin!` of xcsh-plugin-api 0.9.0 would write.
#[export_name = "xcsh_plugin_api_version"]
#[used]
pub static XCSH_PLUGIN_API_VERSION: VersionMarker = version_marker(CLAIMED_API_VERSION);

/// The root module of a hypothetical xcsh-plugin-api 0.9 (a layout no host here knows).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = FutureModuleRef)))]
pub struct FutureModule {
    /// Would crash an old host if it were ever called.
    #[sabi(last_prefix_field)]
    pub create_tools: extern "C" fn() -> RResult<u32, RString>,
}

impl RootModule for FutureModuleRef {
    declare_root_module_statics! {FutureModuleRef}
    const BASE_NAME: &'static str = "xcsh_plugin";
    const NAME: &'static str = "xcsh_plugin";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("0.9.0");
}

extern "C" fn create_tools() -> RResult<u32, RString> {
    RResult::RErr(RString::from(
        "the incompatible fixture must never be called",
    ))
}

/// Exported under abi_stable's root-module symbol, like a real plugin.
#[export_root_module]
pub fn root() -> FutureModuleRef {
    FutureModule { create_tools }.leak_into_prefix()
}

extern "C" fn on_load() {
    if let Some(marker) = std::env::var_os("XCSH_FIXTURE_MARKER") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(marker)
        {
            let _ = writeln!(file, "incompatible fixture constructor ran");
        }
    }
}

// SAFETY: the dynamic loader calls each pointer in this section once, with no arguments, when
// the library is loaded; `on_load` is an `extern "C" fn()` that takes none, returns nothing,
// never unwinds (it only does fallible I/O whose errors it ignores), and needs nothing
// initialised beyond what the host process already set up.
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

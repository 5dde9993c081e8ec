//! Test fixture: a library that passes every check made before loading (its version marker is
//! this workspace's `xcsh-plugin-api` version, its root module claims the ABI crate's own
//! version) but whose root module has a layout of its own. Only abi_stable's layout check can
//! refuse it, and it must, with or without the layout-check cache.

#![allow(non_local_definitions)]

use abi_stable::{
    declare_root_module_statics, export_root_module,
    library::RootModule,
    prefix_type::PrefixTypeTrait,
    sabi_types::VersionStrings,
    std_types::{RResult, RString},
    StableAbi,
};
use xcsh_plugin_api::ffi::{version_marker, VersionMarker};

/// The marker `export_plugin!` of this workspace's API writes.
#[export_name = "xcsh_plugin_api_version"]
#[used]
pub static XCSH_PLUGIN_API_VERSION: VersionMarker = version_marker(xcsh_plugin_api::API_VERSION);

/// A root module whose one field has another type than the real module's.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = WrongModuleRef)))]
pub struct WrongModule {
    /// Would crash the host if it were ever called as the real `create_tools`.
    #[sabi(last_prefix_field)]
    pub create_tools: extern "C" fn() -> RResult<u32, RString>,
}

impl RootModule for WrongModuleRef {
    declare_root_module_statics! {WrongModuleRef}
    const BASE_NAME: &'static str = "xcsh_plugin";
    const NAME: &'static str = "xcsh_plugin";
    // The ABI crate's version, so abi_stable's own version check passes.
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("1.2.0");
}

extern "C" fn create_tools() -> RResult<u32, RString> {
    RResult::RErr(RString::from("the bad-layout fixture must never be called"))
}

/// Exported under abi_stable's root-module symbol, like a real plugin.
#[export_root_module]
pub fn root() -> WrongModuleRef {
    WrongModule { create_tools }.leak_into_prefix()
}

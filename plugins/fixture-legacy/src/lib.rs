//! Test fixture: a library shaped like a plugin built against `xcsh-plugin-api` 0.1: it
//! exports an abi_stable root module under the usual symbol but no version marker. The host
//! must refuse it, naming the file, without loading it.

#![allow(non_local_definitions)]
#![deny(unsafe_code)]

use abi_stable::{
    declare_root_module_statics, export_root_module,
    library::RootModule,
    prefix_type::PrefixTypeTrait,
    sabi_types::VersionStrings,
    std_types::{RResult, RString},
    StableAbi,
};

/// The root module of a 0.1-era plugin (its real layout does not matter: it is never read).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = LegacyModuleRef)))]
pub struct LegacyModule {
    /// Would misbehave in a newer host if it were ever called.
    #[sabi(last_prefix_field)]
    pub create_tools: extern "C" fn() -> RResult<u32, RString>,
}

impl RootModule for LegacyModuleRef {
    declare_root_module_statics! {LegacyModuleRef}
    const BASE_NAME: &'static str = "xcsh_plugin";
    const NAME: &'static str = "xcsh_plugin";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("0.1.0");
}

extern "C" fn create_tools() -> RResult<u32, RString> {
    RResult::RErr(RString::from("the legacy fixture must never be called"))
}

/// Exported under abi_stable's root-module symbol, like a 0.1 plugin.
#[export_root_module]
pub fn root() -> LegacyModuleRef {
    LegacyModule { create_tools }.leak_into_prefix()
}

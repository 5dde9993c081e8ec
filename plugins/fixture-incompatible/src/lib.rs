//! Test fixture: a library that exports an xcsh root module built against a future,
//! incompatible `xcsh-plugin-api` (1.0.0). The host must refuse it without calling it.

#![allow(non_local_definitions)]

use abi_stable::{
    declare_root_module_statics, export_root_module,
    library::RootModule,
    prefix_type::PrefixTypeTrait,
    sabi_types::VersionStrings,
    std_types::{RResult, RString},
    StableAbi,
};

/// The root module of a hypothetical xcsh-plugin-api 1.0.
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
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("1.0.0");
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

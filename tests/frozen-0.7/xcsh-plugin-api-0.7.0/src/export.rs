//! The glue behind [`crate::export_plugin!`]: turns an author's factory function into the
//! library's root module and version marker. Hidden from the docs; only the macro uses it.

use abi_stable::library::{CheckTypeLayout, LibHeader, RootModuleResult};
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RString, RVec};

use crate::ffi::VersionMarker;
use crate::ffi::{version_marker, FfiToolDef, HostApiBox, PluginModule, PluginModuleRef};
use crate::guard::{catch, install_panic_hook};
use crate::{CustomToolApi, PluginError, ToolSet};

/// The version marker every plugin exports: this crate's version, as plain bytes.
pub const VERSION_MARKER: VersionMarker = version_marker(crate::API_VERSION);

/// Implemented by the zero-sized type [`crate::export_plugin!`] generates around the factory.
pub trait PluginFactory {
    /// Call the author's factory.
    fn create(api: &CustomToolApi) -> Result<ToolSet, PluginError>;
}

/// Accept any factory returning `Result<impl Into<ToolSet>, PluginError>`.
pub fn into_tool_set<T: Into<ToolSet>>(
    result: Result<T, PluginError>,
) -> Result<ToolSet, PluginError> {
    result.map(Into::into)
}

/// Build one tool of an `export_plugin!(tools: [..])` list (see [`crate::FromApi`]).
pub fn tool_from_api<T: crate::FromApi + crate::CustomTool>(
    api: &CustomToolApi,
) -> Result<T, PluginError> {
    T::from_api(api)
}

/// The header the exported static holds.
pub const fn lib_header<F: PluginFactory>() -> LibHeader {
    // SAFETY: `from_constructor` requires the constructor to return a prefix reference
    // transmuted from a `PrefixRef` of the same root module type `M` given here.
    // `erased_module::<F>` builds a `PluginModuleRef` and hands it to
    // `__call_root_module_loader`, which performs exactly that conversion for
    // `PluginModuleRef`, the `M` below.
    unsafe {
        LibHeader::from_constructor::<PluginModuleRef>(erased_module::<F>, CheckTypeLayout::Yes)
    }
}

extern "C" fn erased_module<F: PluginFactory>() -> RootModuleResult {
    abi_stable::library::__call_root_module_loader(module::<F>)
}

fn module<F: PluginFactory>() -> PluginModuleRef {
    PluginModule {
        create_tools: create_tools::<F>,
    }
    .leak_into_prefix()
}

extern "C" fn create_tools<F: PluginFactory>(
    host: HostApiBox,
) -> RResult<RVec<FfiToolDef>, RString> {
    create_tools_with(host, F::create, false)
}

/// The body of the root module's `create_tools`: run a factory behind the panic guard and
/// hand its tools over as FFI objects. `testing::PluginTest` calls it too, so a plugin under
/// test is built exactly as a host builds it (keeping the test binary's own panic output:
/// `keep_panic_output`).
pub(crate) fn create_tools_with(
    host: HostApiBox,
    factory: impl FnOnce(&CustomToolApi) -> Result<ToolSet, PluginError>,
    keep_panic_output: bool,
) -> RResult<RVec<FfiToolDef>, RString> {
    install_panic_hook(keep_panic_output);
    let created = catch(|| {
        let api = CustomToolApi::new(host);
        factory(&api).map(|tools| tools.into_defs(&api))
    });
    match created {
        Ok(defs) => RResult::ROk(defs.into()),
        Err(error) => RResult::RErr(error.message().into()),
    }
}

//! Test fixture: version 2 of `fixture-reload-v1`, the same source built with `VERSION = 2`:
//! its tools answer "v2", and it has one tool more (`reload_added`).

#![deny(unsafe_code)]

/// Which build of the plugin this is.
const VERSION: u32 = 2;

#[path = "../../fixture-reload-v1/src/plugin.rs"]
mod plugin;

xcsh_plugin_api::export_plugin!(plugin::factory);

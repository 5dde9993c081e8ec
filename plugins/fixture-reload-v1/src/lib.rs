//! Test fixture: version 1 of a plugin that tests rebuild while a session runs (the tools are
//! in `plugin.rs`, shared with `fixture-reload-v2`).

#![deny(unsafe_code)]

/// Which build of the plugin this is.
const VERSION: u32 = 1;

mod plugin;

xcsh_plugin_api::export_plugin!(plugin::factory);

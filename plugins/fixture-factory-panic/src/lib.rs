//! Test fixture: the factory panics; the host must report it and keep going.

#![deny(unsafe_code)]

use xcsh_plugin_api::{export_plugin, CustomToolApi, PluginError, ToolSet};

fn factory(_api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    panic!("factory exploded on purpose");
}

export_plugin!(factory);

//! Opening one plugin library by hand, outside a session: everything of the loading layer's
//! `open` (the [`CheckedFile`], the [`PluginLibrary`], the API versions, the [`Probe`] loading
//! takes, [`load_checked_with`]), and [`load_checked`] and [`load_library`], which put the
//! plugin-process layer's probe in front of the first in-process `dlopen`, as a session does.
//!
//! Loading itself starts no process; this module, above both layers, is where the two meet
//! (also as `xcsh_loader::load::open`).

use std::path::Path;

use crate::isolate::probe::ProcessProbe;
pub use crate::loading::open::*;
use crate::loading::LoadError;

/// Load the checked file (never the path's current content) and check the ABI and version,
/// after loading it once in a throwaway plugin process (a file that crashes there is a load
/// error, never mapped here). Loading runs the library's constructors, so only call this on
/// files you trust.
pub fn load_checked(file: &CheckedFile) -> Result<PluginLibrary, LoadError> {
    load_checked_with(file, Some(&ProcessProbe { host: None }))
}

/// Check, open and load the library at `path`: [`CheckedFile::read`], then [`load_checked`].
/// Loading runs the library's constructors, so only call this on files you trust.
pub fn load_library(path: &Path) -> Result<PluginLibrary, LoadError> {
    load_checked(&CheckedFile::read(path)?)
}

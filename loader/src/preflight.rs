//! Checks on a plugin file's bytes before it is handed to the dynamic loader.
//!
//! `dlopen` trusts the file's headers: a truncated library whose segments point past the end
//! of the file is mapped anyway, and the first access to the missing pages kills the process
//! with SIGBUS. So before loading, the file is parsed with the `object` crate and every
//! loadable segment and section must lie inside the file. Anything else is reported as "not a
//! loadable shared library" with the reason. The bytes checked are the bytes loaded (see
//! [`crate::library::load_checked`]).
//!
//! The same parse finds which `xcsh-plugin-api` the library was built against
//! ([`read_api_marker`]): `export_plugin!` exports the version as plain bytes under
//! [`VERSION_MARKER_SYMBOL`], so the host can refuse an incompatible plugin before `dlopen`
//! runs any of its code.

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use xcsh_plugin_api::ffi::{
    parse_version_marker, ROOT_MODULE_SYMBOL, VERSION_MARKER_LEN, VERSION_MARKER_SYMBOL,
};

/// What the file says about the `xcsh-plugin-api` it was built against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiMarker {
    /// The version text of its marker (not yet checked against the host's policy).
    Version(String),
    /// An abi_stable root module but no marker: built against xcsh-plugin-api 0.1, or by
    /// hand.
    Unmarked,
    /// Neither a marker nor a root module: not an xcsh plugin.
    NoRootModule,
}

/// Read the version marker of a library whose headers [`check_library_bytes`] accepted.
/// Nothing is loaded or run.
pub fn read_api_marker(bytes: &[u8]) -> ApiMarker {
    let Ok(file) = object::File::parse(bytes) else {
        return ApiMarker::NoRootModule;
    };
    let named = |wanted: &str, name: &str| {
        // Mach-O prefixes C symbol names with an underscore.
        name == wanted || name.strip_prefix('_') == Some(wanted)
    };
    let mut has_root = false;
    for symbol in file.dynamic_symbols().chain(file.symbols()) {
        let Ok(name) = symbol.name() else { continue };
        if named(ROOT_MODULE_SYMBOL, name) && symbol.is_definition() {
            has_root = true;
        }
        if !named(VERSION_MARKER_SYMBOL, name) || !symbol.is_definition() {
            continue;
        }
        if let Some(version) = marker_bytes(&file, &symbol)
            .as_deref()
            .and_then(parse_version_marker)
        {
            return ApiMarker::Version(version.to_owned());
        }
    }
    if has_root {
        ApiMarker::Unmarked
    } else {
        ApiMarker::NoRootModule
    }
}

/// The bytes a data symbol points at, from the section that holds it in the file.
fn marker_bytes<'data>(
    file: &object::File<'data>,
    symbol: &object::Symbol<'data, '_>,
) -> Option<Vec<u8>> {
    let section = match symbol.section() {
        object::SymbolSection::Section(index) => file.section_by_index(index).ok()?,
        _ => return None,
    };
    let data = section
        .data_range(symbol.address(), VERSION_MARKER_LEN as u64)
        .ok()??;
    Some(data.to_vec())
}

/// Why a file cannot be a loadable library, or `Ok` when its headers are sound.
pub fn check_library_bytes(bytes: &[u8]) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("the file is empty".to_owned());
    }
    let file = object::File::parse(bytes)
        .map_err(|e| format!("not an object file this platform can load ({e})"))?;
    if file.kind() != object::ObjectKind::Dynamic {
        return Err(format!(
            "not a shared library (object kind {:?}); build the plugin with crate-type = [\"cdylib\"]",
            file.kind()
        ));
    }
    let len = bytes.len() as u64;
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(format!(
                "truncated: a segment spans bytes {offset}..{} but the file has {len} bytes",
                offset.saturating_add(size)
            ));
        }
    }
    for section in file.sections() {
        if let Some((offset, size)) = section.file_range() {
            if offset.checked_add(size).is_none_or(|end| end > len) {
                return Err(format!(
                    "truncated: section {} spans bytes {offset}..{} but the file has {len} bytes",
                    section.name().unwrap_or("?"),
                    offset.saturating_add(size)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junk_and_empty_files_are_refused() {
        assert_eq!(check_library_bytes(b"").unwrap_err(), "the file is empty");
        assert!(check_library_bytes(b"hello world")
            .unwrap_err()
            .contains("not an object file"));
    }

    #[test]
    fn the_running_test_binary_is_not_a_shared_library_or_is_sound() {
        // Test executables are PIE (kind Executable or Dynamic depending on the toolchain): the
        // check must not call a sound file truncated.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        if let Err(message) = check_library_bytes(&exe) {
            assert!(message.contains("not a shared library"), "{message}");
        }
        let truncated = &exe[..exe.len() / 2];
        let message = check_library_bytes(truncated).unwrap_err();
        assert!(
            message.contains("truncated")
                || message.contains("not an object file")
                || message.contains("not a shared library"),
            "{message}"
        );
    }
}

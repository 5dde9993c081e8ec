//! Checks on a plugin file's bytes before it is handed to the dynamic loader.
//!
//! `dlopen` trusts the file's headers: a truncated library whose segments point past the end
//! of the file is mapped anyway, and the first access to the missing pages kills the process
//! with SIGBUS. So before loading, the file is parsed with the `object` crate and every
//! loadable segment and section must lie inside the file. Anything else is reported as "not a
//! loadable shared library" with the reason. The file checked is the file loaded (see
//! [`crate::load::open`]); only the headers are read, not the whole file.

use object::{Object, ObjectSection, ObjectSegment, ReadRef};

/// Why a file cannot be a loadable library, or `Ok` when its headers are sound. `data` is
/// the file's bytes, or a reader that fetches only the ranges the parser asks for.
pub(crate) fn check_library<'data, R: ReadRef<'data>>(data: R) -> Result<(), String> {
    let len = data
        .len()
        .map_err(|()| "cannot read the file's size".to_owned())?;
    if len == 0 {
        return Err("the file is empty".to_owned());
    }
    let file = object::File::parse(data)
        .map_err(|e| format!("not an object file this platform can load ({e})"))?;
    if file.kind() != object::ObjectKind::Dynamic {
        return Err(format!(
            "not a shared library (object kind {:?}); build the plugin with crate-type = [\"cdylib\"]",
            file.kind()
        ));
    }
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
        assert_eq!(check_library(&b""[..]).unwrap_err(), "the file is empty");
        assert!(check_library(&b"hello world"[..])
            .unwrap_err()
            .contains("not an object file"));
    }

    #[test]
    fn the_running_test_binary_is_not_a_shared_library_or_is_sound() {
        // Test executables are PIE (kind Executable or Dynamic depending on the toolchain): the
        // check must not call a sound file truncated.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        if let Err(message) = check_library(exe.as_slice()) {
            assert!(message.contains("not a shared library"), "{message}");
        }
        let truncated = &exe[..exe.len() / 2];
        let message = check_library(truncated).unwrap_err();
        assert!(
            message.contains("truncated")
                || message.contains("not an object file")
                || message.contains("not a shared library"),
            "{message}"
        );
    }
}

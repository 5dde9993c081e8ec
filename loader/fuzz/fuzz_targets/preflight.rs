//! Any bytes given to the checks a plugin file goes through before it is loaded (what it was
//! built for, the ELF/Mach-O header and layout checks, the version marker, the build-id):
//! they must answer, never panic, hang or read out of bounds.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    xcsh_loader::fuzzing::check_file_bytes(bytes);
});

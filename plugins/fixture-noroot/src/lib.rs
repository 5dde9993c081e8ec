//! Test fixture: a valid shared library that is not an xcsh plugin.

/// Something to export, so the library is not empty.
#[no_mangle]
pub extern "C" fn fixture_noroot_answer() -> i32 {
    42
}

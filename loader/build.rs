//! Records the target triple the loader is built for (`XCSH_HOST_TARGET`): the subfolder a
//! multi-platform plugin folder holds this host's library in, and the target `check` tells an
//! author to build for. Cargo gives build scripts the exact triple; `cfg!` can only rebuild it
//! from parts.
//!
//! Also sets `cfg(plugin_processes)` where process isolation is built (Linux, macOS and Windows): one
//! name for "this platform runs plugins in child processes" instead of a list of systems
//! repeated at every use.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=XCSH_HOST_TARGET={target}");
    println!("cargo::rustc-check-cfg=cfg(plugin_processes)");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "macos" || os == "windows" {
        println!("cargo:rustc-cfg=plugin_processes");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

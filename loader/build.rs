//! Records the target triple the loader is built for (`XCSH_HOST_TARGET`): the subfolder a
//! multi-platform plugin folder holds this host's library in, and the target `check` tells an
//! author to build for. Cargo gives build scripts the exact triple; `cfg!` can only rebuild it
//! from parts.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=XCSH_HOST_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}

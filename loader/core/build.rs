//! Records the target triple the loader is built for (`XCSH_HOST_TARGET`): the subfolder a
//! multi-platform plugin folder holds this host's library in, and the target `check` tells an
//! author to build for. Cargo gives build scripts the exact triple; `cfg!` can only rebuild it
//! from parts.
//!
//! Also the one place the supported systems are named: Linux, macOS and Windows, where plugins
//! run in processes of their own, sandboxed, and the dynamic loader's checks are written for
//! the system's format. Elsewhere the build stops here with that said, instead of failing
//! later in a system call that does not exist there.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=XCSH_HOST_TARGET={target}");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !matches!(os.as_str(), "linux" | "macos" | "windows") {
        panic!(
            "xcsh-loader runs on Linux, macOS and Windows (plugin processes, their sandbox and \
             the library checks are written for those); {target} ({os}) is not supported"
        );
    }
    println!("cargo:rerun-if-changed=build.rs");
}

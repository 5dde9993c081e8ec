//! `xcsh-plugin-host`: the child process of process isolation. The loader starts one per
//! plugin library, with the checked library and a socket as inherited descriptors; see
//! `xcsh_loader::isolate`. Not meant to be run by hand. It ships in this package, beside
//! `xcsh-plugins`, so that one `cargo install` puts both where the CLI finds its plugin host.

#![deny(unsafe_code)]

fn main() -> std::process::ExitCode {
    xcsh_loader::isolate::child_main()
}

//! `xcsh-plugin-host`: the child process of process isolation. The loader starts one per
//! plugin library, with the checked library and a socket as inherited descriptors; see
//! `xcsh_loader::isolate`. Not meant to be run by hand.

#[cfg(plugin_processes)]
fn main() -> std::process::ExitCode {
    xcsh_loader::isolate::child_main()
}

#[cfg(not(plugin_processes))]
fn main() -> std::process::ExitCode {
    eprintln!("xcsh-plugin-host: process isolation is only available on Linux, macOS and Windows");
    std::process::ExitCode::from(2)
}

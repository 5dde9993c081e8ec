//! What runs inside a plugin process: the program `xcsh-plugin-host` is [`child_main`].
//!
//! The host (the crate `xcsh-loader-core`: its `isolate` and `sys::spawn`) starts one such
//! process per plugin library and talks to it over the framed protocol; this crate is the
//! other side: before anything of the plugin runs, the process puts itself in the sandbox the
//! host's policy names ([`sandbox`]: resource limits, Landlock, under `--deny-network` the
//! seccomp filter of [`network`]) and, on Linux, in a PID namespace that ends every program
//! it starts with it (`contain`); then it loads the library and serves the host's calls,
//! applies and rejects (`child`). It is a crate of its own so that an embedder of the session
//! alone builds none of it (no Landlock, no seccomp), and so that the compiler holds the line
//! between the two sides: this crate uses the core, never the other way round.
//!
//! | module | what it is for |
//! |---|---|
//! | `child` | the plugin process's main loop: load, report the tools, serve calls, pushes, host services |
//! | [`sandbox`] | confining this process as the policy says; the report of what the kernel enforced |
//! | [`network`] | the seccomp filter of `--deny-network` |
//! | `contain` | the PID namespace the plugin's programs end with (Linux) |
//!
//! `unsafe` is allowed in `contain` only (`fork`, `unshare`, `waitpid`: not in `rustix`).

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod child;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod contain;
pub mod network;
pub mod sandbox;

pub use child::child_main;

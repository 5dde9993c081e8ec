//! Finding and loading plugin libraries: discover → check → (trust) → open.
//!
//! - [`discovery`] lists candidate files, in the contract's order, deduplicated;
//!   [`plugin_folder`] picks this host's library out of a multi-platform plugin folder;
//! - `safety` checks a path and every directory above it (owner, mode, type, name) and opens
//!   the file once, so everything after works on the object that was checked;
//! - [`trust`] decides whether a project-local plugin may load (pinned by SHA-256);
//!   `publisher` checks a packed tool's signature against the publisher key pinned there;
//! - [`platform`] reads what the library was built for (OS, architecture, glibc) and refuses
//!   another platform's library before the dynamic loader sees it;
//! - `preflight` checks the library's headers before the dynamic loader sees them;
//! - [`open`] hands the checked object to the dynamic loader, checks the ABI and version,
//!   and caches the result for the process;
//! - `cache` keeps what is costly to learn about a plugin file again, private to the user;
//! - [`LoadError`] is the one error type of all of it, naming the file and the cause.
//!
//! Nothing here knows about sessions or tools: the output is a [`PluginLibrary`], whose
//! factory the session runs (see the `plugin_abi` module).

pub(crate) mod cache;
pub mod discovery;
mod error;
pub(crate) mod headers;
#[allow(unsafe_code)]
pub mod open;
pub mod platform;
pub mod plugin_folder;
pub(crate) mod preflight;
#[cfg(feature = "publisher-keys")]
pub mod publisher;
pub(crate) mod safety;
pub mod trust;

pub use error::{LoadError, LoadErrorKind};
pub(crate) use open::init_compiled_in_root_module;
pub use open::{
    host_api_version, load_checked_with, oldest_supported_api_version, CheckedFile, PluginLibrary,
    Probe,
};

//! The tool-definitions cache: what each isolated plugin reported at its last handshake (its
//! tools, the API version it loaded, what its sandbox enforced), kept in the user's private
//! cache (see `loading::cache`) so that a session over many plugins starts no process until one
//! of a plugin's tools is called.
//!
//! Why: a handshake costs a process start and a `dlopen` per plugin, at every session build;
//! `xcsh-plugins list` over 50 plugins paid that 50 times, and a session kept 50 idle processes
//! alive. The definitions only change when something they depend on changes, and all of that
//! is in the key:
//!
//! - the plugin file's identity (device, inode, size, modification and change times, link
//!   count) of the very object that was checked, so a rebuilt, replaced or rewritten file is
//!   a miss;
//! - the host's build ([`host_build`]; none, no cache) and the `xcsh-plugin-host` executable's
//!   identity;
//! - the session's working directory, whether it has a store, and its sandbox policy (its
//!   per-session temporary directory left out), with the running kernel's release (what the
//!   sandbox can enforce depends on it).
//!
//! An entry is only written after a successful handshake (entries not written for 30 days are
//! removed, see `loading::cache`, so those of files long rebuilt do not pile up), and a hit is never the last word:
//! the plugin's first child, started at its first call, reports its definitions again, and
//! those replace the cached ones in the session (and in the cache) when they differ.

use std::path::Path;

use crate::isolate::plugin::Definitions;
use crate::loading::cache::{host_build, PrivateCache};
use crate::loading::safety::FileStamp;
use crate::loading::CheckedFile;
use crate::sys::sandbox::SandboxPolicy;

/// The kind of the cache's entries (see [`PrivateCache::get`]).
const KIND: &str = "definitions";

/// The definitions cache of one session: the user's cache, and the part of the key that is
/// the same for each of the session's plugins.
#[derive(Debug, Clone)]
pub(super) struct DefinitionsCache {
    cache: PrivateCache,
    context: String,
}

impl DefinitionsCache {
    /// The cache for a session whose plugin processes run `plugin_host` in `cwd` under
    /// `sandbox` (without the session's temporary directory), with or without a store.
    /// `None` when nothing can be cached: the host's build or the plugin host cannot be
    /// identified, or no cache directory can be named.
    pub(super) fn for_session(
        plugin_host: &Path,
        cwd: &Path,
        sandbox: &SandboxPolicy,
        store: bool,
    ) -> Option<Self> {
        let build = host_build()?;
        let host = FileStamp::of_path(plugin_host)?;
        let cache = PrivateCache::for_user()?;
        let sandbox = serde_json::to_string(sandbox).ok()?;
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let context = format!(
            "xcsh tool definitions 1\nloader: {build}\nplugin host: {} {}\nkernel: {}\n\
             cwd: {}\nstore: {store}\nsandbox: {sandbox}",
            plugin_host.display(),
            host.key(),
            kernel.trim(),
            cwd.display(),
        );
        Some(Self { cache, context })
    }

    /// The key of `file`'s definitions in this session.
    pub(super) fn key(&self, file: &CheckedFile) -> String {
        format!(
            "{}\nplugin: {} {}",
            self.context,
            file.path().display(),
            file.stamp().key()
        )
    }

    /// The definitions cached under `key`, when there are believable ones.
    pub(super) fn get(&self, key: &str) -> Option<Definitions> {
        self.cache.get(KIND, key)
    }

    /// Remember what a handshake reported under `key`.
    pub(super) fn put(&self, key: &str, definitions: &Definitions) {
        self.cache.put(KIND, key, definitions);
    }
}
